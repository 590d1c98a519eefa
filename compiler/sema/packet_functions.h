// The kernel functions `trace packet` attaches to: every traceable function taking a
// `struct sk_buff *` where a kprobe can read it (sema's packet target, `kq list packet`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/btf/btf.h"
#include "host/kernel_info.h"

namespace kq::sema {

struct PacketFunction {
  btf::Function function;
  uint32_t skb = 0;                // its argument
  std::optional<uint32_t> reason;  // the argument of an `enum skb_drop_reason`, if any
};

/// In name order. A function ftrace cannot attach to is left out (it would make the whole
/// attachment fail); where its list cannot be read, kallsyms says which functions exist.
std::vector<PacketFunction> packetFunctions(const btf::Btf& btf, host::KernelInfo& kernel);

/// The BPF programs loaded now that packet mode traces too (fexit on each): XDP's and TC's,
/// loaded with BTF (fexit attaches by it), their context their first parameter. None where
/// they cannot be listed (without root).
std::vector<host::BpfProgram> packetPrograms(host::KernelInfo& kernel);

struct NetfilterHookAccess;
/// nft_do_chain, which runs an nftables base chain's rules for a packet at a hook and
/// returns their verdict, where kq can trace its return (fexit) and find the packet and the
/// hook through its arguments; `module` is where it is (`nf_tables`). None where nf_tables is
/// not loaded.
std::optional<NetfilterHookAccess> netfilterChain(const btf::Btf& btf, host::KernelInfo& kernel, std::string& module);

}  // namespace kq::sema
