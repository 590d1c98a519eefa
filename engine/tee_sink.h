// One session's results handed to several sinks in turn (`kq record` prints what it records).
// The session stops when either cannot take more.
#pragma once

#include <memory>
#include <vector>

#include "engine/sink.h"

namespace kq::engine {

class TeeSink : public Sink {
 public:
  TeeSink(std::unique_ptr<Sink> first, std::unique_ptr<Sink> second) {
    sinks_.push_back(std::move(first));
    sinks_.push_back(std::move(second));
  }

  void onBegin() override {
    for (auto& s : sinks_) s->onBegin();
  }
  void onEvent(const DecodedEvent& event) override {
    for (auto& s : sinks_) s->onEvent(event);
  }
  void onTable(const Table& table) override {
    for (auto& s : sinks_) s->onTable(table);
  }
  void onQueryEnd(uint32_t query, const QueryStats& stats) override {
    for (auto& s : sinks_) s->onQueryEnd(query, stats);
  }
  void onEnd() override {
    for (auto& s : sinks_) s->onEnd();
  }
  void onLoss(uint32_t query, const QueryStats& stats) override {
    for (auto& s : sinks_) s->onLoss(query, stats);
  }
  void onSummary(const SessionResult& result) override {
    for (auto& s : sinks_) s->onSummary(result);
  }
  void onError(const std::string& message) override {
    for (auto& s : sinks_) s->onError(message);
  }
  void flush() override {
    for (auto& s : sinks_) s->flush();
  }
  std::string failure() const override {
    for (auto& s : sinks_) {
      if (std::string f = s->failure(); !f.empty()) return f;
    }
    return "";
  }
  bool readerGone() const override {
    for (auto& s : sinks_) {
      if (!s->failure().empty()) return s->readerGone();
    }
    return false;
  }
  bool failed() const override {
    for (auto& s : sinks_) {
      if (s->failed()) return true;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<Sink>> sinks_;
};

}  // namespace kq::engine
