#include "record/session_codec.h"

#include <fmt/format.h>

namespace kq::record {
namespace {

using engine::Value;
using engine::ValueKind;

constexpr uint8_t kLastKind = static_cast<uint8_t>(ValueKind::Text);

// Which of a value's parts follow its kind: only those that are not empty or zero.
enum : uint8_t {
  kHasI = 1,
  kHasU = 2,
  kHasText = 4,
  kCut = 8,
  kHasBytes = 16,
  kHasAddresses = 32,
  kHasFrames = 64,
};

void encodeLost(ByteWriter& out, const std::array<uint64_t, plan::kLostReasons>& lost) {
  for (uint64_t n : lost) out.varint(n);
}
void decodeLost(ByteReader& in, std::array<uint64_t, plan::kLostReasons>& lost) {
  for (uint64_t& n : lost) n = in.varint();
}

/// What sinks take for granted of a value of field `f`: a dump holds the field's bytes.
void checkValue(ByteReader& in, const plan::FieldLayout& f, const Value& v) {
  if (v.kind == ValueKind::Record && v.bytes.size() != f.size) {
    in.fail(fmt::format("a dump of `{}` of {} bytes where its field has {}", f.name, v.bytes.size(), f.size));
  }
}

}  // namespace

void encodeValue(ByteWriter& out, const Value& v) {
  uint8_t parts = (v.i ? kHasI : 0) | (v.u ? kHasU : 0) | (v.text.empty() ? 0 : kHasText) |
                  (v.cut ? kCut : 0) | (v.bytes.empty() ? 0 : kHasBytes) |
                  (v.addresses.empty() ? 0 : kHasAddresses) | (v.frames.empty() ? 0 : kHasFrames);
  out.u8(static_cast<uint8_t>(v.kind));
  out.u8(parts);
  if (parts & kHasI) out.svarint(v.i);
  if (parts & kHasU) out.varint(v.u);
  if (parts & kHasText) out.string(v.text);
  if (parts & kHasBytes) out.bytes(v.bytes.data(), v.bytes.size());
  if (parts & kHasAddresses) {
    out.varint(v.addresses.size());
    for (uint64_t a : v.addresses) out.varint(a);
  }
  if (parts & kHasFrames) {
    out.varint(v.frames.size());
    for (const std::string& f : v.frames) out.string(f);
  }
}

void decodeValue(ByteReader& in, Value& v) {
  v = Value{};
  uint8_t kind = in.u8();
  if (kind > kLastKind) return in.fail(fmt::format("a value of unknown kind {}", kind));
  v.kind = static_cast<ValueKind>(kind);
  uint8_t parts = in.u8();
  if (parts & 0x80) return in.fail("a value with unknown parts");
  if (parts & kHasI) v.i = in.svarint();
  if (parts & kHasU) v.u = in.varint();
  if (parts & kHasText) v.text = in.string();
  v.cut = (parts & kCut) != 0;
  if (parts & kHasBytes) v.bytes = in.bytes();
  if (parts & kHasAddresses) {
    v.addresses.resize(in.count());
    for (uint64_t& a : v.addresses) a = in.varint();
  }
  if (parts & kHasFrames) {
    v.frames.resize(in.count());
    for (std::string& f : v.frames) f = in.string();
  }
}

void encodeEvent(ByteWriter& out, const engine::DecodedEvent& event) {
  out.fixed(&event.header, sizeof event.header);
  out.svarint(event.wall_ns);
  out.string(event.comm);
  // Most probes have one name: kept only where the record named its own.
  bool own_name = event.probe && event.probe_name != event.probe->name;
  out.u8(own_name);
  if (own_name) out.string(event.probe_name);
  out.varint(event.values.size());
  for (const Value& v : event.values) encodeValue(out, v);
  // 0: no packet; 1: a packet without a journey (recorded by a kq before journeys); 2: with
  // one; 3: with one and an XDP or TC program's verdict.
  const engine::PacketFacts* packet = event.packet ? &*event.packet : nullptr;
  out.u8(!packet ? 0 : !packet->verdict.empty() ? 3 : packet->journey ? 2 : 1);
  if (packet) {
    out.varint(packet->skb);
    if (packet->journey || !packet->verdict.empty()) out.varint(packet->journey);
    out.varint(packet->site);
    out.u8(packet->is_return);
    out.string(packet->reason);
    if (!packet->verdict.empty()) out.string(packet->verdict);
  }
}

void decodeEvent(ByteReader& in, const plan::ProgramLayout& layout, engine::DecodedEvent& event) {
  in.fixed(&event.header, sizeof event.header);
  if (!in.ok()) return;
  if (event.header.probe_id >= layout.probes.size()) {
    return in.fail(fmt::format("an event of probe {}, which the plan does not have", event.header.probe_id));
  }
  event.probe = &layout.probes[event.header.probe_id];
  event.wall_ns = in.svarint();
  event.comm = in.string();
  event.probe_name = in.u8() ? in.string() : event.probe->name;
  size_t values = in.count(2);
  if (in.ok() && values != event.probe->fields.size()) {
    return in.fail(fmt::format("an event of `{}` with {} values where its layout has {} fields",
                               event.probe->name, values, event.probe->fields.size()));
  }
  event.values.resize(values);
  for (size_t i = 0; i < values && in.ok(); ++i) {
    decodeValue(in, event.values[i]);
    checkValue(in, event.probe->fields[i], event.values[i]);
  }
  event.packet.reset();
  if (uint8_t packet = in.u8()) {
    engine::PacketFacts facts;
    facts.skb = in.varint();
    if (packet >= 2) facts.journey = in.varint();
    facts.site = static_cast<uint32_t>(in.varint());
    facts.is_return = in.u8() != 0;
    facts.reason = in.string();
    if (packet == 3) facts.verdict = in.string();
    // Where a packet was seen is one of its probe's packet sites.
    if (in.ok() && (!event.probe->packet || facts.site >= event.probe->packet->sites.size())) {
      return in.fail(fmt::format("a packet event of `{}` at site {}, which its layout does not have",
                                 event.probe->name, facts.site));
    }
    event.packet = std::move(facts);
  }
}

void encodeTable(ByteWriter& out, const engine::Table& table, uint32_t aggregate) {
  out.varint(aggregate);
  out.svarint(table.wall_ns);
  out.varint(table.rows.size());
  for (const engine::TableRow& row : table.rows) {
    out.varint(row.keys.size());
    for (const Value& k : row.keys) encodeValue(out, k);
    out.varint(row.slots.size());
    for (const engine::AggregateValue& s : row.slots) {
      out.u8(static_cast<uint8_t>((s.scalar ? 1 : 0) | (s.is_unsigned ? 2 : 0)));
      if (s.scalar) out.svarint(*s.scalar);
      out.varint(s.buckets.size());
      for (uint64_t b : s.buckets) out.varint(b);
      out.svarint(s.sum);
    }
  }
  out.varint(table.left_out);
  out.u8(table.events.has_value());
  if (table.events) out.varint(*table.events);
  out.varint(table.cut_keys);
  out.varint(table.cut_at_bytes);
}

void decodeTable(ByteReader& in, const plan::ProgramLayout& layout, engine::Table& table) {
  table = engine::Table{};
  uint64_t aggregate = in.varint();
  if (in.ok() && aggregate >= layout.aggregates.size()) {
    return in.fail(fmt::format("a table of aggregate {}, which the plan does not have", aggregate));
  }
  if (!in.ok()) return;
  const plan::AggregateLayout& a = layout.aggregates[aggregate];
  table.layout = &a;
  table.wall_ns = in.svarint();
  table.rows.resize(in.count(2));
  for (engine::TableRow& row : table.rows) {
    row.keys.resize(in.count(2));
    for (size_t k = 0; k < row.keys.size() && in.ok(); ++k) {
      decodeValue(in, row.keys[k]);
      if (k < a.keys.size()) checkValue(in, a.keys[k], row.keys[k]);
    }
    row.slots.resize(in.count(3));
    if (in.ok() && (row.keys.size() != a.keys.size() || row.slots.size() != a.slots.size())) {
      return in.fail(fmt::format("a row of {} keys and {} aggregates where its table has {} and {}",
                                 row.keys.size(), row.slots.size(), a.keys.size(), a.slots.size()));
    }
    for (engine::AggregateValue& s : row.slots) {
      uint8_t flags = in.u8();
      if (flags & 1) s.scalar = in.svarint();
      s.is_unsigned = (flags & 2) != 0;
      s.buckets.resize(in.count());
      for (uint64_t& b : s.buckets) b = in.varint();
      s.sum = in.svarint();
    }
  }
  table.left_out = in.varint();
  if (in.u8()) table.events = in.varint();
  table.cut_keys = in.varint();
  table.cut_at_bytes = static_cast<uint32_t>(in.varint());
}

void encodeStats(ByteWriter& out, const engine::QueryStats& stats) {
  out.varint(stats.events);
  out.varint(stats.printed);
  out.varint(stats.not_shown);
  encodeLost(out, stats.lost);
  out.u8(stats.ended);
}

void decodeStats(ByteReader& in, engine::QueryStats& stats) {
  stats.events = in.varint();
  stats.printed = in.varint();
  stats.not_shown = in.varint();
  decodeLost(in, stats.lost);
  stats.ended = in.u8() != 0;
}

void encodeResult(ByteWriter& out, const engine::SessionResult& result) {
  out.varint(result.events);
  out.varint(result.not_shown);
  encodeLost(out, result.lost);
  out.varint(result.queries.size());
  for (const engine::QueryStats& q : result.queries) encodeStats(out, q);
  out.string(result.output_failure);
  out.u8(static_cast<uint8_t>((result.reader_gone ? 1 : 0) | (result.traced_exited ? 2 : 0)));
  out.varint(result.traced_pid);
  out.varint(result.joins.size());
  for (const engine::JoinResult& j : result.joins) {
    out.string(j.name);
    out.varint(j.query);
    for (uint64_t n : {j.kept, j.matched, j.unmatched, j.expired, j.waiting, j.evicted, j.replaced}) out.varint(n);
  }
}

void decodeResult(ByteReader& in, engine::SessionResult& result) {
  result = engine::SessionResult{};
  result.events = in.varint();
  result.not_shown = in.varint();
  decodeLost(in, result.lost);
  result.queries.resize(in.count(plan::kLostReasons + 4));
  for (engine::QueryStats& q : result.queries) decodeStats(in, q);
  result.output_failure = in.string();
  uint8_t flags = in.u8();
  result.reader_gone = (flags & 1) != 0;
  result.traced_exited = (flags & 2) != 0;
  result.traced_pid = static_cast<uint32_t>(in.varint());
  result.joins.resize(in.count(9));
  for (engine::JoinResult& j : result.joins) {
    j.name = in.string();
    j.query = static_cast<uint32_t>(in.varint());
    for (uint64_t* n : {&j.kept, &j.matched, &j.unmatched, &j.expired, &j.waiting, &j.evicted, &j.replaced}) {
      *n = in.varint();
    }
  }
}

}  // namespace kq::record
