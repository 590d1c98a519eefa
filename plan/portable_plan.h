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

/// The version of the encoding below; `kq run` reads only its own. 2: every field of every
/// struct, each query with its own kLostReasons loss counters. 4: a histogram keeps the sum
/// of its values before its buckets; each query's text; an aggregate's unit. 5: each
/// query's name.
inline constexpr int kPlanFormat = 6;

/// A field of a classic tracepoint's record, where the compiled code reads it. These
/// offsets come from the building kernel's tracefs `format` file and are not relocated:
/// `kq run` compares them with the running kernel's.
struct RecordField {
  std::string name;
  uint32_t offset = 0;
  uint32_t size = 0;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("name", self.name...);
    visit("offset", self.offset...);
    visit("size", self.size...);
  }
};
struct TracepointRecord {
  std::string event;  // `syscalls/sys_enter_openat`
  std::vector<RecordField> fields;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("event", self.event...);
    visit("fields", self.fields...);
  }
};

/// A query as `kq serve` describes it: its text, each run of white space one space, for
/// `# HELP`.
struct QuerySource {
  std::string text;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("text", self.text...);
  }
};

struct PortablePlan {
  ProgramPlan plan;
  std::vector<QueryLimits> limits;  // by query number
  std::vector<QuerySource> query_sources;  // by query number
  std::string kq_version;
  /// What the object was compiled against, for people: `Linux 6.18.0 (x86_64)`, or the
  /// BTF file given with --btf.
  std::string built_against;
  /// `uname -m` of the building machine: register arguments are read per architecture.
  std::string machine;
  /// Every classic tracepoint the object attaches to, with its record's fields.
  std::vector<TracepointRecord> tracepoints;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("kq_version", self.kq_version...);
    visit("built_against", self.built_against...);
    visit("machine", self.machine...);
    visit("limits", self.limits...);
    visit("query_sources", self.query_sources...);
    visit("tracepoints", self.tracepoints...);
    visit(kInlined, self.plan...);
  }
};

/// JSON: `format` (kPlanFormat), then every field of `plan` (plan/contract.h).
std::string encodePlan(const PortablePlan& plan);

/// The plan `text` encodes, or nullopt with `error` saying why: another format version,
/// malformed JSON, a field missing, unknown or of the wrong type, or fields that disagree
/// (plan/plan_check.h). What it says of the object's programs and maps is not checked
/// here: runtime/object_check.h compares them with the object.
std::optional<PortablePlan> decodePlan(const std::string& text, std::string* error);

/// decodePlan without plan/plan_check.h's checks: each field read and of its type, no more
/// (for tests of the codec).
std::optional<PortablePlan> decodePlanFields(const std::string& text, std::string* error);

}  // namespace kq::plan
