// The two sinks of the command line: text for people (columns like the bcc tools,
// ksnoop-style typed dumps of captured structs, tables with histograms, a per-packet view)
// and JSON for machines (one object per event, per table and for the summary). Events and
// tables go to `out`; errors and the summary to `err`.
#pragma once

#include <memory>
#include <ostream>

#include "engine/print_context.h"
#include "engine/sink.h"
#include "plan/program_plan.h"

namespace kq::engine {

enum class OutputFormat { Text, Json };

std::unique_ptr<Sink> makeTextSink(const plan::ProgramPlan& plan, PrintContext& context,
                                   std::ostream& out, std::ostream& err);
std::unique_ptr<Sink> makeJsonSink(const plan::ProgramPlan& plan, PrintContext& context,
                                   std::ostream& out, std::ostream& err);
/// How the session ended, before either sink's summary: the -p process exited, the output
/// could not be written.
void sayEnding(const SessionResult& result, std::ostream& err);

std::unique_ptr<Sink> makeSink(OutputFormat format, const plan::ProgramPlan& plan,
                               PrintContext& context, std::ostream& out, std::ostream& err);

}  // namespace kq::engine
