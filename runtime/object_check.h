// `kq run`'s reader of kq objects: the plan in `.kq.plan` decoded and checked, then compared
// with the object it came in. Every program the plan names must be one of the object's,
// every map it names must be there with the type and sizes the runtime reads it with (as
// the object's own map definitions say, not the plan): nothing the runtime later does with
// an edited or foreign plan can read past a buffer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/portable_plan.h"

namespace kq::runtime {

/// A map as libbpf reads its definition from the object, before anything is loaded.
struct ObjectMap {
  std::string name;
  uint32_t type = 0;  // enum bpf_map_type
  uint32_t key_size = 0;
  uint32_t value_size = 0;
  uint32_t max_entries = 0;
};

/// The programs and maps of a BPF object.
struct ObjectContents {
  std::vector<std::string> programs;
  std::vector<ObjectMap> maps;
};

/// What libbpf finds in `elf` when it opens it without loading, or nullopt with `error`.
std::optional<ObjectContents> objectContents(const std::vector<char>& elf, std::string* error);

/// The first thing `plan` says of the object that `contents` contradicts, starting with the
/// path of the field it is about (`aggregates[0].per_cpu is false but map `agg_0` is a
/// per-CPU hash`), or empty.
std::string objectMismatch(const plan::ProgramPlan& plan, const ObjectContents& contents);

/// A kq object read for `kq run`.
struct ObjectPlan {
  std::optional<plan::PortablePlan> plan;  // set when it can be run
  std::string error;                       // why not
  bool has_plan = false;                   // it has a `.kq.plan` section (`kq build` wrote it)
};

/// The plan of the kq object `elf`: its `.kq.plan` section decoded (plan/portable_plan.h),
/// checked (plan/plan_check.h) and compared with the object (objectMismatch).
ObjectPlan readObjectPlan(const std::vector<char>& elf);

}  // namespace kq::runtime
