// Recorded bytes for engine tests: records and map entries laid out by hand as the kernel
// writes them, an in-memory map to read tables from, and what a sink prints of them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/sinks.h"
#include "engine/table.h"
#include "plan/event_layout.h"
#include "plan/program_plan.h"
#include "tests/engine/fake_host.h"

namespace kq::engine::testing {

/// Bytes at offsets: a record, a map key, a map value. All zero but what is put.
class Bytes {
 public:
  explicit Bytes(size_t size) : bytes_(size, 0) {}
  Bytes& u64(uint32_t offset, uint64_t value);
  Bytes& u32(uint32_t offset, uint32_t value);
  Bytes& bytes(uint32_t offset, const std::vector<uint8_t>& bytes);
  /// The text's bytes, without a NUL (the rest is zero already).
  Bytes& text(uint32_t offset, const std::string& text);
  const std::vector<uint8_t>& data() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

/// 245.678901234 s after boot: 03:04:05.678901 on kBootOffsetNs's day.
inline constexpr uint64_t kEventTimeNs = 245'678'901'234;

/// A record's plan::EventHeader.
struct Header {
  uint64_t time_ns = kEventTimeNs;
  uint32_t cpu = 1;
  uint32_t pid = 4242;
  uint32_t tid = 4243;
  std::string comm = "curl";
};
Header at(uint64_t time_ns, uint32_t cpu = 1);

/// A record of probe `probe_id`, `size` bytes with its header.
Bytes record(uint32_t probe_id, uint32_t size, const Header& header = {});

plan::FieldLayout field(std::string name, plan::FieldKind kind, uint32_t offset, uint32_t size = 8);
/// `f`, read by other fields only (a struct's address, fmt's arguments, a packet's site).
plan::FieldLayout hidden(plan::FieldLayout f);
/// `f`, from a capture list: shown beneath its event, `name = value`.
plan::FieldLayout capture(plan::FieldLayout f);
/// A probe of query `query` whose records are as long as its fields need.
plan::ProbeLayout probe(std::string name, std::vector<plan::FieldLayout> fields, uint32_t query = 0);

struct Printed {
  std::string out, err;
};

/// The records through a sink as a session drives one: onBegin, each event, onEnd.
Printed printEvents(const plan::ProgramPlan& plan, FakeHost& host, const std::vector<Bytes>& records,
                    OutputFormat format, const TextOptions& options = {});

/// A table through a sink.
Printed printTable(const plan::ProgramPlan& plan, FakeHost& host, const Table& table, OutputFormat format);

/// An aggregate's map in memory: key bytes to value bytes (a per-CPU map's value holds
/// every CPU's copy, each rounded up to 8 bytes, as the kernel hands them over).
class FakeTableSource : public TableSource {
 public:
  explicit FakeTableSource(uint32_t key_size, int cpus = 1) : key_size_(key_size), cpus_(cpus) {}

  std::map<std::vector<uint8_t>, std::vector<uint8_t>> entries;
  /// Every key removed, in order, and every update.
  std::vector<std::vector<uint8_t>> removed;
  int updates = 0;

  void put(const Bytes& key, const Bytes& value) { entries[key.data()] = value.data(); }
  /// A per-CPU value: the copies side by side.
  void put(const Bytes& key, const std::vector<Bytes>& copies);

  bool nextKey(const void* key, void* next) override;
  bool lookup(const void* key, void* value) override;
  void remove(const void* key) override;
  void update(const void* key, const void* value) override;
  int cpus() const override { return cpus_; }

 private:
  std::vector<uint8_t> keyAt(const void* key) const;

  uint32_t key_size_;
  int cpus_;
};

}  // namespace kq::engine::testing
