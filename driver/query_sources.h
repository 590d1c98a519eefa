// What a plan says of each query besides its code: its `for` and `limit` (kq run honours
// them) and its text (kq serve's `# HELP`). `kq build` writes both into an object; a script
// run directly computes them the same way here.
#pragma once

#include <vector>

#include "compiler/diag/source.h"
#include "compiler/sema/sema.h"
#include "plan/portable_plan.h"
#include "plan/query_limits.h"

namespace kq::driver {

/// Each query's `for` and `limit`, in the order of the script (the plan's query numbers).
std::vector<plan::QueryLimits> queryLimits(const sema::CheckedProgram& checked);

/// Each query's text, white space folded.
std::vector<plan::QuerySource> querySources(const sema::CheckedProgram& checked, const SourceManager& sources);

}  // namespace kq::driver
