// Fuzz target: `kq run`'s object reader (runtime/object_check.h). An input that starts as an
// ELF file does is read as `kq run FILE` reads it: `.kq.plan` found, decoded and checked,
// the object's programs and maps read by libbpf, the two compared. Any other input is a
// plan's JSON, compared with an object holding the programs and maps its plan lists, so
// that mutations reach the checks. A plan that passes is then used as the runtime uses it
// (its methods chosen, a record of each probe decoded and printed, each table read), with
// bytes of the input as the kernel's: whatever the checks let through must be safe to run.
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <sstream>
#include <string>

#include "engine/decoder.h"
#include "engine/sinks.h"
#include "engine/table.h"
#include "runtime/attach_methods.h"
#include "runtime/kernel_features.h"
#include "runtime/object_check.h"
#include "runtime/type_dump.h"

namespace {

using namespace kq;

/// The input's bytes, round and round: what the kernel would have written.
struct Bytes {
  const uint8_t* data;
  size_t size;
  size_t next = 0;
  std::vector<uint8_t> take(size_t n) {
    std::vector<uint8_t> out(n);
    for (size_t i = 0; i < n && size; ++i) out[i] = data[next++ % size];
    return out;
  }
};

/// An object holding exactly the programs and maps `plan` lists.
runtime::ObjectContents contentsOf(const plan::ProgramPlan& plan) {
  static const std::map<std::string, uint32_t> types = [] {
    std::map<std::string, uint32_t> out;
    for (uint32_t t = 0; t < 64; ++t) {
      if (const char* name = libbpf_bpf_map_type_str(static_cast<bpf_map_type>(t))) out[name] = t;
    }
    return out;
  }();
  runtime::ObjectContents contents;
  for (const plan::PlannedProgram& p : plan.programs) contents.programs.push_back(p.function);
  for (const plan::PlannedMap& m : plan.maps) {
    auto type = types.find(m.type);
    contents.maps.push_back({m.name, type == types.end() ? 0u : type->second, m.key_size,
                             m.value_size, m.max_entries});
  }
  return contents;
}

struct Host : engine::Symbolizer, engine::FileReader {
  std::string kernel(uint64_t a) override { return "k" + std::to_string(a); }
  std::string user(uint32_t, uint64_t a) override { return "u" + std::to_string(a); }
  std::string text(const std::string& path) override { return path; }
};

struct Kernel : runtime::KernelFeatures {
  std::optional<std::string> missing(plan::Feature) override { return std::nullopt; }
  std::optional<std::string> missing(runtime::Helper, runtime::HelperUse) override { return std::nullopt; }
};

/// One entry of a map, its value's bytes from the input (one copy per CPU when per CPU).
struct OneEntry : engine::TableSource {
  std::vector<uint8_t> key, value;
  bool gone = false;
  bool nextKey(const void* k, void* next) override {
    if (k || gone) return false;
    std::memcpy(next, key.data(), key.size());
    return true;
  }
  bool lookup(const void*, void* v) override {
    std::memcpy(v, value.data(), value.size());
    return true;
  }
  void remove(const void*) override { gone = true; }
  void update(const void*, const void*) override {}
  int cpus() const override { return 2; }
};

/// Runs the plan as far as can be without a kernel.
void runPlan(const plan::ProgramPlan& plan, Bytes& bytes) {
  Kernel kernel;
  runtime::AttachMethods methods(plan, kernel, "");
  (void)methods.firstUnusable();
  for (uint32_t g = 0; g < methods.groups(); ++g) {
    (void)methods.note(g);
    (void)methods.failure(g);
  }
  Host host;
  runtime::TypeDumper types(nullptr);
  engine::PrintContext context{host, types, host, 0};
  engine::RecordDecoder decoder(plan.layout, context);
  std::ostringstream out, err;
  for (engine::OutputFormat format : {engine::OutputFormat::Text, engine::OutputFormat::Json}) {
    std::unique_ptr<engine::Sink> sink = engine::makeSink(format, plan, context, out, err);
    for (uint32_t id = 0; id < plan.layout.probes.size(); ++id) {
      std::vector<uint8_t> record = bytes.take(plan.layout.probes[id].size);
      std::memcpy(record.data() + offsetof(plan::EventHeader, probe_id), &id, sizeof id);
      if (const engine::DecodedEvent* event = decoder.decode(record.data(), record.size())) {
        sink->onEvent(*event);
      }
    }
    for (const plan::AggregateLayout& a : plan.layout.aggregates) {
      OneEntry source;
      source.key = bytes.take(a.key_size);
      size_t copies = a.per_cpu ? source.cpus() : 1;
      source.value = bytes.take((a.value_size + 7) / 8 * 8 * copies);
      sink->onTable(engine::readTable(source, a, engine::TableRead::Drain, decoder, 0, 0, 0));
    }
    sink->onEnd();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool quiet = (libbpf_set_print(nullptr), true);  // libbpf complains of most inputs
  (void)quiet;
  std::optional<plan::PortablePlan> portable;
  if (size >= 4 && std::memcmp(data, "\x7f" "ELF", 4) == 0) {
    runtime::ObjectPlan read = runtime::readObjectPlan(std::vector<char>(data, data + size));
    if ((read.plan != std::nullopt) == !read.error.empty()) __builtin_trap();  // one or the other
    portable = std::move(read.plan);
  } else {
    std::string error;
    portable = plan::decodePlan(std::string(reinterpret_cast<const char*>(data), size), &error);
    if (!portable && error.empty()) __builtin_trap();
    if (portable && !runtime::objectMismatch(portable->plan, contentsOf(portable->plan)).empty()) {
      portable.reset();
    }
  }
  if (portable) {
    Bytes bytes{data, size};
    runPlan(portable->plan, bytes);
  }
  return 0;
}
