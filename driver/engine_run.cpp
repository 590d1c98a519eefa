#include "driver/engine_run.h"

#include <unistd.h>

#include <fmt/format.h>

#include "engine/sinks.h"
#include "kq_version.h"
#include "engine/tee_sink.h"
#include "record/recorder.h"
#include "runtime/fd_output.h"

namespace kq::driver {

RunEnvironment::RunEnvironment(Io& io) : io_(io) {
  host_ = io.host;
  if (!host_) {
    own_host_ = std::make_unique<engine::Host>();
    host_ = own_host_.get();
  }
  stop_ = io.stop;
  if (!stop_) {
    own_stop_ = std::make_unique<engine::Cancellation>();
    stop_ = own_stop_.get();
    signals_.emplace(*stop_);
  }
  runtime::setOutputStopFd(io.out, stop_->fd());
}

RunEnvironment::~RunEnvironment() {
  io_.out.flush();
  runtime::setOutputStopFd(io_.out, -1);
}

engine::TextOptions textOptions(const Request& request) {
  engine::TextOptions text;
  if (!request.prefix.empty()) {
    std::string error;
    text.prefix = engine::parsePrefix(request.prefix, &error);  // checked by the command line
  }
  text.packets = engine::parsePacketView(request.packet_view).value_or(engine::PacketView::Both);
  text.full_structs = request.structs == "full";
  return text;
}

int dryRunReport(const runtime::LoadedObject& object, const plan::ProgramPlan& plan, Io& io) {
  for (const std::string& note : object.notes()) io.out << note << "\n";
  for (const std::string& line : object.readyLines(plan)) io.out << line << "\n";
  size_t programs = object.programFds().size();
  io.out << fmt::format("dry run: {} {} loaded, {} {} attached; detached, nothing ran\n", programs,
                        programs == 1 ? "program" : "programs", object.attachedLinks(),
                        object.attachedLinks() == 1 ? "link" : "links");
  return 0;
}

namespace {

/// What `kq record` says of the run in its recording.
record::RecordingMeta recordingMeta(const Request& request, const std::vector<plan::QuerySource>& sources) {
  record::RecordingMeta meta;
  record::describeHost(meta);
  meta.kq_version = KQ_VERSION;
  for (const plan::QuerySource& s : sources) meta.queries.push_back(s.text);
  meta.format = request.format;
  meta.prefix = request.prefix;
  meta.packet_view = request.packet_view;
  meta.structs = request.structs;
  meta.stack_offsets = request.stack_offsets;
  meta.packet_bytes = request.packet_bytes;
  return meta;
}

}  // namespace

engine::SessionResult runSession(engine::Engine& engine, runtime::LoadedObject& object,
                                 const plan::ProgramPlan& plan, runtime::KernelTypes* types,
                                 const Request& request, engine::SessionOptions options,
                                 engine::Cancellation& stop, Io& io,
                                 const std::vector<plan::QuerySource>& sources) {
  engine::OutputFormat format = engine::outputFormat(request.format).value_or(engine::OutputFormat::Text);
  engine::TextOptions text = textOptions(request);
  options.key_stack_offsets = request.stack_offsets;
  if (request.record_path.empty()) {
    return engine.run(
        object, plan, types,
        [&](engine::PrintContext& context) { return engine::makeSink(format, plan, context, io.out, io.err, text); },
        stop, std::move(options));
  }

  // `kq record`: everything left in the ring buffer at the end is recorded, not counted.
  options.drain_at_end = true;
  plan::PortablePlan portable;
  portable.plan = plan;
  portable.limits = options.queries;
  portable.query_sources = sources;
  portable.kq_version = KQ_VERSION;
  record::Recorder* recorder = nullptr;
  engine::SessionResult failed;
  bool began = true;
  engine::SessionResult result = engine.run(
      object, portable.plan, types,
      [&](engine::PrintContext& context) -> std::unique_ptr<engine::Sink> {
        Result<std::unique_ptr<record::RecordingWriter>> writer = record::RecordingWriter::create(request.record_path);
        record::RecorderOptions recording;
        recording.max_bytes = request.max_size.empty() ? 0 : byteSize(request.max_size).value_or(0);
        recording.err = &io.err;
        recording.progress = io.err_is_terminal && (request.quiet || isatty(STDOUT_FILENO) != 1);
        recording.stop = [&stop] { stop.cancel(); };
        Result<std::unique_ptr<record::Recorder>> made =
            writer ? record::Recorder::begin(writer.take(), portable, recordingMeta(request, sources), context,
                                             std::move(recording))
                   : Result<std::unique_ptr<record::Recorder>>(writer.error());
        if (!made) {
          io.err << "kq record: error: " << made.error().message << "\n";
          began = false;
          stop.cancel();
          return engine::makeSink(format, portable.plan, context, io.out, io.err, text);
        }
        recorder = made->get();
        // -q: nothing printed but what is said on standard error (the summary, losses).
        std::unique_ptr<engine::Sink> printed =
            request.quiet ? engine::makeSummarySink(portable.plan, context, io.err)
                          : engine::makeSink(format, portable.plan, context, io.out, io.err, text);
        return std::make_unique<engine::TeeSink>(std::move(printed), made.take());
      },
      stop, std::move(options), [&](engine::Session& session) {
        if (recorder) recorder->watch(session);
      });
  if (!began) result.output_failure = "the recording could not be written";
  return result;
}

}  // namespace kq::driver
