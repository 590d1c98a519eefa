// What `kq run` needs besides the BPF object: the program plan and event layouts, each
// query's `for` and `limit`, and what the object was compiled against, written by `kq
// build` as JSON into the object's `.kq.plan` section (runtime/object_file.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/program_plan.h"
#include "plan/query_limits.h"

namespace kq::plan {

/// The version of the encoding below; `kq run` reads only its own.
inline constexpr int kPlanFormat = 1;

/// A field of a classic tracepoint's record, where the compiled code reads it. These
/// offsets come from the building kernel's tracefs `format` file and are not relocated:
/// `kq run` compares them with the running kernel's.
struct RecordField {
  std::string name;
  uint32_t offset = 0;
  uint32_t size = 0;
};
struct TracepointRecord {
  std::string event;  // `syscalls/sys_enter_openat`
  std::vector<RecordField> fields;
};

struct PortablePlan {
  ProgramPlan plan;
  std::vector<QueryLimits> queries;  // by query number
  std::string kq_version;
  /// What the object was compiled against, for people: `Linux 6.18.0 (x86_64)`, or the
  /// BTF file given with --btf.
  std::string built_against;
  /// `uname -m` of the building machine: register arguments are read per architecture.
  std::string machine;
  /// Every classic tracepoint the object attaches to, with its record's fields.
  std::vector<TracepointRecord> tracepoints;
};

std::string encodePlan(const PortablePlan& plan);

/// The plan `text` encodes, or nullopt with `error` saying why: another format version,
/// malformed JSON, or a layout whose fields lie outside their records.
std::optional<PortablePlan> decodePlan(const std::string& text, std::string* error);

}  // namespace kq::plan
