// Every FieldKind from recorded bytes: the value the decoder makes of a field's bytes, and
// how the text and JSON sinks print it.
#include <sys/socket.h>

#include <gtest/gtest.h>

#include "engine/decoder.h"
#include "tests/engine/recorded.h"

namespace kq::engine::testing {
namespace {

using plan::FieldKind;

/// The start of probe `p`'s event line (03:04:05.678 on CPU 1 in curl, 4242), up to its
/// fields; and of its JSON object.
const std::string kLine = "03:04:05.678   1    4242 curl            p    ";
const std::string kJson =
    R"({"time":"03:04:05.678901","time_ns":1704164645678901234,"cpu":1,"pid":4242,)"
    R"("tid":4243,"comm":"curl","probe":"p",)";

struct Shown {
  Value value;       // of field `index`
  std::string text;  // the text sink's lines after its header
  std::string json;  // the JSON sink's line
};

/// The one event of probe `p`, whose record is `record`, laid out as `fields` say.
Shown show(FakeHost& host, std::vector<plan::FieldLayout> fields, const Bytes& record, size_t index = 0) {
  plan::ProgramPlan plan;
  plan::ProbeLayout probe;
  probe.name = "p";
  probe.size = static_cast<uint32_t>(record.data().size());
  probe.fields = std::move(fields);
  plan.layout.probes.push_back(probe);
  Shown shown;
  host.beginSession();
  RecordDecoder decoder(plan.layout, host.context());
  const DecodedEvent* event = decoder.decode(record.data().data(), record.data().size());
  if (event) shown.value = event->values.at(index);
  // Every prefix column, as the lines kq once printed: these tests are of the values.
  TextOptions all;
  all.prefix = {PrefixColumn::Time, PrefixColumn::Cpu, PrefixColumn::Pid, PrefixColumn::Comm, PrefixColumn::Probe};
  all.full_structs = true;  // every member, a line each
  std::string text = printEvents(plan, host, {record}, OutputFormat::Text, all).out;
  shown.text = text.substr(text.find('\n') + 1);
  shown.json = printEvents(plan, host, {record}, OutputFormat::Json).out;
  return shown;
}

std::vector<uint8_t> u8s(std::initializer_list<int> bytes) {
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

class FieldKinds : public ::testing::Test {
 protected:
  FakeHost host;
};

TEST_F(FieldKinds, SignedIsANumberWithItsSign) {
  Shown s = show(host, {field("v", FieldKind::Signed, 40)}, record(0, 48).u64(40, uint64_t(-42)));
  EXPECT_EQ(s.value.kind, ValueKind::Int);
  EXPECT_EQ(s.value.i, -42);
  EXPECT_EQ(s.text, kLine + "  -42\n");
  EXPECT_EQ(s.json, kJson + R"("v":-42})" "\n");
}

TEST_F(FieldKinds, UnsignedKeepsAllSixtyFourBits) {
  Shown s = show(host, {field("v", FieldKind::Unsigned, 40)}, record(0, 48).u64(40, ~uint64_t{0}));
  EXPECT_EQ(s.value.kind, ValueKind::Uint);
  EXPECT_EQ(s.value.u, ~uint64_t{0});
  EXPECT_EQ(s.text, kLine + "  18446744073709551615\n");
  EXPECT_EQ(s.json, kJson + R"("v":18446744073709551615})" "\n");
}

TEST_F(FieldKinds, HexIsTextInBothSinks) {
  Shown s = show(host, {field("v", FieldKind::Hex, 40)}, record(0, 48).u64(40, 0xbeef));
  EXPECT_EQ(s.value.kind, ValueKind::Uint);
  EXPECT_EQ(s.value.u, 0xbeefu);
  EXPECT_EQ(s.text, kLine + "  0xbeef\n");
  EXPECT_EQ(s.json, kJson + R"("v":"0xbeef"})" "\n");
}

TEST_F(FieldKinds, BoolIsAnyNonZero) {
  Shown yes = show(host, {field("v", FieldKind::Bool, 40)}, record(0, 48).u64(40, 2));
  EXPECT_EQ(yes.value.kind, ValueKind::Bool);
  EXPECT_EQ(yes.value.u, 1u);
  EXPECT_EQ(yes.text, kLine + "  true\n");
  EXPECT_EQ(yes.json, kJson + R"("v":true})" "\n");
  Shown no = show(host, {field("v", FieldKind::Bool, 40)}, record(0, 48));
  EXPECT_EQ(no.text, kLine + "  false\n");
  EXPECT_EQ(no.json, kJson + R"("v":false})" "\n");
}

TEST_F(FieldKinds, EnumIsItsEnumeratorByTypeNameOrId) {
  plan::FieldLayout by_name = field("v", FieldKind::Enum, 40);
  by_name.type_name = "enum conn_state";
  Shown s = show(host, {by_name}, record(0, 48).u64(40, 1));
  EXPECT_EQ(s.value.kind, ValueKind::Name);
  EXPECT_EQ(s.value.i, 1);
  EXPECT_EQ(s.value.text, "CONN_OPEN");
  EXPECT_EQ(s.text, kLine + "  CONN_OPEN\n");
  EXPECT_EQ(s.json, kJson + R"("v":"CONN_OPEN"})" "\n");

  // An anonymous enum has only its id (the ids are the running kernel's here).
  plan::FieldLayout by_id = field("v", FieldKind::Enum, 40);
  by_id.btf_id = host.typeId("enum conn_state");
  EXPECT_EQ(show(host, {by_id}, record(0, 48).u64(40, 2)).text, kLine + "  CONN_CLOSED\n");
  // A number no enumerator has is itself.
  Shown other = show(host, {by_name}, record(0, 48).u64(40, 7));
  EXPECT_EQ(other.text, kLine + "  7\n");
  EXPECT_EQ(other.json, kJson + R"("v":"7"})" "\n");
}

TEST_F(FieldKinds, StringFillingItsFieldIsMarkedCut) {
  Shown s = show(host, {field("v", FieldKind::String, 40, 32)},
                 record(0, 72).text(40, "/etc/passwd"));
  EXPECT_EQ(s.value.kind, ValueKind::String);
  EXPECT_FALSE(s.value.cut);
  EXPECT_EQ(s.text, kLine + "  /etc/passwd\n");
  EXPECT_EQ(s.json, kJson + R"("v":"/etc/passwd"})" "\n");

  // 31 bytes and the NUL: a string that fits exactly (a read that fills its field keeps the
  // next byte in the NUL's place when the string goes on: ExprLowering::readString).
  Shown exact = show(host, {field("v", FieldKind::String, 40, 32)}, record(0, 72).text(40, std::string(31, 'x')));
  EXPECT_FALSE(exact.value.cut);
  EXPECT_EQ(exact.text, kLine + "  " + std::string(31, 'x') + "\n");
  // 32 bytes and no NUL: the string went on past its field.
  std::string full(32, 'x');
  Shown cut = show(host, {field("v", FieldKind::String, 40, 32)}, record(0, 72).text(40, full));
  EXPECT_TRUE(cut.value.cut);
  EXPECT_EQ(cut.text, kLine + "  " + full + "…\n");
  EXPECT_EQ(cut.json, kJson + R"("v":")" + full + R"(…"})" "\n");

  // A comm's 16 bytes always end in a NUL (15 characters at most): never cut. A short
  // field without one (`str(p, 16)` of a longer string) is, as any.
  Shown comm = show(host, {field("v", FieldKind::String, 40, 16)},
                    record(0, 56).text(40, "kworker/u16:3-e"));
  EXPECT_FALSE(comm.value.cut);
  EXPECT_EQ(comm.text, kLine + "  kworker/u16:3-e\n");
  Shown short_cut = show(host, {field("v", FieldKind::String, 40, 16)},
                         record(0, 56).text(40, "/usr/lib/x86_64-"));
  EXPECT_TRUE(short_cut.value.cut);
  EXPECT_EQ(short_cut.text, kLine + "  /usr/lib/x86_64-…\n");
}

TEST_F(FieldKinds, StringEscapesControlBytesAndBackslashes) {
  // The text escapes them its way; JSON has the string's own bytes, in JSON's escapes.
  Shown s = show(host, {field("v", FieldKind::String, 40, 32)},
                 record(0, 72).bytes(40, u8s({'a', '\\', 'b', '\t', 0x7f})));
  EXPECT_EQ(s.text, kLine + "  a\\\\b\\x09\\x7f\n");
  EXPECT_EQ(s.json, kJson + R"("v":"a\\b\t)" "\x7f" R"("})" "\n");
}

TEST_F(FieldKinds, PointerIsItsAddressInHex) {
  Shown s = show(host, {field("v", FieldKind::Pointer, 40)}, record(0, 48).u64(40, 0xffff888012345678));
  EXPECT_EQ(s.value.kind, ValueKind::Address);
  EXPECT_EQ(s.value.u, 0xffff888012345678u);
  EXPECT_EQ(s.text, kLine + "  0xffff888012345678\n");
  EXPECT_EQ(s.json, kJson + R"("v":"0xffff888012345678"})" "\n");
}

TEST_F(FieldKinds, SymbolsAreNamedByTheHost) {
  host.kernel_symbols[0xffffffff81a0b2c0] = "tcp_sendmsg+0x10";
  host.user_symbols[0x401136] = "main+0x6";
  Shown k = show(host, {field("v", FieldKind::Symbol, 40)}, record(0, 48).u64(40, 0xffffffff81a0b2c0));
  EXPECT_EQ(k.value.kind, ValueKind::Address);
  EXPECT_EQ(k.value.u, 0xffffffff81a0b2c0u);
  EXPECT_EQ(k.text, kLine + "  tcp_sendmsg+0x10\n");
  EXPECT_EQ(k.json, kJson + R"("v":"tcp_sendmsg+0x10"})" "\n");
  Shown u = show(host, {field("v", FieldKind::UserSymbol, 40)}, record(0, 48).u64(40, 0x401136));
  EXPECT_EQ(u.value.kind, ValueKind::Address);
  EXPECT_EQ(u.text, kLine + "  main+0x6\n");
  EXPECT_EQ(u.json, kJson + R"("v":"main+0x6"})" "\n");
  // Kernel names are never asked of the user symbolizer, nor the other way round.
  EXPECT_EQ(show(host, {field("v", FieldKind::UserSymbol, 40)}, record(0, 48).u64(40, 0xffffffff81a0b2c0)).text,
            kLine + "  0xffffffff81a0b2c0\n");
}

TEST_F(FieldKinds, ErrnoIsItsNameWithItsSign) {
  Shown s = show(host, {field("v", FieldKind::Errno, 40)}, record(0, 48).u64(40, uint64_t(-2)));
  EXPECT_EQ(s.value.kind, ValueKind::Name);
  EXPECT_EQ(s.value.i, -2);
  EXPECT_EQ(s.text, kLine + "  -ENOENT\n");
  EXPECT_EQ(s.json, kJson + R"("v":"-ENOENT"})" "\n");
  EXPECT_EQ(show(host, {field("v", FieldKind::Errno, 40)}, record(0, 48).u64(40, 111)).text,
            kLine + "  ECONNREFUSED\n");
  EXPECT_EQ(show(host, {field("v", FieldKind::Errno, 40)}, record(0, 48).u64(40, uint64_t(-4095))).text,
            kLine + "  -4095\n");
}

TEST_F(FieldKinds, ErrnoNamesEveryErrnoTheCLibraryKnows) {
  EXPECT_EQ(show(host, {field("v", FieldKind::Errno, 40)}, record(0, 48).u64(40, uint64_t(-133))).text,
            kLine + "  -EHWPOISON\n");
  EXPECT_EQ(show(host, {field("v", FieldKind::Errno, 40)}, record(0, 48).u64(40, 0)).text, kLine + "  0\n");
}

TEST_F(FieldKinds, ASyscallReturnIsItsNumberWithItsErrnosName) {
  // Text says the errno beside the number; JSON keeps the number; others are numbers.
  Shown s = show(host, {field("v", FieldKind::SyscallReturn, 40)}, record(0, 48).u64(40, uint64_t(-2)));
  EXPECT_EQ(s.value.kind, ValueKind::Int);
  EXPECT_EQ(s.value.i, -2);
  EXPECT_EQ(s.text, kLine + "  -2 ENOENT\n");
  EXPECT_EQ(s.json, kJson + R"("v":-2})" "\n");
  EXPECT_EQ(show(host, {field("v", FieldKind::SyscallReturn, 40)}, record(0, 48).u64(40, 3)).text, kLine + "  3\n");
  EXPECT_EQ(show(host, {field("v", FieldKind::SyscallReturn, 40)}, record(0, 48).u64(40, uint64_t(-4096))).text,
            kLine + "  -4096\n");  // not an errno: an address mmap returned, say
}

TEST_F(FieldKinds, Ipv4IsADottedQuadInNetworkOrder) {
  Shown s = show(host, {field("v", FieldKind::Ipv4, 40, 4)}, record(0, 48).bytes(40, u8s({10, 0, 2, 15})));
  EXPECT_EQ(s.value.kind, ValueKind::IpAddress);
  EXPECT_EQ(s.value.bytes, u8s({10, 0, 2, 15}));
  EXPECT_EQ(s.text, kLine + "  10.0.2.15\n");
  EXPECT_EQ(s.json, kJson + R"("v":"10.0.2.15"})" "\n");
}

TEST_F(FieldKinds, Ipv6IsWrittenAsRfc5952Says) {
  std::vector<uint8_t> link_local = u8s({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
  Shown s = show(host, {field("v", FieldKind::Ipv6, 40, 16)}, record(0, 56).bytes(40, link_local));
  EXPECT_EQ(s.value.kind, ValueKind::IpAddress);
  EXPECT_EQ(s.value.bytes, link_local);
  EXPECT_EQ(s.text, kLine + "  fe80::1\n");
  EXPECT_EQ(s.json, kJson + R"("v":"fe80::1"})" "\n");
  std::vector<uint8_t> mapped = u8s({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1});
  EXPECT_EQ(show(host, {field("v", FieldKind::Ipv6, 40, 16)}, record(0, 56).bytes(40, mapped)).text,
            kLine + "  ::ffff:192.0.2.1\n");
}

TEST_F(FieldKinds, IpAddressFollowsItsFamily) {
  plan::FieldLayout f = field("v", FieldKind::IpAddress, 40, plan::kIpAddressBytes);
  Shown v4 = show(host, {f}, record(0, 64).u64(40, AF_INET).bytes(48, u8s({192, 168, 1, 2, 9, 9})));
  EXPECT_EQ(v4.value.kind, ValueKind::IpAddress);
  EXPECT_EQ(v4.value.bytes, u8s({192, 168, 1, 2}));
  EXPECT_EQ(v4.text, kLine + "  192.168.1.2\n");
  EXPECT_EQ(v4.json, kJson + R"("v":"192.168.1.2"})" "\n");
  Shown v6 = show(host, {f}, record(0, 64).u64(40, AF_INET6).bytes(63, u8s({1})));
  EXPECT_EQ(v6.value.bytes.size(), 16u);
  EXPECT_EQ(v6.text, kLine + "  ::1\n");
  EXPECT_EQ(v6.json, kJson + R"("v":"::1"})" "\n");
}

TEST_F(FieldKinds, KernelStackDropsTheTracingFramesOnTop) {
  host.kernel_symbols = {{0x10, "bpf_prog_6deef7357e7b4530_kq_1+0x4f"},
                         {0x20, "bpf_trace_run2+0x8c"},
                         {0x30, "tcp_sendmsg+0x10"},
                         {0x40, "inet_sendmsg+0x2a"},
                         {0x50, "__sys_sendto+0x103"}};
  // Innermost first, up to the first zero.
  Bytes r = record(0, 104).u64(40, 0x10).u64(48, 0x20).u64(56, 0x30).u64(64, 0x40).u64(72, 0x50);
  Shown s = show(host, {field("kstack", FieldKind::KernelStack, 40, 64)}, r);
  EXPECT_EQ(s.value.kind, ValueKind::Stack);
  EXPECT_EQ(s.value.addresses, (std::vector<uint64_t>{0x30, 0x40, 0x50}));
  EXPECT_EQ(s.value.frames,
            (std::vector<std::string>{"tcp_sendmsg+0x10", "inet_sendmsg+0x2a", "__sys_sendto+0x103"}));
  // Folded, outermost first: how a stack shows as a table's key.
  EXPECT_EQ(s.value.text, "__sys_sendto+0x103;inet_sendmsg+0x2a;tcp_sendmsg+0x10");
  EXPECT_EQ(s.text, "03:04:05.678   1    4242 curl            p\n"
                    "    kstack:\n"
                    "        tcp_sendmsg+0x10\n"
                    "        inet_sendmsg+0x2a\n"
                    "        __sys_sendto+0x103\n");
  EXPECT_EQ(s.json,
            kJson + R"("kstack":["tcp_sendmsg+0x10","inet_sendmsg+0x2a","__sys_sendto+0x103"]})" "\n");
}

TEST_F(FieldKinds, CallerIsTheFunctionPastTheTracingFramesAndTheTracedOne) {
  host.kernel_symbols = {{0x10, "bpf_prog_6deef7357e7b4530_kq_1+0x4f"},
                         {0x30, "ip_send_skb+0x5"},
                         {0x40, "udp_send_skb+0x1a7"},
                         {0x50, "udp_sendmsg+0xb20"}};
  // A count of the traced function's own frames (1: at its entry), then the stack, with an
  // ftrace trampoline (no symbol) among the machinery's frames.
  Bytes entry = record(0, 88).u64(40, 1).u64(48, 0x10).u64(56, 0xffffffffc0001000)
                    .u64(64, 0x30).u64(72, 0x40).u64(80, 0x50);
  Shown s = show(host, {field("caller", FieldKind::Caller, 40, 48)}, entry);
  EXPECT_EQ(s.value.kind, ValueKind::Text);
  EXPECT_EQ(s.text, kLine + "  udp_send_skb\n");
  EXPECT_EQ(s.json, kJson + R"("caller":"udp_send_skb"})" "\n");
  // At a tracepoint (no own frames) the first frame past the machinery is the caller.
  Bytes tracepoint = record(0, 88).u64(40, 0).u64(48, 0x10).u64(56, 0x30).u64(64, 0x40);
  EXPECT_EQ(show(host, {field("caller", FieldKind::Caller, 40, 48)}, tracepoint).value.text, "ip_send_skb");
  // No stack read (the helper failed): no caller, said so.
  Bytes none = record(0, 88).u64(40, 1);
  EXPECT_EQ(show(host, {field("caller", FieldKind::Caller, 40, 48)}, none).value.text, "?");
}

TEST_F(FieldKinds, UserStackIsNamedInTheEventsProcess) {
  host.user_symbols = {{0x401136, "main+0x6"}, {0x7f0000001000, "__libc_start_call_main+0x80"}};
  Bytes r = record(0, 72).u64(40, 0x401136).u64(48, 0x7f0000001000).u64(56, 0x7f0000002000);
  Shown s = show(host, {field("ustack", FieldKind::UserStack, 40, 32)}, r);
  EXPECT_EQ(s.value.kind, ValueKind::Stack);
  EXPECT_EQ(s.value.text, "0x7f0000002000;__libc_start_call_main+0x80;main+0x6");
  EXPECT_EQ(s.text, "03:04:05.678   1    4242 curl            p\n"
                    "    ustack:\n"
                    "        main+0x6\n"
                    "        __libc_start_call_main+0x80\n"
                    "        0x7f0000002000\n");
  EXPECT_EQ(s.json, kJson + R"("ustack":["main+0x6","__libc_start_call_main+0x80","0x7f0000002000"]})" "\n");
}

/// One of fmt's arguments: a hidden field of the record, of a C type `int_bytes` wide.
plan::FieldLayout argument(plan::FieldLayout f, uint8_t int_bytes = 8) {
  f.hidden = true;
  f.int_bytes = int_bytes;
  return f;
}

plan::FieldLayout format(const std::string& text, std::vector<int32_t> args) {
  plan::FieldLayout f = field("v", FieldKind::Format, 40, 0);
  f.format = text;
  f.args = std::move(args);
  return f;
}

TEST_F(FieldKinds, FormatFillsInItsArgumentsAsCsPrintfDoes) {
  // An int -1 and an unsigned int 0xdeadbeef (written as the kernel widens them), a string.
  std::vector<plan::FieldLayout> fields{
      format("%d %x %u [%-8s] 100%% %08x", {1, 2, 2, 3, 1}),
      argument(field("a", FieldKind::Signed, 40), 4),
      argument(field("b", FieldKind::Unsigned, 48), 4),
      argument(field("c", FieldKind::String, 56, 16)),
  };
  Bytes r = record(0, 72).u64(40, uint64_t(-1)).u64(48, 0xdeadbeef).text(56, "ab");
  Shown s = show(host, fields, r);
  EXPECT_EQ(s.value.kind, ValueKind::Text);
  EXPECT_EQ(s.value.text, "-1 deadbeef 3735928559 [ab      ] 100% ffffffff");
  EXPECT_EQ(s.text, kLine + "  -1 deadbeef 3735928559 [ab      ] 100% ffffffff\n");
  EXPECT_EQ(s.json, kJson + R"("v":"-1 deadbeef 3735928559 [ab      ] 100% ffffffff"})" "\n");
}

TEST_F(FieldKinds, FormatReadsNarrowIntegersAtTheirWidth) {
  // A u8 255 promotes to int 255; an s8 of the same bits is -1; `%ld` is `%d`.
  std::vector<plan::FieldLayout> fields{
      format("%d %d %ld %c", {1, 2, 3, 4}),
      argument(field("a", FieldKind::Unsigned, 40), 1),
      argument(field("b", FieldKind::Signed, 48), 1),
      argument(field("c", FieldKind::Signed, 56)),
      argument(field("d", FieldKind::Unsigned, 64), 1),
  };
  Bytes r = record(0, 72).u64(40, 0xff).u64(48, 0xff).u64(56, uint64_t(-5000000000)).u64(64, 'K');
  EXPECT_EQ(show(host, fields, r).value.text, "255 -1 -5000000000 K");
}

TEST_F(FieldKinds, FormatBracketsAnIpv6AddressBeforeAPort) {
  std::vector<plan::FieldLayout> fields{
      format("%s:%d -> %s:%d", {1, 2, 3, 2}),
      argument(field("a", FieldKind::IpAddress, 40, plan::kIpAddressBytes)),
      argument(field("port", FieldKind::Unsigned, 64), 2),
      argument(field("b", FieldKind::IpAddress, 72, plan::kIpAddressBytes)),
  };
  Bytes r = record(0, 96).u64(40, AF_INET6).bytes(63, u8s({1})).u64(64, 9000).u64(72, AF_INET)
                .bytes(80, u8s({127, 0, 0, 1}));
  EXPECT_EQ(show(host, fields, r).value.text, "[::1]:9000 -> 127.0.0.1:9000");
  // Not before a port: as it is.
  EXPECT_EQ(show(host, {format("%s.", {1}), fields[1]}, r).value.text, "::1.");
  // ntop(addr) of 16 bytes, IPv6 whatever the family: bracketed too.
  std::vector<plan::FieldLayout> v6{format("%s:%d", {1, 2}), argument(field("a", FieldKind::Ipv6, 40, 16)),
                                    argument(field("port", FieldKind::Unsigned, 56), 2)};
  Bytes r6 = record(0, 64).bytes(55, u8s({1})).u64(56, 443);
  EXPECT_EQ(show(host, v6, r6).value.text, "[::1]:443");
}

TEST_F(FieldKinds, FormatShowsOtherKindsAsTheyShowAlone) {
  plan::FieldLayout state = argument(field("s", FieldKind::Enum, 40));
  state.type_name = "enum conn_state";
  std::vector<plan::FieldLayout> fields{
      format("%s %s %s %d", {1, 2, 3}),
      state,
      argument(field("e", FieldKind::Errno, 48)),
      argument(field("k", FieldKind::Bool, 56)),
  };
  Bytes r = record(0, 64).u64(40, 2).u64(48, uint64_t(-13)).u64(56, 1);
  // An argument too few is said where it is missing.
  EXPECT_EQ(show(host, fields, r).value.text, "CONN_CLOSED -EACCES true <missing>");
}

TEST_F(FieldKinds, FileIsReadWhenPrinted) {
  host.files["/proc/sys/kernel/hostname"] = "testbox";
  plan::FieldLayout f = field("v", FieldKind::File, 40, 0);
  f.path = "/proc/sys/kernel/hostname";
  Shown s = show(host, {f}, record(0, 40));
  EXPECT_EQ(s.value.kind, ValueKind::Text);
  EXPECT_EQ(s.text, kLine + "  testbox\n");
  EXPECT_EQ(s.json, kJson + R"("v":"testbox"})" "\n");
  f.path = "/nonexistent";
  EXPECT_EQ(show(host, {f}, record(0, 40)).text,
            kLine + "  <cannot read /nonexistent: No such file or directory>\n");
}

TEST_F(FieldKinds, StringListJoinsItsStrings) {
  plan::FieldLayout f = field("argv", FieldKind::StringList, 40, plan::kJoinBytes);
  f.separator = " ";
  auto arg = [](uint32_t i) { return 48 + i * plan::kJoinArgBytes; };
  Bytes r = record(0, 40 + plan::kJoinBytes).u64(40, 3).text(arg(0), "ls").text(arg(1), "-l")
                .text(arg(2), "/tmp");
  Shown s = show(host, {f}, r);
  EXPECT_EQ(s.value.kind, ValueKind::Text);
  EXPECT_EQ(s.text, kLine + "  ls -l /tmp\n");
  EXPECT_EQ(s.json, kJson + R"("argv":"ls -l /tmp"})" "\n");

  // More strings than kept, and one longer than its 64 bytes.
  f.separator = ",";
  Bytes many = record(0, 40 + plan::kJoinBytes).u64(40, 20);
  for (uint32_t i = 0; i < plan::kJoinArgs; ++i) many.text(arg(i), std::string(1, static_cast<char>('a' + i)));
  many.text(arg(1), std::string(64, 'b'));  // its slot full, no NUL: it went on
  EXPECT_EQ(show(host, {f}, many).value.text,
            "a," + std::string(64, 'b') + "…,c,d,e,f,g,h,i,j,k,l,m,n,o,p,…");
}

TEST_F(FieldKinds, BufferShowsUnprintableBytesAsEscapes) {
  Shown s = show(host, {field("v", FieldKind::Buffer, 40, 6)},
                 record(0, 48).bytes(40, u8s({'h', 'i', 0, 0x7f, '\n', '!'})));
  EXPECT_EQ(s.value.kind, ValueKind::Bytes);
  EXPECT_EQ(s.value.bytes, u8s({'h', 'i', 0, 0x7f, '\n', '!'}));
  EXPECT_EQ(s.text, kLine + "  hi\\x00\\x7f\\x0a!\n");
  EXPECT_EQ(s.json, kJson + R"("v":"hi\\x00\\x7f\\x0a!"})" "\n");
}

TEST_F(FieldKinds, WallTimeIsAKernelTimeAsTheClockSaid) {
  plan::FieldLayout f = field("v", FieldKind::WallTime, 40);
  f.format = "%Y-%m-%d %H:%M:%S.%f";
  Shown s = show(host, {f}, record(0, 48).u64(40, 7'200'000'001'000));
  EXPECT_EQ(s.value.kind, ValueKind::Text);
  EXPECT_EQ(s.value.u, 7'200'000'001'000u);
  EXPECT_EQ(s.text, kLine + "  2024-01-02 05:00:00.000001\n");
  EXPECT_EQ(s.json, kJson + R"("v":"2024-01-02 05:00:00.000001"})" "\n");
}

TEST_F(FieldKinds, TableNamesTheNumbersItHas) {
  plan::FieldLayout f = field("cap", FieldKind::Table, 40);
  f.names = {{0, "CAP_CHOWN"}, {21, "CAP_SYS_ADMIN"}};
  Shown named = show(host, {f}, record(0, 48).u64(40, 21));
  EXPECT_EQ(named.value.kind, ValueKind::Name);
  EXPECT_EQ(named.value.i, 21);
  EXPECT_EQ(named.text, kLine + "  CAP_SYS_ADMIN\n");
  EXPECT_EQ(named.json, kJson + R"("cap":"CAP_SYS_ADMIN"})" "\n");
  Shown other = show(host, {f}, record(0, 48).u64(40, uint64_t(-1)));
  EXPECT_EQ(other.value.kind, ValueKind::Int);
  EXPECT_EQ(other.text, kLine + "  -1\n");
  EXPECT_EQ(other.json, kJson + R"("cap":-1})" "\n");
}

TEST_F(FieldKinds, RecordIsItsAddressInTheLineAndADumpBeneath) {
  plan::FieldLayout conn = field("c", FieldKind::Record, 48, 48);
  conn.type_name = "struct conn";
  conn.address_field = 0;
  std::vector<plan::FieldLayout> fields{hidden(field("c_addr", FieldKind::Pointer, 40)), conn};
  Bytes r = record(0, 96).u64(40, 0xffff888000c0ffee).u32(48, 7).u32(52, 0x11).text(56, "eth0")
                .u32(64, 0x0100007f).u32(68, 443).u32(72, 1).u64(80, 0xffff888000001000).u64(88, uint64_t(-3));
  Shown s = show(host, fields, r, 1);
  EXPECT_EQ(s.value.kind, ValueKind::Record);
  EXPECT_EQ(s.value.u, 0xffff888000c0ffeeu);
  EXPECT_EQ(s.value.bytes.size(), 48u);
  EXPECT_EQ(s.text, kLine +
                        "  0xffff888000c0ffee\n"
                        "    c = *(0xffff888000c0ffee) (struct conn){\n"
                        "        .id = (int)7,\n"
                        "        .flags = (unsigned int)17,\n"
                        "        .name = (char[8])\"eth0\",\n"
                        "        .local = (struct endpoint){\n"
                        "            .addr = (unsigned int)16777343,\n"
                        "            .port = (short unsigned int)443,\n"
                        "        },\n"
                        "        .state = (enum conn_state)CONN_OPEN,\n"
                        "        .peer = (struct endpoint *)0xffff888000001000,\n"
                        "        .delta = (long int)-3,\n"
                        "    }\n");
  EXPECT_EQ(s.json, kJson + R"("c":{"address":"0xffff888000c0ffee","id":7,"flags":17,"name":"eth0",)"
                            R"("local":{"addr":16777343,"port":443},"state":"CONN_OPEN",)"
                            R"("peer":"0xffff888000001000","delta":-3}})" "\n");
}

}  // namespace
}  // namespace kq::engine::testing
