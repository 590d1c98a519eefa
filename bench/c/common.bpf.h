// What every reference program shares: the record header kq writes (runtime/event_layout.h's
// EventHeader), the ring buffer, and the lost-event counter, written as a C programmer would.
#pragma once

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

struct header {
  __u64 time_ns;
  __u32 probe;
  __u32 cpu;
  __u32 pid;
  __u32 tid;
  char comm[16];
};

#ifndef RING_BYTES
#define RING_BYTES (256 * 1024)
#endif

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, RING_BYTES);
} events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} lost SEC(".maps");

static __always_inline void fill_header(struct header *h) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  h->time_ns = bpf_ktime_get_ns();
  h->probe = 0;
  h->cpu = bpf_get_smp_processor_id();
  h->pid = pid_tgid >> 32;
  h->tid = (__u32)pid_tgid;
  bpf_get_current_comm(h->comm, sizeof(h->comm));
}

static __always_inline void count_lost(void) {
  __u32 zero = 0;
  __u64 *n = bpf_map_lookup_elem(&lost, &zero);
  if (n) *n += 1;
}

/// The value of `key` in a hash map, inserted as zero when it is new (libbpf-tools'
/// bpf_map_lookup_or_try_init).
static __always_inline void *lookup_or_init(void *map, const void *key, const void *zero) {
  void *value = bpf_map_lookup_elem(map, key);
  if (value) return value;
  bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(map, key);
}
