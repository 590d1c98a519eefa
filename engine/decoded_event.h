// What a record says, as typed values: the decoder (engine/decoder.h) turns the bytes of an
// event (or of a table's key) into these, once, with the host facts they need (symbols,
// files, the clock) already looked up; sinks (engine/sink.h) render them. The event's
// layout is its schema: value i is field i of its ProbeLayout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/event_layout.h"

namespace kq::engine {

enum class ValueKind : uint8_t {
  Missing,    // hidden (read by other fields only) or past the end of the record
  Int,        // a signed integer: `i`
  Uint,       // an unsigned integer: `u` (shown in hex for hex() and pointers)
  Bool,       // `u` is 0 or 1
  String,     // `text`, with `cut` when it filled its field (longer in the kernel)
  Bytes,      // buf(p, n): `bytes`, and `text` with the unprintable ones as `\xNN`
  Address,    // `u`, and `text` its symbol (ksym, usym) or its hex
  Name,       // an enumerator, errno or table name for the number `i`: `text`
  IpAddress,  // `bytes` in network order (4 or 16), `text` as people write it
  Record,     // a struct's captured `bytes`, of the field's BTF type, read at address `u`
  Stack,      // return addresses `addresses`, and `frames` (their symbols, innermost first)
  Text,       // text made when printed (fmt, cat, join, strftime): `text`
};

struct Value {
  ValueKind kind = ValueKind::Missing;
  int64_t i = 0;
  uint64_t u = 0;
  std::string text;
  bool cut = false;
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> addresses;
  std::vector<std::string> frames;
};

/// Where a `packet` probe's event was seen (plan::PacketLayout's hidden fields).
struct PacketFacts {
  uint64_t skb = 0;
  uint32_t site = 0;
  bool is_return = false;
  std::string reason;  // a drop's reason by name, or empty
  /// The packet's journey, kept by the kernel (clones share it); 0 from a plan without one.
  uint64_t journey = 0;
  std::string verdict;  // an XDP or TC program's (`XDP_DROP`, `TC_ACT_SHOT`), or empty
};

struct DecodedEvent {
  plan::EventHeader header{};
  int64_t wall_ns = 0;  // the header's time as wall-clock time
  std::string comm;
  const plan::ProbeLayout* probe = nullptr;
  /// The probe's name: its layout's, or, for a probe of many names (a syscall glob served
  /// by one program: plan::ProbeLayout::name_field), this record's (`syscall:openat`).
  std::string probe_name;
  /// One per field of `probe`, in its order.
  std::vector<Value> values;
  std::optional<PacketFacts> packet;
};

}  // namespace kq::engine
