// Prometheus' names for what kq serve exports (https://prometheus.io/docs/concepts/data_model/):
// a metric family per aggregate of a script's query, `kq_<script>_<name>`, with the query's
// `group by` keys as labels. A name is the column's `as` name, or the column itself where
// it is already a legal name (`comm`, `pid`; `count()` is `count`); anything else needs an
// `as`, which `kq serve --check` says at the column.
#pragma once

#include <optional>
#include <string>

namespace kq::serve {

/// Whether `name` is a legal label name: [a-zA-Z_][a-zA-Z0-9_]*, not starting with `__`
/// (Prometheus keeps those for itself).
bool isLabelName(const std::string& name);

/// The name a column (an aggregate's header or a key's, as the plan has them) gives its
/// metric or label, or nothing when it needs an `as`.
std::optional<std::string> columnName(const std::string& column);

/// A script's part of its families' names: its file name without `.kq` (an object's
/// without `.o`), with each byte that a metric name cannot hold as `_`
/// (`tcp-retransmits.kq`: `tcp_retransmits`).
std::string scriptName(const std::string& path);

/// `name` with each byte a metric name cannot hold as `_`: the hint a diagnostic gives.
std::string legalSpelling(const std::string& name);

}  // namespace kq::serve
