#include "tests/engine/recorded.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "engine/decoder.h"

namespace kq::engine::testing {

Bytes& Bytes::u64(uint32_t offset, uint64_t value) {
  if (offset + 8 > bytes_.size()) throw std::out_of_range("u64 past the end");
  std::memcpy(bytes_.data() + offset, &value, 8);
  return *this;
}

Bytes& Bytes::u32(uint32_t offset, uint32_t value) {
  if (offset + 4 > bytes_.size()) throw std::out_of_range("u32 past the end");
  std::memcpy(bytes_.data() + offset, &value, 4);
  return *this;
}

Bytes& Bytes::bytes(uint32_t offset, const std::vector<uint8_t>& bytes) {
  if (offset + bytes.size() > bytes_.size()) throw std::out_of_range("bytes past the end");
  std::copy(bytes.begin(), bytes.end(), bytes_.begin() + offset);
  return *this;
}

Bytes& Bytes::text(uint32_t offset, const std::string& text) {
  return bytes(offset, std::vector<uint8_t>(text.begin(), text.end()));
}

Header at(uint64_t time_ns, uint32_t cpu) {
  Header h;
  h.time_ns = time_ns;
  h.cpu = cpu;
  return h;
}

Bytes record(uint32_t probe_id, uint32_t size, const Header& header) {
  plan::EventHeader h{};
  h.time_ns = header.time_ns;
  h.probe_id = probe_id;
  h.cpu = header.cpu;
  h.pid = header.pid;
  h.tid = header.tid;
  std::memcpy(h.comm, header.comm.data(), std::min(header.comm.size(), sizeof h.comm));
  const auto* p = reinterpret_cast<const uint8_t*>(&h);
  Bytes bytes(size);
  bytes.bytes(0, std::vector<uint8_t>(p, p + sizeof h));
  return bytes;
}

plan::FieldLayout field(std::string name, plan::FieldKind kind, uint32_t offset, uint32_t size) {
  plan::FieldLayout f;
  f.name = std::move(name);
  f.kind = kind;
  f.offset = offset;
  f.size = size;
  return f;
}

plan::FieldLayout hidden(plan::FieldLayout f) {
  f.hidden = true;
  return f;
}

plan::FieldLayout capture(plan::FieldLayout f) {
  f.is_capture = true;
  return f;
}

plan::ProbeLayout probe(std::string name, std::vector<plan::FieldLayout> fields, uint32_t query) {
  plan::ProbeLayout p;
  p.name = std::move(name);
  p.query = query;
  p.fields = std::move(fields);
  p.size = sizeof(plan::EventHeader);
  for (const plan::FieldLayout& f : p.fields) p.size = std::max(p.size, f.offset + f.size);
  return p;
}

Printed printEvents(const plan::ProgramPlan& plan, FakeHost& host, const std::vector<Bytes>& records,
                    OutputFormat format, const TextOptions& options) {
  std::ostringstream out, err;
  std::unique_ptr<Sink> sink = makeSink(format, plan, host.context(), out, err, options);
  RecordDecoder decoder(plan.layout, host.context());
  sink->onBegin();
  for (const Bytes& r : records) {
    const DecodedEvent* event = decoder.decode(r.data().data(), r.data().size());
    if (!event) throw std::runtime_error("a record the layout does not decode");
    sink->onEvent(*event);
  }
  sink->onEnd();
  return {out.str(), err.str()};
}

Printed printTable(const plan::ProgramPlan& plan, FakeHost& host, const Table& table, OutputFormat format) {
  std::ostringstream out, err;
  makeSink(format, plan, host.context(), out, err)->onTable(table);
  return {out.str(), err.str()};
}

void FakeTableSource::put(const Bytes& key, const std::vector<Bytes>& copies) {
  std::vector<uint8_t> value;
  for (const Bytes& copy : copies) {
    value.insert(value.end(), copy.data().begin(), copy.data().end());
    value.resize((value.size() + 7) / 8 * 8);
  }
  entries[key.data()] = value;
}

std::vector<uint8_t> FakeTableSource::keyAt(const void* key) const {
  const auto* p = static_cast<const uint8_t*>(key);
  return std::vector<uint8_t>(p, p + key_size_);
}

bool FakeTableSource::nextKey(const void* key, void* next) {
  auto it = key ? entries.upper_bound(keyAt(key)) : entries.begin();
  if (it == entries.end()) return false;
  std::memcpy(next, it->first.data(), key_size_);
  return true;
}

bool FakeTableSource::lookup(const void* key, void* value) {
  auto it = entries.find(keyAt(key));
  if (it == entries.end()) return false;
  std::memcpy(value, it->second.data(), it->second.size());
  return true;
}

void FakeTableSource::remove(const void* key) {
  removed.push_back(keyAt(key));
  entries.erase(keyAt(key));
}

void FakeTableSource::update(const void* key, const void* value) {
  ++updates;
  auto it = entries.find(keyAt(key));
  if (it == entries.end()) throw std::logic_error("an update of a key the map does not hold");
  std::memcpy(it->second.data(), value, it->second.size());
}

}  // namespace kq::engine::testing
