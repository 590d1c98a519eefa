#include "driver/engine_run.h"

#include "engine/sinks.h"
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

engine::SessionResult runSession(engine::Engine& engine, runtime::LoadedObject& object,
                                 const plan::ProgramPlan& plan, runtime::KernelTypes* types,
                                 const Request& request, engine::SessionOptions options,
                                 engine::Cancellation& stop, Io& io) {
  engine::OutputFormat format =
      request.format == "json" ? engine::OutputFormat::Json : engine::OutputFormat::Text;
  engine::TextOptions text;
  if (!request.prefix.empty()) {
    std::string error;
    text.prefix = engine::parsePrefix(request.prefix, &error);  // checked by the command line
  }
  text.packets = engine::parsePacketView(request.packet_view).value_or(engine::PacketView::Both);
  text.full_structs = request.structs == "full";
  options.key_stack_offsets = request.stack_offsets;
  return engine.run(
      object, plan, types,
      [&](engine::PrintContext& context) { return engine::makeSink(format, plan, context, io.out, io.err, text); },
      stop, std::move(options));
}

}  // namespace kq::driver
