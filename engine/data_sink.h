// What the sinks of files for other tools (pcap-ng, folded stacks, a Perfetto timeline)
// share: their data goes to `out`, and everything said to people (errors, losses, the
// summary) is said on `err` exactly as the text sink says it, by a text sink whose own
// output goes nowhere.
#pragma once

#include <memory>
#include <ostream>

#include "engine/print_context.h"
#include "engine/sink.h"
#include "engine/sinks.h"
#include "plan/program_plan.h"
#include "runtime/fd_output.h"

namespace kq::engine {

class DataSink : public Sink {
 public:
  DataSink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& out, std::ostream& err)
      : out_(out), words_(makeTextSink(plan, context, discardedOutput(), err)) {}

  void onTable(const Table& table) override { words_->onTable(table); }
  void onQueryEnd(uint32_t query, const QueryStats& stats) override { words_->onQueryEnd(query, stats); }
  void onLoss(uint32_t query, const QueryStats& stats) override { words_->onLoss(query, stats); }
  void onSummary(const SessionResult& result) override { words_->onSummary(result); }
  void onError(const std::string& message) override { words_->onError(message); }
  void flush() override { out_.flush(); }
  bool failed() const override { return out_.bad(); }
  std::string failure() const override { return runtime::outputFailure(out_); }
  bool readerGone() const override { return runtime::readerGone(out_); }

 protected:
  std::ostream& out_;

 private:
  std::unique_ptr<Sink> words_;
};

/// A sink that prints no event, only what is said to people (`kq record -q`).
class SummarySink : public DataSink {
 public:
  SummarySink(const plan::ProgramPlan& plan, PrintContext& context, std::ostream& err)
      : DataSink(plan, context, discardedOutput(), err) {}
  void onEvent(const DecodedEvent&) override {}
};

}  // namespace kq::engine
