// Netfilter's hooks and verdicts, numbered as include/uapi/linux/netfilter*.h number them:
// the names packet mode gives nft_do_chain's return, the verdict of a base chain's rules.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kq::host {

/// The kind (bits 32-47 of packet mode's verdict word) that says the word is nft_do_chain's;
/// an XDP or TC program's kind is its program type, which never reaches this number.
inline constexpr uint32_t kNetfilterVerdict = 0x8000;

/// include/uapi/linux/netfilter.h's verdicts that nft_do_chain's return is told apart by. A
/// rule's drop frees the skb in nft_do_chain itself in newer kernels (NF_DROP_REASON, as in
/// 6.12) and returns NF_STOLEN with the drop's errno above NF_VERDICT_MASK: a drop all the
/// same. A chain that steals a packet returns NF_STOLEN alone.
inline constexpr uint8_t kNfDrop = 0, kNfStolen = 2;

/// The verdict word of nft_do_chain's `verdict` (its return's low byte, NF_VERDICT_MASK) at
/// `hook` of family `pf` (`struct nf_hook_state`'s): pf << 56 | hook << 48 |
/// kNetfilterVerdict << 32 | verdict.
constexpr uint64_t netfilterVerdictWord(uint8_t pf, uint8_t hook, uint8_t verdict) {
  return uint64_t{pf} << 56 | uint64_t{hook} << 48 | uint64_t{kNetfilterVerdict} << 32 | verdict;
}

/// Every verdict word at a hook kq knows, and its name: `NF_ACCEPT (ip forward)`, `NF_DROP
/// (ip6 input)`, `NF_STOLEN`, `NF_QUEUE`, `NF_REPEAT`.
std::vector<std::pair<uint64_t, std::string>> netfilterVerdictNames();

}  // namespace kq::host
