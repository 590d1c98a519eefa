// Code generation against the fake kernel, checked at the level of instructions that
// matter: the filter is in the program, direct loads where the verifier allows them and
// probe reads elsewhere, fallbacks planned, and many compilations in one process.
#include "compiler/lower/lower.h"
#include "compiler/lower/pt_regs.h"

#include <gtest/gtest.h>

#include <set>

#include <fmt/format.h>

#include "compiler/lower/disassemble.h"
#include "compiler/lower/literal_parameters.h"
#include "compiler/parse/parse.h"
#include "plan/live_site.h"
#include "tests/support/fake_kernel.h"

namespace kq::lower {
namespace {

struct Compiled {
  std::optional<CompiledProgram> program;
  Diagnostics diags;
  std::string bpf;  // disassembly
};

class LowerTest : public ::testing::Test {
 protected:
  std::unique_ptr<btf::Btf> btf_ = testing::fakeBtf();
  std::unique_ptr<host::KernelInfo> kernel_ = testing::fakeKernelInfo();

  Compiled compile(const std::string& text, const LowerOptions& options = {}) {
    Compiled out;
    SourceManager sources;
    FileId file = sources.add("<input>", text);
    auto script = parse::parseScript(sources, file, out.diags);
    if (!script) return out;
    auto checked = sema::analyze(*script, sources, *btf_, *kernel_, out.diags);
    if (!checked) return out;
    std::string error;
    out.program = lowerProgram(*checked, *btf_, sources, file, options, out.diags, &error);
    EXPECT_EQ(error, "");
    if (out.program) {
      auto text = disassemble(out.program->object.elf, sources.file(file));
      EXPECT_TRUE(text.ok());
      if (text) out.bpf = *text;
    }
    return out;
  }

  /// The disassembly of the program in `section`.
  static std::string program(const std::string& bpf, const std::string& section) {
    size_t at = bpf.find("# section " + section + "\n");
    if (at == std::string::npos) return "";
    size_t end = bpf.find("\n\n", at);
    return bpf.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }
};

TEST_F(LowerTest, FunctionProbesGetFentryThenKprobe) {
  Compiled c = compile("trace ip_send_skb(skb) where skb->len > 100 and mark == 0xdeadbeef");
  ASSERT_TRUE(c.program) << c.diags.all().size();
  const auto& programs = c.program->plan.programs;
  ASSERT_EQ(programs.size(), 2u);
  EXPECT_EQ(programs[0].attach, plan::Attach::Fentry);
  EXPECT_EQ(programs[0].method, 0u);
  EXPECT_EQ(programs[1].attach, plan::Attach::Kprobe);
  EXPECT_EQ(programs[1].method, 1u);
  EXPECT_EQ(programs[0].group, programs[1].group);

  std::string fentry = program(c.bpf, "fentry/ip_send_skb");
  std::string kprobe = program(c.bpf, "kprobe/ip_send_skb");
  ASSERT_FALSE(fentry.empty()) << c.bpf;
  ASSERT_FALSE(kprobe.empty()) << c.bpf;
  // The filter is compiled in: a comparison with 100 before the ring buffer reservation
  // (`if len < 101 goto out` where passing falls through, `> 100` where it jumps).
  for (const std::string& p : {fentry, kprobe}) {
    size_t filter = std::min(p.find("< 101 goto"), p.find("> 100 goto"));
    EXPECT_NE(filter, std::string::npos) << p;
    EXPECT_LT(filter, p.find("call 131")) << p;
  }
  // fentry knows skb's BTF type: direct loads. kprobe reads through bpf_probe_read_kernel.
  size_t filter_end = fentry.find("call 131");
  EXPECT_EQ(fentry.substr(0, filter_end).find("call 113"), std::string::npos) << fentry;
  EXPECT_NE(kprobe.substr(0, kprobe.find("call 131")).find("call 113"), std::string::npos) << kprobe;
}

TEST_F(LowerTest, TracepointsWithBtfUseTpBtf) {
  Compiled c = compile("trace tracepoint:net:net_dev_xmit() where skb->len > 100 select skb->len");
  ASSERT_TRUE(c.program);
  ASSERT_EQ(c.program->plan.programs.size(), 1u);
  EXPECT_EQ(c.program->plan.programs[0].attach, plan::Attach::TpBtf);
  EXPECT_EQ(program(c.bpf, "tp_btf/net_dev_xmit").find("call 113"), std::string::npos) << c.bpf;
}

TEST_F(LowerTest, SyscallExitsStashArguments) {
  if (lower::hostArch() != lower::Arch::X86_64) GTEST_SKIP() << "raw_syscalls are x86-64's";
  Compiled c = compile("trace syscall:openat(return) select pid, str(filename)");
  ASSERT_TRUE(c.program);
  const auto& programs = c.program->plan.programs;
  // raw_syscalls first (method 0), the syscalls tracepoints as the fallback (method 1).
  ASSERT_EQ(programs.size(), 4u);
  EXPECT_EQ(programs[0].target, "sys_enter");
  EXPECT_EQ(programs[1].target, "sys_exit");
  EXPECT_EQ(programs[2].target, "syscalls/sys_enter_openat");
  EXPECT_EQ(programs[3].target, "syscalls/sys_exit_openat");
  EXPECT_EQ(programs[0].method, 0u);
  EXPECT_EQ(programs[3].method, 1u);
  const std::pair<const char*, const char*> methods[] = {
      {"tp_btf/sys_enter", "tp_btf/sys_exit"},
      {"tracepoint/syscalls/sys_enter_openat", "tracepoint/syscalls/sys_exit_openat"}};
  for (const auto& [enter, exit] : methods) {
    // The entry program saves the arguments (map update, 2); the exit one finds them (1).
    EXPECT_NE(program(c.bpf, enter).find("call 2"), std::string::npos) << enter;
    EXPECT_NE(program(c.bpf, exit).find("call 1\n"), std::string::npos) << exit;
    // User memory is read with bpf_probe_read_user_str (114).
    EXPECT_NE(program(c.bpf, exit).find("call 114"), std::string::npos) << exit;
  }
  // raw_syscalls programs return at once for every other call: openat is 257 on x86-64.
  EXPECT_NE(program(c.bpf, "tp_btf/sys_enter").find(" 257 goto"), std::string::npos) << c.bpf;
}

TEST_F(LowerTest, LayoutsDescribeEveryField) {
  // With `select`, the columns are what it says; a capture list only names arguments.
  Compiled c = compile("trace tcp_sendmsg(sk, size) where size > 4k select comm, size, hex(size) as h");
  ASSERT_TRUE(c.program);
  const plan::ProbeLayout& layout = c.program->plan.layout.probes.at(0);
  std::vector<std::string> names;
  for (const auto& f : layout.fields) {
    if (!f.hidden) names.push_back(f.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"comm", "size", "h"}));
  EXPECT_EQ(layout.fields.back().kind, plan::FieldKind::Hex);
  EXPECT_EQ(layout.fields[0].kind, plan::FieldKind::String);
  EXPECT_EQ(layout.fields[1].int_bytes, 8);  // size_t
}

TEST_F(LowerTest, CapturesAreDumpedKsnoopStyle) {
  Compiled c = compile("trace tcp_sendmsg(sk, size)");
  ASSERT_TRUE(c.program);
  const plan::ProbeLayout& layout = c.program->plan.layout.probes.at(0);
  ASSERT_EQ(layout.fields.size(), 3u);
  EXPECT_EQ(layout.fields[0].kind, plan::FieldKind::Pointer);  // address of the dump
  EXPECT_TRUE(layout.fields[0].hidden);
  EXPECT_EQ(layout.fields[1].kind, plan::FieldKind::Record);
  EXPECT_EQ(layout.fields[1].type_name, "struct sock");
  EXPECT_TRUE(layout.fields[1].is_capture);
  EXPECT_EQ(layout.fields[2].name, "size");
}

TEST_F(LowerTest, ProgramsLeftOutAreStillPlannedButNotInTheObject) {
  LowerOptions options;
  options.programs_to_compile = [](const plan::ProgramPlan& plan) {
    std::vector<bool> out;
    for (const plan::PlannedProgram& p : plan.programs) out.push_back(p.attach != plan::Attach::Fentry);
    return out;
  };
  Compiled c = compile("trace ip_send_skb(skb) where skb->len > 100", options);
  ASSERT_TRUE(c.program);
  ASSERT_EQ(c.program->plan.programs.size(), 2u);
  EXPECT_EQ(c.program->left_out, (std::vector<bool>{true, false}));
  EXPECT_EQ(program(c.bpf, "fentry/ip_send_skb"), "");
  EXPECT_NE(program(c.bpf, "kprobe/ip_send_skb"), "");
}

TEST_F(LowerTest, LiveSitesGiveEachProgramItsSlotsAndADispatcher) {
  LowerOptions options;
  options.live_sites = true;
  options.programs_to_compile = [](const plan::ProgramPlan& plan) {
    std::vector<bool> out;
    for (const plan::PlannedProgram& p : plan.programs) out.push_back(p.attach != plan::Attach::Fentry);
    return out;
  };
  Compiled c = compile("trace tracepoint:net:net_dev_xmit() where skb->len > 100 select skb->len\n"
                       "trace ip_send_skb(skb) select skb->len",
                       options);
  ASSERT_TRUE(c.program);
  std::set<std::string> maps;
  for (const plan::PlannedMap& m : c.program->plan.maps) maps.insert(m.name + " " + m.type);
  const std::string tp = c.program->plan.programs[0].function;
  EXPECT_TRUE(maps.count(tp + "_slots prog_array")) << c.bpf;
  EXPECT_TRUE(maps.count(tp + "_slot array")) << c.bpf;
  // The program tail-calls the slots after its own; the dispatcher, every slot from the first.
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  size_t program_at = c.bpf.find(tp + ":  # section tp_btf/net_dev_xmit");
  size_t site_at = c.bpf.find(tp + "_site:  # section tp_btf/net_dev_xmit");
  ASSERT_NE(program_at, std::string::npos) << c.bpf;
  ASSERT_NE(site_at, std::string::npos) << c.bpf;
  std::string site = c.bpf.substr(site_at, c.bpf.find("\n\n", site_at) - site_at);
  std::string prog = c.bpf.substr(program_at, c.bpf.find("\n\n", program_at) - program_at);
  // Each is one tail call in a loop over the slots (the jump back), bounded by their number.
  EXPECT_EQ(count(site, "call 12\n"), 1u) << site;
  EXPECT_EQ(count(prog, "call 12\n"), 1u) << prog;
  EXPECT_NE(site.find(fmt::format("== {} goto", plan::kLiveSlots)), std::string::npos) << site;
  EXPECT_NE(site.find("goto -"), std::string::npos) << site;
  EXPECT_NE(prog.find(fmt::format("< {} goto -", plan::kLiveSlots - 1)), std::string::npos) << prog;
  // A program left out takes its dispatcher with it.
  EXPECT_EQ(c.bpf.find("section fentry/ip_send_skb"), std::string::npos) << c.bpf;
  EXPECT_NE(c.bpf.find("_site:  # section kprobe/ip_send_skb"), std::string::npos) << c.bpf;
}

TEST_F(LowerTest, AProgramWhoseSiteIsAttachedHasNoDispatcher) {
  LowerOptions options;
  options.live_sites = true;
  std::vector<std::string> asked;
  options.site_attached = [&asked](const plan::PlannedProgram& p) {
    asked.push_back(p.function);
    return p.attach == plan::Attach::TpBtf;
  };
  Compiled c = compile("trace tracepoint:net:net_dev_xmit() select skb->len\n"
                       "trace ip_send_skb(skb) select skb->len",
                       options);
  ASSERT_TRUE(c.program);
  const std::string tp = c.program->plan.programs[0].function;
  // The job only takes a slot of the tracepoint's site: its program, and no dispatcher.
  EXPECT_NE(c.bpf.find(tp + ":  # section tp_btf/net_dev_xmit"), std::string::npos) << c.bpf;
  EXPECT_EQ(c.bpf.find(tp + "_site:"), std::string::npos) << c.bpf;
  // The function, with no site yet, keeps its dispatchers.
  EXPECT_NE(c.bpf.find("_site:  # section fentry/ip_send_skb"), std::string::npos) << c.bpf;
  EXPECT_EQ(asked.size(), c.program->plan.programs.size());
}

/// The literal parameters of `text` and its shape, as a live site's job has them.
struct Shaped {
  LiteralParameters literals;
  std::string shape;
};

Shaped shapeOf(const std::string& text) {
  SourceManager sources;
  FileId file = sources.add("<input>", text);
  Diagnostics diags;
  auto btf = testing::fakeBtf();
  auto kernel = testing::fakeKernelInfo();
  auto script = parse::parseScript(sources, file, diags);
  EXPECT_TRUE(script) << text;
  if (!script) return {};
  auto checked = sema::analyze(*script, sources, *btf, *kernel, diags);
  EXPECT_TRUE(checked) << text;
  if (!checked) return {};
  Shaped out{literalParameters(checked->program, file), ""};
  out.shape = out.literals.shape(text);
  for (LiteralParameter& p : out.literals.params) p.literal = nullptr;  // the AST goes here
  return out;
}

TEST_F(LowerTest, ALiveSitesLiteralsAreReadFromRodataAndSetWhenLoaded) {
  const std::string query =
      "trace tracepoint:net:net_dev_xmit() where skb->len > 100 and comm == \"nginx\" select skb->len";
  LowerOptions options;
  options.live_sites = true;
  options.literal_parameters = true;
  Compiled live = compile(query, options);
  ASSERT_TRUE(live.program);
  Compiled fixed = compile(query);
  ASSERT_TRUE(fixed.program);
  // Compiled in where it is not a live site; read from .rodata where it is.
  const std::string section = "tp_btf/net_dev_xmit";
  EXPECT_NE(program(fixed.bpf, section).find("> 100 goto"), std::string::npos) << fixed.bpf;
  EXPECT_EQ(program(live.bpf, section).find("100 goto"), std::string::npos) << live.bpf;

  Shaped shaped = shapeOf(query);
  ASSERT_EQ(shaped.literals.params.size(), 2u);
  EXPECT_EQ(shaped.literals.params[0].offset, 0u);
  EXPECT_EQ(shaped.literals.params[0].size, 8u);
  EXPECT_EQ(shaped.literals.params[1].offset, 8u);
  EXPECT_EQ(shaped.literals.params[1].size, 8u);  // "nginx", its NUL, to a word
  std::vector<uint8_t> want = {100, 0, 0, 0, 0, 0, 0, 0, 'n', 'g', 'i', 'n', 'x', 0, 0, 0};
  EXPECT_EQ(shaped.literals.bytes, want);

  // A run with other values writes them over the object's, and nothing of another size.
  std::vector<char> elf = live.program->object.elf;
  std::vector<uint8_t> other = {200, 0, 0, 0, 0, 0, 0, 0, 'r', 'e', 'd', 'i', 's', 0, 0, 0};
  EXPECT_TRUE(setLiteralParameters(elf, other));
  EXPECT_NE(elf, live.program->object.elf);
  std::vector<char> written(other.begin(), other.end());
  EXPECT_NE(std::search(elf.begin(), elf.end(), written.begin(), written.end()), elf.end());
  EXPECT_FALSE(setLiteralParameters(elf, std::vector<uint8_t>(8, 0)));
  std::vector<char> plain = fixed.program->object.elf;
  EXPECT_FALSE(setLiteralParameters(plain, other));
}

TEST_F(LowerTest, AQuerysShapeIsItsTextButTheValuesItsWhereCompares) {
  auto shape = [](const std::string& where) {
    return shapeOf("trace tracepoint:net:net_dev_xmit() where " + where + " select skb->len").shape;
  };
  EXPECT_EQ(shape("skb->len > 100 and comm == \"nginx\""), shape("skb->len > 200 and comm == \"redis\""));
  // A string of another length is compared in other words; an integer's spelling is text.
  EXPECT_NE(shape("comm == \"nginx\""), shape("comm == \"nginx2\""));
  EXPECT_NE(shape("comm ~ \"ngin*\""), shape("comm ~ \"nginx\""));
  EXPECT_NE(shape("skb->len > 100"), shape("skb->len > 1000"));
  // Equal values may be read once: an object is for values equal where its own were.
  EXPECT_NE(shape("skb->len > 5 or skb->len == 5"), shape("skb->len > 5 or skb->len == 6"));
  EXPECT_EQ(shape("skb->len > 5 or skb->len == 5"), shape("skb->len > 7 or skb->len == 7"));
  // Only comparisons in `where` with a value of the event: not what is selected, not a
  // comparison of two constants.
  EXPECT_EQ(shapeOf("trace tracepoint:net:net_dev_xmit() select skb->len == 100").literals.params.size(), 0u);
  EXPECT_EQ(shapeOf("trace tracepoint:net:net_dev_xmit() where 1 == 1 select skb->len").literals.params.size(), 0u);
}

TEST_F(LowerTest, InstructionsMapBackToKqSource) {
  Compiled c = compile("let x = 1\ntrace ip_send_skb(skb) where skb->len > 100");
  ASSERT_TRUE(c.program);
  bool on_line_two = false;
  for (int i = 0; i < 8; ++i) {
    auto at = sourceOfInstruction(c.program->object.elf, c.program->plan.programs[0].function, i);
    on_line_two = on_line_two || (at && at->line == 2);
  }
  EXPECT_TRUE(on_line_two);
}

TEST_F(LowerTest, AggregatesUpdateAMapInsteadOfWritingRecords) {
  Compiled c = compile("trace tcp_sendmsg(sk, size) group by comm select comm, count(), hist(size)");
  ASSERT_TRUE(c.program);
  const auto& aggregates = c.program->plan.layout.aggregates;
  ASSERT_EQ(aggregates.size(), 1u);
  EXPECT_EQ(aggregates[0].keys.at(0).name, "comm");
  EXPECT_EQ(aggregates[0].slots.size(), 2u);
  EXPECT_EQ(aggregates[0].value_size, 8u + 8u + 8u * plan::kHistBuckets);  // count(); hist's sum and buckets
  std::string fentry = program(c.bpf, "fentry/tcp_sendmsg");
  EXPECT_EQ(fentry.find("call 131"), std::string::npos) << fentry;  // no ring buffer
  EXPECT_NE(fentry.find("lock"), std::string::npos) << fentry;      // atomic adds
}

TEST_F(LowerTest, FmtInAFnIsFormattedFromItsArguments) {
  Compiled c = compile("use net\ntrace ip_send_skb(skb) select tuple(skb) as flow");
  ASSERT_TRUE(c.program) << (c.diags.all().empty() ? "" : c.diags.all()[0].message);
  const plan::ProbeLayout& layout = c.program->plan.layout.probes.at(0);
  const plan::FieldLayout& flow = layout.fields.back();
  EXPECT_EQ(flow.name, "flow");
  EXPECT_EQ(flow.kind, plan::FieldKind::Format);
  EXPECT_EQ(flow.format, "%s:%d -> %s:%d");
  ASSERT_EQ(flow.args.size(), 4u);
  EXPECT_EQ(layout.fields.at(flow.args[0]).kind, plan::FieldKind::IpAddress);  // ntop(family, addr)
  EXPECT_TRUE(layout.fields.at(flow.args[0]).hidden);
  EXPECT_EQ(layout.fields.at(flow.args[1]).name, "sport(skb)");
}

TEST_F(LowerTest, PcapRunsInTheProbesOwnProgram) {
  // The filter's classic BPF becomes the probe's code, not a program of its own. The skb's
  // offsets and lengths are direct loads where the verifier knows it (fentry); `head`,
  // `data` and the copy of the packet's first bytes are probe reads (113) everywhere.
  Compiled c = compile("trace ip_send_skb(skb) where pcap(\"udp\") select len");
  ASSERT_TRUE(c.program) << (c.diags.all().empty() ? "" : c.diags.all()[0].message);
  std::string fentry = program(c.bpf, "fentry/ip_send_skb");
  std::string kprobe = program(c.bpf, "kprobe/ip_send_skb");
  auto reads = [](const std::string& code) {
    size_t n = 0;
    for (size_t at = code.find("call 113"); at != std::string::npos; at = code.find("call 113", at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(reads(fentry), 3u) << fentry;
  EXPECT_EQ(reads(kprobe), 6u + 1u + 1u) << kprobe;  // + `len`, selected
  EXPECT_EQ(c.program->plan.programs.size(), 2u);
}

TEST_F(LowerTest, TopCountsAndKeepsItsLimit) {
  Compiled c = compile("trace tcp_sendmsg(sk, size) group by comm select comm, top(5)");
  ASSERT_TRUE(c.program) << c.diags.all().size();
  const auto& slots = c.program->plan.layout.aggregates.at(0).slots;
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots[0].kind, plan::AggregateKind::Top);
  EXPECT_EQ(slots[0].limit, 5u);
}

TEST_F(LowerTest, TaskIsABtfPointerWhereTheVerifierKnowsOne) {
  Compiled c = compile("trace ip_send_skb(skb) where task->pid == 7 select task->real_parent->tgid");
  ASSERT_TRUE(c.program) << (c.diags.all().empty() ? "" : c.diags.all()[0].message);
  std::string fentry = program(c.bpf, "fentry/ip_send_skb");
  std::string kprobe = program(c.bpf, "kprobe/ip_send_skb");
  // fentry: bpf_get_current_task_btf (158), and `task->pid` a direct load before the filter.
  EXPECT_NE(fentry.find("call 158"), std::string::npos) << fentry;
  EXPECT_EQ(fentry.find("call 35"), std::string::npos) << fentry;
  EXPECT_EQ(fentry.substr(0, fentry.find(" 7 goto")).find("call 113"), std::string::npos) << fentry;
  // kprobe: bpf_get_current_task (35), its members through bpf_probe_read_kernel (113).
  EXPECT_NE(kprobe.find("call 35"), std::string::npos) << kprobe;
  EXPECT_EQ(kprobe.find("call 158"), std::string::npos) << kprobe;
  EXPECT_NE(kprobe.substr(0, kprobe.find("call 131")).find("call 113"), std::string::npos) << kprobe;
}

TEST_F(LowerTest, PrintedBuiltinsAreFieldsWithTheirLiterals) {
  Compiled c = compile(
      "trace syscall:execve(filename, argv) select join(argv, \",\") as j, cat(\"/etc/hostname\") as c, "
      "buf(filename, 12) as b, strftime(\"%T.%f\", time) as t, kaddr(\"ip_send_skb\") as k, pid");
  ASSERT_TRUE(c.program) << (c.diags.all().empty() ? "" : c.diags.all()[0].message);
  const plan::ProbeLayout& layout = c.program->plan.layout.probes.at(0);
  ASSERT_EQ(layout.fields.size(), 6u);
  const auto& f = layout.fields;
  EXPECT_EQ(f[0].kind, plan::FieldKind::StringList);
  EXPECT_EQ(f[0].size, plan::kJoinBytes);
  EXPECT_EQ(f[0].separator, ",");
  EXPECT_EQ(f[1].kind, plan::FieldKind::File);
  EXPECT_EQ(f[1].path, "/etc/hostname");
  EXPECT_EQ(f[1].size, 0u);  // read when printed
  EXPECT_EQ(f[2].kind, plan::FieldKind::Buffer);
  EXPECT_EQ(f[2].size, 12u);
  EXPECT_EQ(f[2].offset, f[1].offset);
  EXPECT_EQ(f[3].kind, plan::FieldKind::WallTime);
  EXPECT_EQ(f[3].format, "%T.%f");
  EXPECT_EQ(f[4].kind, plan::FieldKind::Hex);
  EXPECT_EQ(f[5].offset, f[4].offset + 8);
  std::string enter = program(c.bpf, "tracepoint/syscalls/sys_enter_execve");
  // The symbol's address is a constant of the program (the fake kernel's kallsyms), which
  // fits a sign-extended 32-bit immediate.
  std::string address = std::to_string(static_cast<int64_t>(0xffffffff8205dbd0));
  EXPECT_NE(enter.find(" = " + address + "\n"), std::string::npos) << enter;
  // argv's pointers and strings are user memory: bpf_probe_read_user(_str), 17 pointers, and
  // for each string that fills its slot, the byte after it (ExprLowering::readString).
  size_t pointers = 0;
  for (size_t at = enter.find("call 112"); at != std::string::npos; at = enter.find("call 112", at + 1)) ++pointers;
  EXPECT_EQ(pointers, plan::kJoinArgs + 1 + plan::kJoinArgs + 1) << enter;  // and buf's 12 bytes
  EXPECT_NE(enter.find("call 114"), std::string::npos) << enter;
}

TEST_F(LowerTest, JoinAsAKeyFitsItsProgram) {
  Compiled c = compile("trace syscall:execve(filename, argv) group by join(argv) select count()");
  ASSERT_TRUE(c.program) << (c.diags.all().empty() ? "" : c.diags.all()[0].message);
  const auto& keys = c.program->plan.layout.aggregates.at(0).keys;
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].kind, plan::FieldKind::StringList);
  EXPECT_EQ(c.program->plan.layout.aggregates.at(0).key_size, plan::kJoinBytes);
}

// LLVM's BPF CO-RE pass keeps process-wide state across compilations; kq must survive many
// compilations of the same accesses in one process (the REPL, this test binary).
TEST_F(LowerTest, ManyCompilationsInOneProcess) {
  for (int i = 0; i < 25; ++i) {
    Compiled c = compile("trace tracepoint:net:net_dev_xmit(skb) where skb->len > 100 and mark == 1");
    ASSERT_TRUE(c.program) << i;
  }
}

}  // namespace
}  // namespace kq::lower
