// A small plan that passes every check, with the object contents it describes: two
// queries, three programs (one group with two methods), a record with every kind of field
// index (a record's address, fmt's arguments, a packet's facts), a table of four aggregates
// and a join. Tests of the checks break one field of it at a time.
#pragma once

#include <linux/bpf.h>

#include "plan/portable_plan.h"
#include "runtime/object_check.h"

namespace kq::testing {

inline plan::FieldLayout sampleField(std::string name, plan::FieldKind kind, uint32_t offset,
                                     uint32_t size) {
  plan::FieldLayout f;
  f.name = std::move(name);
  f.kind = kind;
  f.offset = offset;
  f.size = size;
  return f;
}

inline plan::PlannedProgram sampleProgram(std::string name, plan::Attach attach, uint32_t group,
                                          uint32_t method, uint32_t query) {
  plan::PlannedProgram p{std::move(name), attach, "syscalls/sys_enter_openat"};
  p.group = group;
  p.method = method;
  p.queries = {query};
  return p;
}

inline plan::PortablePlan samplePlan() {
  using plan::FieldKind;
  plan::PortablePlan p;
  p.kq_version = "0.1.0";
  p.machine = "x86_64";
  p.limits = {{0, 5}, {0, 0}};
  p.query_sources = {{"trace syscall:openat select str(filename) limit 5"},
                     {"trace getpid group by comm select comm, count(), avg(x), hist(x), lhist(x, 0, 100, 10)"}};
  plan::ProgramPlan& plan = p.plan;
  plan.layout.queries = 2;
  plan.group_names = {"openat", "getpid"};
  plan.programs = {sampleProgram("kq_prog_0", plan::Attach::Tracepoint, 0, 0, 0),
                   sampleProgram("kq_prog_1", plan::Attach::TpBtf, 1, 0, 1),
                   sampleProgram("kq_prog_2", plan::Attach::Tracepoint, 1, 1, 1)};

  // The record: the header's 40 bytes, then fd, a hidden address, a path, the record at
  // that address, and a fmt of fd.
  plan::ProbeLayout probe{"syscall:openat", 0, 40 + 8 + 8 + 64 + 16, {}};
  probe.fields.push_back(sampleField("fd", FieldKind::Signed, 40, 8));
  probe.fields.push_back(sampleField("addr", FieldKind::Pointer, 48, 8));
  probe.fields.back().hidden = true;
  probe.fields.push_back(sampleField("path", FieldKind::String, 56, 64));
  probe.fields.push_back(sampleField("req", FieldKind::Record, 120, 16));
  probe.fields.back().address_field = 1;
  probe.fields.push_back(sampleField("msg", FieldKind::Format, 0, 0));
  probe.fields.back().format = "fd %d";
  probe.fields.back().args = {0};
  plan::PacketLayout& packet = probe.packet.emplace();
  packet.skb_field = 1;
  packet.site_field = 0;
  packet.sites = {"ip_rcv"};
  packet.modules = {"vmlinux"};
  packet.frees = {false};
  plan.layout.probes.push_back(probe);

  // The table: keyed by comm; a count, an average, a hist and an lhist.
  plan::AggregateLayout table;
  table.query = 1;
  table.map = "agg_1";
  table.key_size = 16;
  table.keys.push_back(sampleField("comm", FieldKind::String, 0, 16));
  auto slot = [&](std::string name, plan::AggregateKind kind, uint32_t offset) {
    plan::AggregateSlot s;
    s.name = std::move(name);
    s.kind = kind;
    s.offset = offset;
    return s;
  };
  table.slots.push_back(slot("count()", plan::AggregateKind::Count, 0));
  table.slots.push_back(slot("avg(x)", plan::AggregateKind::Avg, 8));
  table.slots.push_back(slot("hist(x)", plan::AggregateKind::Hist, 24));
  table.slots.back().buckets = plan::kHistBuckets;
  table.slots.push_back(slot("lhist(x)", plan::AggregateKind::Lhist, 32 + 8 * plan::kHistBuckets));
  table.slots.back().lo = 0;
  table.slots.back().hi = 100;
  table.slots.back().step = 10;
  table.slots.back().buckets = 12;
  table.value_size = 40 + 8 * plan::kHistBuckets + 8 * 12;  // 664
  table.columns = {{true, 0}, {false, 0}, {false, 1}, {false, 2}, {false, 3}};
  plan.layout.aggregates.push_back(table);

  plan.joins.push_back({"s", 0, "join_0", 0});
  plan.join_counts_map = "join_counts";
  plan.maps = {{"events", "ringbuf", 0, 0, 256 << 10},
               {"lost", "percpu_array", 4, 8, 2 * plan::kLostReasons},
               {"agg_1", "hash", 16, 664, 10240},
               {"join_0", "lru_hash", 8, 16, 10240},
               {"join_counts", "percpu_array", 4, 8, 5}};
  return p;
}

/// What an object compiled with samplePlan() holds (as runtime::objectContents reads it).
inline runtime::ObjectContents sampleContents() {
  runtime::ObjectContents contents;
  contents.programs = {"kq_prog_0", "kq_prog_1", "kq_prog_2"};
  contents.maps = {{"events", BPF_MAP_TYPE_RINGBUF, 0, 0, 256 << 10},
                   {"lost", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 2 * plan::kLostReasons},
                   {"agg_1", BPF_MAP_TYPE_HASH, 16, 664, 10240},
                   {"join_0", BPF_MAP_TYPE_LRU_HASH, 8, 16, 10240},
                   {"join_counts", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 5},
                   {"kq.rodata", BPF_MAP_TYPE_ARRAY, 4, 32, 1}};
  return contents;
}

}  // namespace kq::testing
