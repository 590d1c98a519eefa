// The in-process keeper of live sites (kq serve's): slots handed out, taken, left, and the
// site closed with its last slot. Its descriptors are a real PROG_ARRAY (needs root, else
// skipped) and an eventfd standing for the attachment.
#include "runtime/live_sites.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>

#include "plan/live_site.h"

namespace kq::runtime {
namespace {

int progArray() { return bpf_map_create(BPF_MAP_TYPE_PROG_ARRAY, "kq_test_slots", 4, 4, plan::kLiveSlots, nullptr); }

bool isOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

TEST(LocalSites, ASiteIsHeldWhileASlotIsAndClosedWithTheLast) {
  int slots = progArray();
  if (slots < 0) GTEST_SKIP() << "cannot make a BPF map here (needs root): " << std::strerror(errno);
  int link = eventfd(0, EFD_CLOEXEC);
  LocalSites sites;
  EXPECT_FALSE(sites.find("tp_btf sched_switch "));
  sites.made("tp_btf sched_switch ", link, slots);
  ASSERT_EQ(sites.sites(), 1u);
  // The keeper keeps its own descriptors: the maker's may go.
  close(link);

  auto free = sites.find("tp_btf sched_switch ");
  ASSERT_TRUE(free);
  EXPECT_EQ(free->slot, 1u);  // the maker's program holds slot 0
  EXPECT_EQ(mapId(free->slots_fd), mapId(slots));
  EXPECT_FALSE(sites.find("tp_btf sched_wakeup "));  // another place: no site
  sites.joining("tp_btf sched_switch ", 1);
  EXPECT_EQ(sites.find("tp_btf sched_switch ")->slot, 2u);

  // A loader leaves by its own descriptor of the slots; the site stays while slot 1 is held.
  int keepers = free->slots_fd;
  sites.leaving(slots, 0);
  EXPECT_EQ(sites.sites(), 1u);
  EXPECT_EQ(sites.find("tp_btf sched_switch ")->slot, 0u);
  sites.leaving(slots, 1);
  EXPECT_EQ(sites.sites(), 0u);
  EXPECT_FALSE(isOpen(keepers));
  close(slots);
}

TEST(LocalSites, APlaceWithEverySlotTakenHasNoFreeSlot) {
  int slots = progArray();
  if (slots < 0) GTEST_SKIP() << "cannot make a BPF map here (needs root): " << std::strerror(errno);
  int link = eventfd(0, EFD_CLOEXEC);
  LocalSites sites;
  sites.made("uprobe malloc /lib/libc.so.6", link, slots);
  for (uint32_t slot = 1; slot < plan::kLiveSlots; ++slot) {
    ASSERT_EQ(sites.find("uprobe malloc /lib/libc.so.6")->slot, slot);
    sites.joining("uprobe malloc /lib/libc.so.6", slot);
  }
  EXPECT_FALSE(sites.find("uprobe malloc /lib/libc.so.6"));  // the next one attaches on its own
  close(link);
  close(slots);
}

}  // namespace
}  // namespace kq::runtime
