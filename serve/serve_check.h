// What `kq serve` (and `kq serve --check`) asks of a script beyond `kq check`: its aggregate
// queries go without `every` (a scrape reads everything counted since the script started;
// Prometheus computes rates), and each `group by` key and
// aggregate has a name Prometheus accepts (metric_names.h), said at the column with the
// `as` that would do. An object built by `kq build` is held to the same from its plan.
#pragma once

#include <string>
#include <vector>

#include "compiler/diag/diagnostic.h"
#include "compiler/sema/sema.h"
#include "plan/portable_plan.h"

namespace kq::serve {

/// Reports what keeps `checked` from being served; false when it did.
bool checkServable(const sema::CheckedProgram& checked, Diagnostics& diags);

/// What keeps an object `kq build` wrote from being served, as `checkServable` asks of a
/// script, from the names its plan keeps (there is no source to point at); empty when
/// nothing does.
std::vector<std::string> servingProblems(const plan::PortablePlan& plan);

}  // namespace kq::serve
