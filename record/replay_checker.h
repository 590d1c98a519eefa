// A new query over a recording, checked and compiled (record/replay_query.h runs it): which
// recorded probes it reads, what each name means (a recorded column, written as it was
// recorded; an event's own time, cpu, pid, tid, comm and probe; a joined event's `NAME.x`),
// and each expression as a closure over a decoded event. What the recording does not hold
// is a diagnostic at its place (NotRecorded) that says what it does hold.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostic.h"
#include "compiler/diag/source.h"
#include "engine/decoded_event.h"
#include "engine/session_result.h"
#include "plan/event_layout.h"

namespace kq::record::replay {

using engine::DecodedEvent;
using engine::Value;
using engine::ValueKind;
using plan::FieldKind;
using plan::FieldLayout;

/// The names every event has, from its header.
inline constexpr const char* kEventNames[] = {"time", "cpu", "pid", "tid", "comm", "probe"};

/// A value while a query is evaluated: a number, a text, or (an enumerator, a name from a
/// table) both.
struct Datum {
  bool has_number = false;
  bool has_text = false;
  bool is_unsigned = false;
  int64_t n = 0;
  std::string s;

  static Datum number(int64_t v, bool is_unsigned = false) {
    Datum d;
    d.has_number = true;
    d.n = v;
    d.is_unsigned = is_unsigned;
    return d;
  }
  static Datum text(std::string v) {
    Datum d;
    d.has_text = true;
    d.s = std::move(v);
    return d;
  }
  bool truthy() const { return has_number ? n != 0 : has_text && !s.empty(); }
};

/// A recorded value as a query reads it (a stack as its frames joined by `;`).
Datum datumOf(const Value& v);

/// What an expression gives, known before any event: it decides a new column's kind.
enum class Sort { Number, Unsigned, Bool, Text, Name };

/// What a recorded field of this kind gives.
Sort sortOf(const FieldLayout& f);

/// `s` with its white space gone: `str( filename )` names the column `str(filename)`.
std::string withoutSpaces(std::string_view s);

using Eval = std::function<Datum(const DecodedEvent&)>;

struct Compiled {
  Eval eval;
  Sort sort = Sort::Number;
  /// A recorded field (of the event, or of a joined one) as it is, and its layout (in the
  /// first probe read): a column of it prints as the recorded one did.
  std::function<Value(const DecodedEvent&)> value;
  const FieldLayout* layout = nullptr;
  uint32_t text_bytes = 0;  // a computed text's field size, when known (a comm's 16)
};

/// `join PROBE as NAME on ...` over recorded events: events of the source wait, by their
/// side of `on`, for an event of the query with the same key, as a live join's do.
struct ReplayJoin {
  std::string name;
  std::vector<bool> source;  // by probe index: whose events are kept
  std::optional<Compiled> where;  // the source's own `where`
  std::vector<std::pair<Eval, Eval>> keys;  // (the source's side, the query's)
  uint64_t within_ns = 0;
  bool keep = false;  // `keep`: a row does not use its event up
  std::unordered_map<std::string, DecodedEvent> waiting;
  engine::JoinResult counts;
};

struct AggregateCall {
  plan::AggregateSlot slot;
  std::optional<Compiled> argument;
};

/// Checks a query against what the recording holds, and compiles its expressions.
class Checker {
 public:
  Checker(const SourceManager& sources, FileId file, Diagnostics& diags, const plan::ProgramLayout& layout)
      : text_(sources.file(file).text()), diags_(diags), layout_(layout) {}

  /// Which probes the query reads: those `probes` match (all that wrote events without any).
  bool chooseProbes(const ast::Query& q);

  bool chooseProbes(const std::vector<const ast::Probe*>& probes);

  /// Whether an event is one the query reads.
  bool reads(const DecodedEvent& e) const;
  const std::vector<bool>& probesRead() const { return read_; }

  std::optional<Compiled> compile(const ast::Expr& e);

  static std::optional<plan::AggregateKind> aggregateKind(const std::string& callee);

  std::optional<AggregateCall> aggregate(const ast::Call& call, std::string name);

  std::string source(SourceRange r) const { return text_.substr(r.begin, r.end - r.begin); }

  /// The query's joins, checked: each source's probes, its `where`, its keys.
  bool checkJoins(const std::vector<ast::Join>& joins);

  /// The joined event `NAME.` reads while a row is made (or a source event is kept).
  void setJoined(size_t j, const DecodedEvent* e) { joined_[j] = e; }
  std::vector<ReplayJoin>& joins() { return joins_; }

 private:
  /// Whether `e` reads `NAME.` somewhere.
  static bool readsJoin(const ast::Expr& e, const std::string& name);

  /// `NAME.x`: `x` of the joined event (an event name, or one of its source's columns).
  std::optional<Compiled> joinedName(size_t j, const ast::Member& m);

  /// An expression written as a recorded column was (`str(filename)`, `skb->len`) is it.
  std::optional<Compiled> recordedField(const ast::Expr& e);

  std::optional<Compiled> eventName(const ast::Identifier& id);

  std::optional<Compiled> notRecorded(const ast::Expr& e);

  std::optional<Compiled> unary(const ast::Unary& u);

  std::optional<Compiled> binary(const ast::Binary& b);

  static std::string listed(const std::vector<std::string>& names);

  const std::string& text_;
  Diagnostics& diags_;
  const plan::ProgramLayout& layout_;
  std::vector<bool> read_;
  std::vector<std::string> name_patterns_;
  std::vector<ReplayJoin> joins_;
  std::vector<const DecodedEvent*> joined_;  // by join: the event `NAME.` reads now
};

}  // namespace kq::record::replay
