#include "host/netfilter.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

namespace kq::host {
namespace {

std::map<uint64_t, std::string> names() {
  std::map<uint64_t, std::string> out;
  for (auto& [word, name] : netfilterVerdictNames()) EXPECT_TRUE(out.emplace(word, name).second) << name;
  return out;
}

TEST(NetfilterVerdicts, NamesEachVerdictByTheFamilyAndHookOfThePacket) {
  std::map<uint64_t, std::string> all = names();
  // NFPROTO_IPV4 (2) at NF_INET_FORWARD (2), NF_DROP; NFPROTO_IPV6 (10) at NF_INET_LOCAL_IN (1).
  EXPECT_EQ(all.at(netfilterVerdictWord(2, 2, kNfDrop)), "NF_DROP (ip forward)");
  EXPECT_EQ(all.at(netfilterVerdictWord(10, 1, 1)), "NF_ACCEPT (ip6 input)");
  EXPECT_EQ(all.at(netfilterVerdictWord(2, 4, 1)), "NF_ACCEPT (ip postrouting)");
  EXPECT_EQ(all.at(netfilterVerdictWord(5, 0, kNfStolen)), "NF_STOLEN (netdev ingress)");
  EXPECT_EQ(all.at(netfilterVerdictWord(7, 0, 3)), "NF_QUEUE (bridge prerouting)");
  EXPECT_EQ(all.at(netfilterVerdictWord(3, 2, 4)), "NF_REPEAT (arp forward)");
  // A hook a family does not have has no name (NF_NETDEV has two).
  EXPECT_FALSE(all.count(netfilterVerdictWord(5, 2, 1)));
  // 6 families with 5, 5, 3, 2, 5, 5 hooks, and 5 verdicts at each.
  EXPECT_EQ(all.size(), 25u * 5);
}

TEST(NetfilterVerdicts, NeverMeetAnXdpOrTcProgramsVerdict) {
  // Packet mode's verdict field holds a program's type above its return (BPF program types
  // are small numbers); netfilter's kind is above them all.
  for (auto& [word, name] : names()) EXPECT_EQ((word >> 32) & 0xffff, kNetfilterVerdict) << name;
  EXPECT_GT(kNetfilterVerdict, 0xff);
}

}  // namespace
}  // namespace kq::host
