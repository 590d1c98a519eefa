// `-f perfetto`: a timeline in the Chrome trace-event JSON that ui.perfetto.dev and
// chrome://tracing open. Each event is a slice on its thread's track: an event with a
// `duration` column (entry to return, `select duration`) lasts from its entry to its time;
// the calls of `trace packet graph` last from each function's entry to its return; other
// events are instants. Each slice's args are the event's columns; each thread is named by
// its comm. Written as the events come; the closing bracket when the session ends.
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/data_sink.h"

namespace kq::engine {
namespace {

using Json = nlohmann::ordered_json;

/// Microseconds, as the format counts them, to the nanosecond.
double micros(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

Json argument(const Value& v) {
  switch (v.kind) {
    case ValueKind::Int: return v.i;
    case ValueKind::Uint:
    case ValueKind::Bool: return v.u;
    case ValueKind::Stack: return v.frames;
    default: return v.text;
  }
}

class PerfettoSink : public DataSink {
 public:
  using DataSink::DataSink;

  void onBegin() override { out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"; }

  void onEvent(const DecodedEvent& e) override {
    Json args = Json::object();
    std::optional<int64_t> duration;
    for (size_t i = 0; i < e.values.size() && i < e.probe->fields.size(); ++i) {
      const plan::FieldLayout& f = e.probe->fields[i];
      if (f.hidden || e.values[i].kind == ValueKind::Missing) continue;
      if (f.name == "duration" && (e.values[i].kind == ValueKind::Int || e.values[i].kind == ValueKind::Uint)) {
        duration = e.values[i].kind == ValueKind::Int ? e.values[i].i : static_cast<int64_t>(e.values[i].u);
      }
      args[f.name] = argument(e.values[i]);
    }
    nameThread(e);
    Json slice = {{"name", e.probe_name}, {"cat", "kq"}, {"pid", e.header.pid}, {"tid", e.header.tid}};
    if (e.packet && e.probe->packet) {
      const plan::PacketLayout& p = *e.probe->packet;
      if (e.packet->site < p.sites.size()) slice["name"] = p.sites[e.packet->site];
      args["skb"] = fmt::format("0x{:x}", e.packet->skb);
      if (e.packet->journey) args["journey"] = fmt::format("0x{:x}", e.packet->journey);
      if (!e.packet->reason.empty()) args["drop"] = e.packet->reason;
      if (!e.packet->verdict.empty()) args["verdict"] = e.packet->verdict;
      if (p.graph) {
        slice["ph"] = e.packet->is_return ? "E" : "B";
        slice["ts"] = micros(e.wall_ns);
        if (!e.packet->is_return) slice["args"] = args;
        write(slice);
        return;
      }
    }
    if (duration && *duration >= 0) {
      slice["ph"] = "X";
      slice["ts"] = micros(e.wall_ns - *duration);
      slice["dur"] = micros(*duration);
    } else {
      slice["ph"] = "i";
      slice["s"] = "t";
      slice["ts"] = micros(e.wall_ns);
    }
    slice["args"] = args;
    write(slice);
  }

  void onSummary(const SessionResult& result) override {
    out_ << "\n]}\n";
    out_.flush();
    DataSink::onSummary(result);
  }

 private:
  void nameThread(const DecodedEvent& e) {
    if (!named_.insert(e.header.tid).second) return;
    write({{"name", "thread_name"}, {"ph", "M"}, {"pid", e.header.pid}, {"tid", e.header.tid},
           {"args", {{"name", e.comm}}}});
  }
  void write(const Json& j) {
    out_ << (first_ ? "" : ",\n") << j.dump(-1, ' ', false, Json::error_handler_t::replace);
    first_ = false;
  }

  std::set<uint32_t> named_;
  bool first_ = true;
};

}  // namespace

std::unique_ptr<Sink> makePerfettoSink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& out,
                                       std::ostream& err) {
  return std::make_unique<PerfettoSink>(plan, context, out, err);
}

}  // namespace kq::engine
