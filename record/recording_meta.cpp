#include "record/recording_meta.h"

#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kq::record {
namespace {

using Json = nlohmann::json;

template <class T>
bool read(const Json& j, const char* key, T& out, std::string* error) {
  auto it = j.find(key);
  if (it == j.end()) {
    *error = fmt::format("its meta block has no `{}`", key);
    return false;
  }
  try {
    out = it->get<T>();
  } catch (const Json::exception&) {
    *error = fmt::format("its meta block's `{}` is of the wrong type", key);
    return false;
  }
  return true;
}

int64_t clockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

std::string encodeMeta(const RecordingMeta& m) {
  Json j = {
      {"kq_version", m.kq_version},       {"kernel_release", m.kernel_release},
      {"machine", m.machine},             {"hostname", m.hostname},
      {"boot_id", m.boot_id},             {"cpus", m.cpus},
      {"boot_offset_ns", m.boot_offset_ns}, {"started_ns", m.started_ns},
      {"queries", m.queries},             {"format", m.format},
      {"prefix", m.prefix},               {"packet_view", m.packet_view},
      {"structs", m.structs},             {"stack_offsets", m.stack_offsets},
      {"packet_bytes", m.packet_bytes},
  };
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::optional<RecordingMeta> decodeMeta(const std::string& text, std::string* error) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "its meta block is not a JSON object";
    return std::nullopt;
  }
  RecordingMeta m;
  bool ok = read(j, "kq_version", m.kq_version, error) && read(j, "kernel_release", m.kernel_release, error) &&
            read(j, "machine", m.machine, error) && read(j, "hostname", m.hostname, error) &&
            read(j, "boot_id", m.boot_id, error) && read(j, "cpus", m.cpus, error) &&
            read(j, "boot_offset_ns", m.boot_offset_ns, error) && read(j, "started_ns", m.started_ns, error) &&
            read(j, "queries", m.queries, error) && read(j, "format", m.format, error) &&
            read(j, "prefix", m.prefix, error) && read(j, "packet_view", m.packet_view, error) &&
            read(j, "structs", m.structs, error) && read(j, "stack_offsets", m.stack_offsets, error) &&
            read(j, "packet_bytes", m.packet_bytes, error);
  if (!ok) return std::nullopt;
  if (m.format != "text" && m.format != "json" && m.format != "pcapng" && m.format != "folded" &&
      m.format != "perfetto") {
    *error = fmt::format("its meta block names an unknown format `{}`", m.format);
    return std::nullopt;
  }
  return m;
}

void describeHost(RecordingMeta& meta) {
  utsname u{};
  if (uname(&u) == 0) {
    meta.kernel_release = u.release;
    meta.machine = u.machine;
    meta.hostname = u.nodename;
  }
  std::ifstream boot_id("/proc/sys/kernel/random/boot_id");
  std::getline(boot_id, meta.boot_id);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  meta.cpus = cpus > 0 ? static_cast<uint32_t>(cpus) : 0;
  meta.started_ns = clockNs(CLOCK_REALTIME);
  meta.boot_offset_ns = meta.started_ns - clockNs(CLOCK_MONOTONIC);
}

}  // namespace kq::record
