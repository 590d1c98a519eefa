// What `kq serve` (and `kq serve --check`) asks of a script beyond `kq check`: its aggregate
// queries go without `every` (a scrape reads everything counted since the script started;
// Prometheus computes rates), and each `group by` key and
// aggregate has a name Prometheus accepts (metric_names.h), said at the column with the
// `as` that would do.
#pragma once

#include <set>
#include <string>

#include "compiler/diag/diagnostic.h"
#include "compiler/sema/sema.h"

namespace kq::serve {

/// Reports what keeps `checked` from being served; false when it did.
bool checkServable(const sema::CheckedProgram& checked, Diagnostics& diags);

/// The aggregates of `query` (by column name) whose values are nanoseconds of time:
/// `duration`, `time - x.time`. They are exported in seconds, named `..._seconds`.
std::set<std::string> durationColumns(const sema::ResolvedQuery& query);

}  // namespace kq::serve
