// Where a session's results go. The session hands a sink typed data (decoded events, tables,
// the end-of-run counts), never text; text and JSON are two sinks (engine/sinks.h), and a
// front end may bring its own (a metrics exporter, a recorder, a test counting values).
#pragma once

#include <cstdint>
#include <string>

#include "engine/decoded_event.h"
#include "engine/session_result.h"
#include "engine/table.h"

namespace kq::engine {

class Sink {
 public:
  virtual ~Sink() = default;
  /// Before the first event.
  virtual void onBegin() {}
  virtual void onEvent(const DecodedEvent& event) = 0;
  /// An aggregate query's table: at each `every` tick, and when its query ends.
  virtual void onTable(const Table& table) = 0;
  /// Query `query` has ended (its `for`, its `limit`, a stop), with its counts so far.
  virtual void onQueryEnd(uint32_t query, const QueryStats& stats) {}
  /// After the last event and table (a per-packet view prints then).
  virtual void onEnd() {}
  /// Events were lost (counted in the kernel): once, at the end, per query.
  virtual void onLoss(uint32_t query, const QueryStats& stats) {}
  /// What the session saw and lost, when it is over.
  virtual void onSummary(const SessionResult& result) = 0;
  /// Something went wrong while the session ran (reading the ring buffer failed).
  virtual void onError(const std::string& message) = 0;
  /// Sends what is buffered on; the session calls it after each read of the ring buffer.
  virtual void flush() {}
  /// Why the sink cannot take more (its reader went away: "Broken pipe"), or empty.
  virtual std::string failure() const { return ""; }
  /// Whether that failure is only its reader gone (`| head`): no error, nothing more said.
  virtual bool readerGone() const { return false; }
  /// Whether it has failed (cheap: asked after every event).
  virtual bool failed() const { return false; }
};

}  // namespace kq::engine
