// The two sinks of the command line: text for people (columns like the bcc tools,
// ksnoop-style typed dumps of captured structs, tables with histograms, a per-packet view)
// and JSON for machines (one object per event, per table and for the summary). Events and
// tables go to `out`; errors and the summary to `err`.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "engine/event_lines.h"
#include "engine/print_context.h"
#include "engine/sink.h"
#include "plan/program_plan.h"

namespace kq::engine {

enum class OutputFormat { Text, Json, Pcapng, Folded, Perfetto };
/// `-f`'s word for a format, or nullopt.
std::optional<OutputFormat> outputFormat(const std::string& word);

std::unique_ptr<Sink> makeTextSink(const plan::ProgramPlan& plan, PrintContext& context,
                                   std::ostream& out, std::ostream& err, const TextOptions& options = {});
/// What a JSON sink's events say besides their own fields: for `kq serve`'s event lines,
/// the script and the host first, every event's query number, and the time as RFC 3339 UTC.
struct JsonOptions {
  std::vector<std::pair<std::string, std::string>> event_fields;
  bool always_query = false;
  bool rfc3339 = false;
};

std::unique_ptr<Sink> makeJsonSink(const plan::ProgramPlan& plan, PrintContext& context,
                                   std::ostream& out, std::ostream& err, JsonOptions options = {});
/// The hidden columns `--packet-bytes` adds to a query of packets (driver/packet_bytes.h),
/// which the pcap-ng sink writes: the bytes from the network header, the packet's length
/// from there, how much of it was readable, the task's network namespace.
inline constexpr const char* kPacketBytesColumn = "packet_bytes";
inline constexpr const char* kPacketLengthColumn = "packet_len";
inline constexpr const char* kPacketLinearColumn = "packet_linear";
inline constexpr const char* kPacketNetnsColumn = "packet_netns";

/// Files for other tools (engine/data_sink.h): packets as pcap-ng, stacks folded for flame
/// graphs, events as a Perfetto timeline.
std::unique_ptr<Sink> makePcapngSink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& out,
                                     std::ostream& err);
std::unique_ptr<Sink> makeFoldedSink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& out,
                                     std::ostream& err);
std::unique_ptr<Sink> makePerfettoSink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& out,
                                       std::ostream& err);

/// What a sink that prints nothing says on `err` (the summary, losses, errors), as the
/// text sink says it: for `kq record -q`, whose events go only into the recording.
std::unique_ptr<Sink> makeSummarySink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& err);

/// An output that keeps nothing: a sink's events go nowhere, what it says to people to `err`.
std::ostream& discardedOutput();

/// How the session ended, before either sink's summary: the -p process exited, the output
/// could not be written.
void sayEnding(const SessionResult& result, std::ostream& err);

std::unique_ptr<Sink> makeSink(OutputFormat format, const plan::ProgramPlan& plan,
                               PrintContext& context, std::ostream& out, std::ostream& err,
                               const TextOptions& options = {});

}  // namespace kq::engine
