// pcap filters (`pcap("udp and dst port 53")`): the text tcpdump and pwru take, compiled by
// libpcap into classic BPF when the query is checked. Lowering translates the instructions
// into the program's own code (compiler/lower/packet_filter_lowering.cpp).
#pragma once

#include "compiler/btf/btf.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "compiler/diag/result.h"

namespace kq::sema {

/// Classic BPF's opcode fields (as <pcap/bpf.h> names them BPF_LD, BPF_ABS, ...).
namespace cbpf {
enum Class : uint16_t { Ld = 0x00, Ldx = 0x01, St = 0x02, Stx = 0x03, Alu = 0x04, Jmp = 0x05,
                        Ret = 0x06, Misc = 0x07 };
enum Size : uint16_t { Word = 0x00, Half = 0x08, Byte = 0x10 };
enum Mode : uint16_t { Imm = 0x00, Abs = 0x20, Ind = 0x40, Mem = 0x60, Len = 0x80, Msh = 0xa0 };
enum AluOp : uint16_t { Add = 0x00, Sub = 0x10, Mul = 0x20, Div = 0x30, Or = 0x40, And = 0x50,
                        Lsh = 0x60, Rsh = 0x70, Neg = 0x80, Mod = 0x90, Xor = 0xa0 };
enum JmpOp : uint16_t { Ja = 0x00, Jeq = 0x10, Jgt = 0x20, Jge = 0x30, Jset = 0x40 };
/// The operand: the constant `k`, or the X register (for RET, A is 0x10).
enum Source : uint16_t { K = 0x00, X = 0x08, A = 0x10 };
enum MiscOp : uint16_t { Tax = 0x00, Txa = 0x80 };
/// Scratch memory words, M[0] to M[15].
inline constexpr uint32_t kMemWords = 16;

inline uint16_t classOf(uint16_t code) { return code & 0x07; }
inline uint16_t sizeOf(uint16_t code) { return code & 0x18; }
inline uint16_t modeOf(uint16_t code) { return code & 0xe0; }
inline uint16_t opOf(uint16_t code) { return code & 0xf0; }
inline uint16_t sourceOf(uint16_t code) { return code & 0x08; }
inline uint16_t retSourceOf(uint16_t code) { return code & 0x18; }
inline uint16_t miscOpOf(uint16_t code) { return code & 0xf8; }
}  // namespace cbpf

/// One classic BPF instruction, as libpcap's `struct bpf_insn` holds it.
struct CbpfInsn {
  uint16_t code = 0;
  uint8_t jt = 0;
  uint8_t jf = 0;
  uint32_t k = 0;
};

/// A filter compiled for both places a packet's bytes may start: at its Ethernet header
/// (DLT_EN10MB), and at its network header (DLT_RAW: the IP header first), for packets
/// that have no MAC header yet. A filter that only has meaning with a MAC header (`ether
/// host ...`) never matches a packet without one: its `from_network` is `ret #0`.
struct PacketFilter {
  std::vector<CbpfInsn> from_mac;
  std::vector<CbpfInsn> from_network;
  /// `pcap("...")` without the packet: the probe argument that is its one `struct sk_buff *`.
  std::optional<uint32_t> skb_arg;
  /// The `struct sk_buff` members the filter reads the packet through, found in the
  /// kernel's BTF (PacketFilter::kMembers order).
  static constexpr const char* kMembers[] = {"head", "data", "len", "tail", "mac_header", "network_header"};
  std::vector<btf::MemberSteps> members;
};

/// Compiles `text` with libpcap, optimised; the error is libpcap's message.
Result<PacketFilter> compilePacketFilter(std::string_view text);

}  // namespace kq::sema
