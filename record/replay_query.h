// A new query over a recording's events, run in user space (`kq replay FILE 'where ...
// group by ... select ...'`): which recorded probes it reads (`trace PROBE, ...`, or all),
// joins between recorded sources, a filter, new columns, new aggregates (count, sum, avg,
// min, max, hist, lhist, top), each interval of `every` by the events' own times, `limit`. Its names are the recorded
// fields (an expression written as a recorded column was, `str(filename)`, is that column)
// and the events' own: time, cpu, pid, tid, comm, probe. A name the recording does not hold
// is an error at its place that says what it does hold. Tables print as the live ones do,
// counted with the kernel's arithmetic (engine/table.h countInto).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "engine/event_lines.h"
#include "engine/print_context.h"
#include "engine/sinks.h"
#include "plan/event_layout.h"

namespace kq::record {

class Recording;

/// The names a new query can read in probe `p`'s events: the events' own, then its fields.
std::vector<std::string> replayFieldNames(const plan::ProbeLayout& p);

/// Runs `query` (diagnostics call it `name`) over `recording`'s events, printing to `out` (`err`: diagnostics, the
/// summary). 0, or 1 when the query is wrong (diagnostics said why) or the file unreadable.
int replayQuery(Recording& recording, const std::string& name, const std::string& query, engine::OutputFormat format,
                const engine::TextOptions& text, engine::PrintContext& context, std::ostream& out,
                std::ostream& err, const std::string& color);

}  // namespace kq::record
