// A power-of-two histogram in a one-entry array (libbpf-tools' log2 slots): what the
// references that keep one share.
#pragma once

#include "common.bpf.h"

#define SLOTS 65

struct hist {
  __u64 slots[SLOTS];
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct hist);
} hists SEC(".maps");

/// floor(log2(v)) for v > 0 (libbpf-tools' bits.bpf.h).
static __always_inline __u32 log2_u32(__u32 w) {
  __u32 shift, r;
  r = (w > 0xFFFF) << 4; w >>= r;
  shift = (w > 0xFF) << 3; w >>= shift; r |= shift;
  shift = (w > 0xF) << 2; w >>= shift; r |= shift;
  shift = (w > 0x3) << 1; w >>= shift; r |= shift;
  r |= (w >> 1);
  return r;
}

static __always_inline __u32 log2_u64(__u64 v) {
  __u32 hi = v >> 32;
  return hi ? log2_u32(hi) + 32 : log2_u32((__u32)v);
}

static __always_inline void hist_slot(__u64 slot) {
  __u32 zero = 0;
  struct hist *h = bpf_map_lookup_elem(&hists, &zero);
  if (!h) return;
  if (slot >= SLOTS) slot = SLOTS - 1;
  __sync_fetch_and_add(&h->slots[slot], 1);
}

/// Counts `v` in its slot: 0 below 1, then [1, 2), [2, 4), ...
static __always_inline void hist_add_u32(__u32 v) { hist_slot(v ? log2_u32(v) + 1 : 0); }
static __always_inline void hist_add(__u64 v) { hist_slot(v ? log2_u64(v) + 1 : 0); }
