#include "compiler/sema/packet_filter.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include <pcap/pcap.h>

namespace kq::sema {
namespace {

/// As tcpdump captures by default: `len` and loads are bounded by the packet, not by this.
constexpr int kSnapLength = 262144;

/// libpcap, opened by the first pcap filter of a process: linked, it and what it links
/// (D-Bus, systemd, gcrypt: eight libraries) were mapped and relocated at every start,
/// about a tenth of a one-liner's.
struct Libpcap {
  decltype(&pcap_open_dead) open_dead = nullptr;
  decltype(&pcap_compile) compile = nullptr;
  decltype(&pcap_geterr) geterr = nullptr;
  decltype(&pcap_freecode) freecode = nullptr;
  decltype(&pcap_close) close = nullptr;
  std::string error;  // why it cannot be used
};

const Libpcap& libpcap() {
  static Libpcap lib;
  static std::once_flag once;
  std::call_once(once, [] {
    void* handle = nullptr;
    for (const char* name : {"libpcap.so.0.8", "libpcap.so.1", "libpcap.so"}) {
      if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    }
    if (!handle) {
      lib.error = "pcap filters need libpcap, which cannot be loaded: " + std::string(dlerror());
      return;
    }
    lib.open_dead = reinterpret_cast<decltype(lib.open_dead)>(dlsym(handle, "pcap_open_dead"));
    lib.compile = reinterpret_cast<decltype(lib.compile)>(dlsym(handle, "pcap_compile"));
    lib.geterr = reinterpret_cast<decltype(lib.geterr)>(dlsym(handle, "pcap_geterr"));
    lib.freecode = reinterpret_cast<decltype(lib.freecode)>(dlsym(handle, "pcap_freecode"));
    lib.close = reinterpret_cast<decltype(lib.close)>(dlsym(handle, "pcap_close"));
    if (!lib.open_dead || !lib.compile || !lib.geterr || !lib.freecode || !lib.close) {
      lib.error = "pcap filters need libpcap, whose library lacks a function kq calls";
    }
  });
  return lib;
}

/// The instructions of `text` compiled for `link_type`, or libpcap's message.
Result<std::vector<CbpfInsn>> compileFor(const Libpcap& lib, int link_type, const std::string& text) {
  pcap_t* pcap = lib.open_dead(link_type, kSnapLength);
  if (!pcap) return Error{"libpcap cannot start a compiler (out of memory)"};
  bpf_program program{};
  if (lib.compile(pcap, &program, text.c_str(), /*optimize=*/1, PCAP_NETMASK_UNKNOWN) < 0) {
    Error error{lib.geterr(pcap)};
    lib.close(pcap);
    return error;
  }
  std::vector<CbpfInsn> insns;
  insns.reserve(program.bf_len);
  for (u_int i = 0; i < program.bf_len; ++i) {
    const bpf_insn& in = program.bf_insns[i];
    insns.push_back({in.code, in.jt, in.jf, in.k});
  }
  lib.freecode(&program);
  lib.close(pcap);
  return insns;
}

}  // namespace

Result<PacketFilter> compilePacketFilter(std::string_view text) {
  const Libpcap& lib = libpcap();
  if (!lib.error.empty()) return Error{lib.error};
  std::string filter(text);
  Result<std::vector<CbpfInsn>> from_mac = compileFor(lib, DLT_EN10MB, filter);
  if (!from_mac) return from_mac.error();
  PacketFilter out;
  out.from_mac = from_mac.take();
  Result<std::vector<CbpfInsn>> from_network = compileFor(lib, DLT_RAW, filter);
  if (from_network) {
    out.from_network = from_network.take();
  } else {
    out.from_network = {{cbpf::Ret | cbpf::K, 0, 0, 0}};  // needs a MAC header: no match without
  }
  return out;
}

}  // namespace kq::sema
