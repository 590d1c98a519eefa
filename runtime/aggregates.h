// Aggregate queries' results: their maps read back and printed as tables (columns for keys
// and scalar aggregates, histograms beneath their row), as text or one JSON object a table.
#pragma once

#include <cstdint>
#include <ostream>

#include "runtime/event_layout.h"
#include "runtime/formatter.h"

namespace kq::runtime {

class TypeDumper;

/// Prints the table of `layout` from the map `fd`; with `clear`, empties the map after;
/// with `skip_empty`, prints nothing for an empty map; with `max_rows` (a query's `limit`),
/// at most that many rows, the largest first.
void printAggregates(int fd, const AggregateLayout& layout, OutputFormat format,
                     TypeDumper& types, int64_t wall_ns, bool several_queries, std::ostream& out,
                     bool clear, bool skip_empty, uint64_t max_rows = 0);

}  // namespace kq::runtime
