#include "compiler/sema/packet_filter.h"

#include <string>

#include <pcap/pcap.h>

namespace kq::sema {
namespace {

/// As tcpdump captures by default: `len` and loads are bounded by the packet, not by this.
constexpr int kSnapLength = 262144;

/// The instructions of `text` compiled for `link_type`, or libpcap's message.
Result<std::vector<CbpfInsn>> compileFor(int link_type, const std::string& text) {
  pcap_t* pcap = pcap_open_dead(link_type, kSnapLength);
  if (!pcap) return Error{"libpcap cannot start a compiler (out of memory)"};
  bpf_program program{};
  if (pcap_compile(pcap, &program, text.c_str(), /*optimize=*/1, PCAP_NETMASK_UNKNOWN) < 0) {
    Error error{pcap_geterr(pcap)};
    pcap_close(pcap);
    return error;
  }
  std::vector<CbpfInsn> insns;
  insns.reserve(program.bf_len);
  for (u_int i = 0; i < program.bf_len; ++i) {
    const bpf_insn& in = program.bf_insns[i];
    insns.push_back({in.code, in.jt, in.jf, in.k});
  }
  pcap_freecode(&program);
  pcap_close(pcap);
  return insns;
}

}  // namespace

Result<PacketFilter> compilePacketFilter(std::string_view text) {
  std::string filter(text);
  Result<std::vector<CbpfInsn>> from_mac = compileFor(DLT_EN10MB, filter);
  if (!from_mac) return from_mac.error();
  PacketFilter out;
  out.from_mac = from_mac.take();
  Result<std::vector<CbpfInsn>> from_network = compileFor(DLT_RAW, filter);
  if (from_network) {
    out.from_network = from_network.take();
  } else {
    out.from_network = {{cbpf::Ret | cbpf::K, 0, 0, 0}};  // needs a MAC header: no match without
  }
  return out;
}

}  // namespace kq::sema
