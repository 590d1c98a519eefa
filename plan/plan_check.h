// What a plan must say to be run: its fields agree with one another. A field lies inside
// its record and is as large as its kind is read, an index names something that exists, a
// query number is below the number of queries, a histogram has the buckets its bounds make.
// The runtime trusts a plan no further than this; what a plan says of its object's programs
// and maps is compared with the object by runtime/object_check.h.
#pragma once

#include <string>

#include "plan/portable_plan.h"

namespace kq::plan {

/// The first disagreement in `plan`, starting with the path of the field it is about
/// (`probes[0].fields[2].offset is 60, ...`), or empty.
std::string planProblem(const PortablePlan& plan);

/// `text` (a name read from a plan) as a message shows it: control characters as `\xNN`,
/// cut after 64 bytes.
std::string shownName(const std::string& text);

}  // namespace kq::plan
