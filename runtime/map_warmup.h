// The kernel's allocator for maps whose entries are allocated as they are added (a table's
// groups, BPF_F_NO_PREALLOC) keeps a few free entries on each CPU and refills them from an
// interrupt (irq_work). A program that runs with interrupts off (the scheduler's
// tracepoints, under the runqueue's lock) and adds more new groups than the CPU has ready
// gets ENOMEM, and the event is not counted ("no memory ready for a new group"); a fresh
// map has one entry ready a CPU for per-CPU values (the kernel's prefill_mem_cache). One
// entry added and deleted from user space on each CPU, before anything is attached, has the
// kernel refill every CPU's cache to its batch (48 entries of a small size) at once.
#pragma once

#include <cstdint>
#include <vector>

namespace kq::runtime {

struct WarmedMap {
  int fd = -1;
  uint32_t key_size = 0;
  uint32_t value_size = 0;
  bool per_cpu = false;
};

/// Adds and deletes one entry of each map on each online CPU (from a thread of its own,
/// pinned to each in turn). Does nothing it cannot do: a CPU it may not run on is skipped.
void warmMapAllocators(const std::vector<WarmedMap>& maps);

}  // namespace kq::runtime
