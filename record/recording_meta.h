// What a recording says of where and how it was made (its Meta block, JSON): the host, the
// kq that recorded, the queries, and how the live run printed, so that a replay prints the
// same unless told otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kq::record {

struct RecordingMeta {
  std::string kq_version;
  std::string kernel_release;  // uname -r
  std::string machine;         // uname -m
  std::string hostname;
  std::string boot_id;  // /proc/sys/kernel/random/boot_id
  uint32_t cpus = 0;    // online when it began
  int64_t boot_offset_ns = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC: the boot's wall-clock time
  int64_t started_ns = 0;      // wall-clock time when it began
  std::vector<std::string> queries;  // each query's text, white space folded
  // How the live run printed (-f, --prefix, --packet-view, --structs, --stack-offsets).
  std::string format = "text";
  std::string prefix;
  std::string packet_view = "both";
  std::string structs = "compact";
  bool stack_offsets = false;
  uint32_t packet_bytes = 0;  // --packet-bytes
};

std::string encodeMeta(const RecordingMeta& meta);
/// The meta `json` encodes, or nullopt with `error` saying which field is missing or wrong.
std::optional<RecordingMeta> decodeMeta(const std::string& json, std::string* error);

/// This machine's facts (release, name, boot id, CPUs, clocks) in `meta`.
void describeHost(RecordingMeta& meta);

}  // namespace kq::record
