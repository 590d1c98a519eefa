#include "host/netfilter.h"

#include <fmt/format.h>

namespace kq::host {
namespace {

// enum { NFPROTO_INET = 1, NFPROTO_IPV4 = 2, NFPROTO_ARP = 3, NFPROTO_NETDEV = 5,
// NFPROTO_BRIDGE = 7, NFPROTO_IPV6 = 10 }, each with nft's name and its hooks' names by
// number, as nft names them (enum nf_inet_hooks, NF_ARP_*, NF_NETDEV_*, NF_BR_*).
struct Family {
  uint8_t pf;
  const char* name;
  std::vector<const char*> hooks;
};

const std::vector<Family>& families() {
  static const std::vector<const char*> kInet{"prerouting", "input", "forward", "output", "postrouting"};
  static const std::vector<Family> kFamilies{
      {1, "inet", kInet},
      {2, "ip", kInet},
      {3, "arp", {"input", "output", "forward"}},
      {5, "netdev", {"ingress", "egress"}},
      {7, "bridge", {"prerouting", "input", "forward", "output", "postrouting"}},
      {10, "ip6", kInet},
  };
  return kFamilies;
}

}  // namespace

std::vector<std::pair<uint64_t, std::string>> netfilterVerdictNames() {
  // include/uapi/linux/netfilter.h's verdicts (what nft_do_chain returns, under a drop's errno).
  static const std::pair<uint8_t, const char*> kVerdicts[]{
      {0, "NF_DROP"}, {1, "NF_ACCEPT"}, {2, "NF_STOLEN"}, {3, "NF_QUEUE"}, {4, "NF_REPEAT"}};
  std::vector<std::pair<uint64_t, std::string>> out;
  for (const Family& f : families()) {
    for (uint8_t hook = 0; hook < f.hooks.size(); ++hook) {
      for (const auto& [verdict, name] : kVerdicts) {
        out.emplace_back(netfilterVerdictWord(f.pf, hook, verdict), fmt::format("{} ({} {})", name, f.name, f.hooks[hook]));
      }
    }
  }
  return out;
}

}  // namespace kq::host
