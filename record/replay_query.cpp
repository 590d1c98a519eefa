#include "record/replay_query.h"

#include <fnmatch.h>

#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "compiler/ast/compare.h"
#include "compiler/diag/render.h"
#include "compiler/parse/parse.h"
#include "engine/table.h"
#include "record/bytes.h"
#include "record/recording.h"
#include "record/session_codec.h"

namespace kq::record {
namespace {

using engine::DecodedEvent;
using engine::Value;
using engine::ValueKind;
using plan::FieldKind;
using plan::FieldLayout;

/// The names every event has, from its header.
constexpr const char* kEventNames[] = {"time", "cpu", "pid", "tid", "comm", "probe"};

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

Datum datumOf(const Value& v) {
  switch (v.kind) {
    case ValueKind::Missing: return {};
    case ValueKind::Int: return Datum::number(v.i);
    case ValueKind::Uint:
    case ValueKind::Bool:
    case ValueKind::Address:
    case ValueKind::Record: return Datum::number(static_cast<int64_t>(v.u), true);
    case ValueKind::Name: {
      Datum d = Datum::number(v.i);
      d.has_text = true;
      d.s = v.text;
      return d;
    }
    case ValueKind::Stack: {
      std::string joined;
      for (const std::string& f : v.frames) joined += (joined.empty() ? "" : ";") + f;
      return Datum::text(joined);
    }
    case ValueKind::String:
    case ValueKind::Bytes:
    case ValueKind::IpAddress:
    case ValueKind::Text: return Datum::text(v.text);
  }
  return {};
}

/// What an expression gives, known before any event: it decides a new column's kind.
enum class Sort { Number, Unsigned, Bool, Text, Name };

Sort sortOf(const FieldLayout& f) {
  switch (f.kind) {
    case FieldKind::Signed:
    case FieldKind::SyscallReturn: return Sort::Number;
    case FieldKind::Bool: return Sort::Bool;
    case FieldKind::Enum:
    case FieldKind::Errno:
    case FieldKind::Table: return Sort::Name;
    case FieldKind::Unsigned:
    case FieldKind::Hex:
    case FieldKind::Pointer:
    case FieldKind::Symbol:
    case FieldKind::UserSymbol:
    case FieldKind::Record: return Sort::Unsigned;
    default: return Sort::Text;
  }
}

std::string withoutSpaces(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') out += c;
  }
  return out;
}

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
  bool chooseProbes(const ast::Query& q) {
    std::vector<const ast::Probe*> probes;
    for (const ast::Probe& p : q.probes) probes.push_back(&p);
    return chooseProbes(probes);
  }

  bool chooseProbes(const std::vector<const ast::Probe*>& probes) {
    name_patterns_.clear();
    SourceRange whole = probes.empty() ? SourceRange{} : probes.front()->range;
    read_.assign(layout_.probes.size(), false);
    std::vector<std::string> recorded;
    for (const plan::ProbeLayout& p : layout_.probes) {
      if (p.writes_records) recorded.push_back(p.name);
    }
    if (recorded.empty()) {
      diags_.report(DiagKind::NotRecorded, whole, "this recording holds tables, not events: there is nothing to query")
          .note("record a query that selects events (no aggregates), then ask it new questions");
      return false;
    }
    if (probes.empty()) {
      for (size_t i = 0; i < layout_.probes.size(); ++i) read_[i] = layout_.probes[i].writes_records;
      return true;
    }
    for (const ast::Probe* probe_ptr : probes) {
      const ast::Probe& probe = *probe_ptr;
      std::string pattern = withoutSpaces(source(probe.range));
      bool matched = false;
      for (size_t i = 0; i < layout_.probes.size(); ++i) {
        const plan::ProbeLayout& p = layout_.probes[i];
        if (!p.writes_records) continue;
        // A glob's program names each record itself (`syscall:openat` of `syscall:open*`).
        bool names = fnmatch(pattern.c_str(), p.name.c_str(), 0) == 0 ||
                     (p.name_field >= 0 && fnmatch(p.name.c_str(), pattern.c_str(), 0) == 0);
        if (names) {
          read_[i] = true;
          matched = true;
          if (p.name_field >= 0 && pattern != p.name) name_patterns_.push_back(pattern);
        }
      }
      if (!matched) {
        diags_.report(DiagKind::NotRecorded, probe.range, fmt::format("`{}` was not recorded", pattern))
            .note(fmt::format("the recording holds events of {}", listed(recorded)));
      }
    }
    return !diags_.hasErrors();
  }

  /// Whether an event is one the query reads.
  bool reads(const DecodedEvent& e) const {
    if (!read_[e.header.probe_id]) return false;
    if (name_patterns_.empty() || e.probe->name_field < 0) return true;
    for (const std::string& p : name_patterns_) {
      if (fnmatch(p.c_str(), e.probe_name.c_str(), 0) == 0) return true;
    }
    return false;
  }
  const std::vector<bool>& probesRead() const { return read_; }

  std::optional<Compiled> compile(const ast::Expr& e) {
    if (e.kind == ast::ExprKind::Member) {
      const auto& m = ast::as<ast::Member>(e);
      if (m.base->kind == ast::ExprKind::Identifier && !m.arrow) {
        const std::string& base = ast::as<ast::Identifier>(*m.base).name;
        for (size_t j = 0; j < joins_.size(); ++j) {
          if (joins_[j].name == base) return joinedName(j, m);
        }
      }
    }
    if (std::optional<Compiled> f = recordedField(e)) return f;
    switch (e.kind) {
      case ast::ExprKind::Integer: {
        auto v = static_cast<int64_t>(ast::as<ast::IntegerLiteral>(e).value);
        return Compiled{[v](const DecodedEvent&) { return Datum::number(v); }, Sort::Number};
      }
      case ast::ExprKind::String: {
        std::string v = ast::as<ast::StringLiteral>(e).value;
        return Compiled{[v](const DecodedEvent&) { return Datum::text(v); }, Sort::Text};
      }
      case ast::ExprKind::Bool: {
        bool v = ast::as<ast::BoolLiteral>(e).value;
        return Compiled{[v](const DecodedEvent&) { return Datum::number(v); }, Sort::Bool};
      }
      case ast::ExprKind::Identifier: return eventName(ast::as<ast::Identifier>(e));
      case ast::ExprKind::Unary: return unary(ast::as<ast::Unary>(e));
      case ast::ExprKind::Binary: return binary(ast::as<ast::Binary>(e));
      case ast::ExprKind::Conditional: {
        const auto& c = ast::as<ast::Conditional>(e);
        auto cond = compile(*c.cond), then = compile(*c.then), otherwise = compile(*c.otherwise);
        if (!cond || !then || !otherwise) return std::nullopt;
        return Compiled{[cond = cond->eval, then = then->eval, otherwise = otherwise->eval](const DecodedEvent& ev) {
                          return cond(ev).truthy() ? then(ev) : otherwise(ev);
                        },
                        then->sort};
      }
      case ast::ExprKind::Call: {
        const auto& call = ast::as<ast::Call>(e);
        if (aggregateKind(call.callee)) {
          diags_.report(DiagKind::AggregateMisuse, e.range, fmt::format("`{}` is an aggregate: it belongs in `select`", call.callee));
          return std::nullopt;
        }
        return notRecorded(e);
      }
      default: return notRecorded(e);
    }
  }

  static std::optional<plan::AggregateKind> aggregateKind(const std::string& callee) {
    static const std::map<std::string, plan::AggregateKind> kinds = {
        {"count", plan::AggregateKind::Count}, {"sum", plan::AggregateKind::Sum}, {"avg", plan::AggregateKind::Avg},
        {"min", plan::AggregateKind::Min},     {"max", plan::AggregateKind::Max}, {"hist", plan::AggregateKind::Hist},
        {"lhist", plan::AggregateKind::Lhist}, {"top", plan::AggregateKind::Top}};
    auto it = kinds.find(callee);
    if (it == kinds.end()) return std::nullopt;
    return it->second;
  }

  std::optional<AggregateCall> aggregate(const ast::Call& call, std::string name) {
    AggregateCall a;
    a.slot.kind = *aggregateKind(call.callee);
    a.slot.name = std::move(name);
    size_t want = a.slot.kind == plan::AggregateKind::Count ? 0 : a.slot.kind == plan::AggregateKind::Lhist ? 4 : 1;
    if (call.args.size() != want) {
      diags_.report(DiagKind::WrongArgumentCount, call.range,
                    fmt::format("`{}` takes {} argument{}", call.callee, want, want == 1 ? "" : "s"));
      return std::nullopt;
    }
    auto literal = [&](size_t i) -> std::optional<int64_t> {
      const ast::Expr& arg = *call.args[i];
      if (arg.kind == ast::ExprKind::Integer) return static_cast<int64_t>(ast::as<ast::IntegerLiteral>(arg).value);
      if (arg.kind == ast::ExprKind::Unary && ast::as<ast::Unary>(arg).op == ast::UnaryOp::Negate &&
          ast::as<ast::Unary>(arg).operand->kind == ast::ExprKind::Integer) {
        return -static_cast<int64_t>(ast::as<ast::IntegerLiteral>(*ast::as<ast::Unary>(arg).operand).value);
      }
      diags_.report(DiagKind::ExpectedNumber, arg.range, fmt::format("`{}`'s bounds are numbers written out", call.callee));
      return std::nullopt;
    };
    if (a.slot.kind == plan::AggregateKind::Top) {
      std::optional<int64_t> n = literal(0);
      if (!n) return std::nullopt;
      if (*n < 1 || *n > 10000) {
        diags_.report(DiagKind::ValueOutOfRange, call.args[0]->range, "`top` keeps from 1 to 10000 groups");
        return std::nullopt;
      }
      a.slot.limit = static_cast<uint32_t>(*n);
      return a;
    }
    if (a.slot.kind == plan::AggregateKind::Count) return a;
    a.argument = compile(*call.args[0]);
    if (!a.argument) return std::nullopt;
    if (a.argument->sort == Sort::Text) {
      diags_.report(DiagKind::TypeMismatch, call.args[0]->range, fmt::format("`{}` counts numbers, not text", call.callee));
      return std::nullopt;
    }
    a.slot.is_signed = a.argument->sort != Sort::Unsigned;
    if (a.slot.kind == plan::AggregateKind::Hist) a.slot.buckets = plan::kHistBuckets;
    if (a.slot.kind == plan::AggregateKind::Lhist) {
      auto lo = literal(1), hi = literal(2), step = literal(3);
      if (!lo || !hi || !step) return std::nullopt;
      if (*step <= 0 || *hi <= *lo || (*hi - *lo) / *step > 1000) {
        diags_.report(DiagKind::ValueOutOfRange, call.range, "`lhist(x, lo, hi, step)` needs lo < hi, a step above 0 and at most 1000 buckets");
        return std::nullopt;
      }
      a.slot.lo = *lo;
      a.slot.hi = *hi;
      a.slot.step = *step;
      a.slot.buckets = static_cast<uint32_t>((*hi - *lo + *step - 1) / *step + 2);
    }
    return a;
  }

  std::string source(SourceRange r) const { return text_.substr(r.begin, r.end - r.begin); }

  /// The query's joins, checked: each source's probes, its `where`, its keys.
  bool checkJoins(const std::vector<ast::Join>& joins) {
    joined_.assign(joins.size(), nullptr);
    for (const ast::Join& join : joins) {
      ReplayJoin j;
      j.name = join.name;
      std::vector<bool> query_probes = read_;
      std::vector<std::string> patterns = name_patterns_;
      if (!chooseProbes(std::vector<const ast::Probe*>{&join.source})) return false;
      j.source = read_;
      if (join.where) j.where = compile(*join.where);
      if (join.within) j.within_ns = join.within->value;
      // `on rq`: the same expression read on each side; `on a.x == y and ...`: pairs.
      std::vector<const ast::Expr*> equalities;
      std::function<void(const ast::Expr&)> split = [&](const ast::Expr& e) {
        if (e.kind == ast::ExprKind::Binary && ast::as<ast::Binary>(e).op == ast::BinaryOp::And) {
          split(*ast::as<ast::Binary>(e).lhs);
          split(*ast::as<ast::Binary>(e).rhs);
        } else {
          equalities.push_back(&e);
        }
      };
      split(*join.on);
      std::vector<std::pair<const ast::Expr*, const ast::Expr*>> pairs;  // (source side, query side)
      for (const ast::Expr* e : equalities) {
        if (e->kind == ast::ExprKind::Binary && ast::as<ast::Binary>(*e).op == ast::BinaryOp::Eq) {
          const auto& b = ast::as<ast::Binary>(*e);
          bool left_joined = readsJoin(*b.lhs, join.name), right_joined = readsJoin(*b.rhs, join.name);
          if (left_joined == right_joined) {
            diags_.report(DiagKind::JoinMisuse, e->range,
                          fmt::format("one side of `==` in `on` reads `{}.`, the other the query's event", join.name));
            continue;
          }
          pairs.emplace_back(left_joined ? b.lhs.get() : b.rhs.get(), left_joined ? b.rhs.get() : b.lhs.get());
        } else {
          pairs.emplace_back(nullptr, e);  // `on tid`: the source's tid, the query's tid
        }
      }
      read_ = query_probes;
      name_patterns_ = patterns;
      joins_.push_back(std::move(j));
      size_t index = joins_.size() - 1;
      for (auto [source_side, query_side] : pairs) {
        std::optional<Compiled> q = compile(*query_side);
        std::optional<Compiled> src;
        if (source_side) {
          src = compile(*source_side);
        } else {
          // The same expression, read on the source's event: as `NAME.expr`.
          std::swap(read_, joins_[index].source);
          src = compile(*query_side);
          std::swap(read_, joins_[index].source);
        }
        if (q && src) joins_[index].keys.emplace_back(src->eval, q->eval);
      }
    }
    return !diags_.hasErrors();
  }

  /// The joined event `NAME.` reads while a row is made (or a source event is kept).
  void setJoined(size_t j, const DecodedEvent* e) { joined_[j] = e; }
  std::vector<ReplayJoin>& joins() { return joins_; }

 private:
  /// Whether `e` reads `NAME.` somewhere.
  static bool readsJoin(const ast::Expr& e, const std::string& name) {
    switch (e.kind) {
      case ast::ExprKind::Member: {
        const auto& m = ast::as<ast::Member>(e);
        if (m.base->kind == ast::ExprKind::Identifier && ast::as<ast::Identifier>(*m.base).name == name) return true;
        return readsJoin(*m.base, name);
      }
      case ast::ExprKind::Unary: return readsJoin(*ast::as<ast::Unary>(e).operand, name);
      case ast::ExprKind::Binary:
        return readsJoin(*ast::as<ast::Binary>(e).lhs, name) || readsJoin(*ast::as<ast::Binary>(e).rhs, name);
      case ast::ExprKind::Call:
        for (const ast::ExprPtr& a : ast::as<ast::Call>(e).args) {
          if (readsJoin(*a, name)) return true;
        }
        return false;
      default: return false;
    }
  }

  /// `NAME.x`: `x` of the joined event (an event name, or one of its source's columns).
  std::optional<Compiled> joinedName(size_t j, const ast::Member& m) {
    const DecodedEvent* const* at = &joined_[j];
    auto of = [at](auto read) {
      return [at, read](const DecodedEvent&) { return *at ? read(**at) : Datum{}; };
    };
    const std::string& n = m.member;
    if (n == "time") return Compiled{of([](const DecodedEvent& e) { return Datum::number(static_cast<int64_t>(e.header.time_ns), true); }), Sort::Unsigned};
    if (n == "cpu") return Compiled{of([](const DecodedEvent& e) { return Datum::number(e.header.cpu, true); }), Sort::Unsigned};
    if (n == "pid") return Compiled{of([](const DecodedEvent& e) { return Datum::number(e.header.pid, true); }), Sort::Unsigned};
    if (n == "tid") return Compiled{of([](const DecodedEvent& e) { return Datum::number(e.header.tid, true); }), Sort::Unsigned};
    if (n == "comm") {
      Compiled c{of([](const DecodedEvent& e) { return Datum::text(e.comm); }), Sort::Text};
      c.text_bytes = 16;
      return c;
    }
    if (n == "probe") return Compiled{of([](const DecodedEvent& e) { return Datum::text(e.probe_name); }), Sort::Text};
    // One of the source's columns, by the name it was recorded with.
    std::vector<int32_t> index(layout_.probes.size(), -1);
    const FieldLayout* first = nullptr;
    for (size_t i = 0; i < layout_.probes.size(); ++i) {
      if (!joins_[j].source[i]) continue;
      const plan::ProbeLayout& p = layout_.probes[i];
      for (size_t f = 0; f < p.fields.size(); ++f) {
        if (!p.fields[f].hidden && withoutSpaces(p.fields[f].name) == withoutSpaces(n)) {
          index[i] = static_cast<int32_t>(f);
          if (!first) first = &p.fields[f];
        }
      }
    }
    if (!first) {
      std::vector<std::string> names;
      for (size_t i = 0; i < layout_.probes.size(); ++i) {
        if (joins_[j].source[i]) names = replayFieldNames(layout_.probes[i]);
      }
      diags_.report(DiagKind::NotRecorded, m.member_range,
                    fmt::format("`{}.{}` was not recorded", joins_[j].name, n))
          .note(fmt::format("the joined events hold {}", fmt::join(names, ", ")));
      return std::nullopt;
    }
    Compiled c;
    c.value = [at, index](const DecodedEvent&) {
      if (!*at) return Value{};
      int32_t f = index[(*at)->header.probe_id];
      return f >= 0 && static_cast<size_t>(f) < (*at)->values.size() ? (*at)->values[f] : Value{};
    };
    c.eval = [value = c.value](const DecodedEvent& e) { return datumOf(value(e)); };
    c.sort = sortOf(*first);
    c.layout = first;
    return c;
  }

  /// An expression written as a recorded column was (`str(filename)`, `skb->len`) is it.
  std::optional<Compiled> recordedField(const ast::Expr& e) {
    std::string name = withoutSpaces(source(e.range));
    std::vector<int32_t> index(layout_.probes.size(), -1);
    const FieldLayout* first = nullptr;
    std::vector<std::string> lacking;
    for (size_t i = 0; i < layout_.probes.size(); ++i) {
      if (!read_[i]) continue;
      const plan::ProbeLayout& p = layout_.probes[i];
      for (size_t f = 0; f < p.fields.size(); ++f) {
        if (!p.fields[f].hidden && withoutSpaces(p.fields[f].name) == name) {
          index[i] = static_cast<int32_t>(f);
          if (!first) first = &p.fields[f];
          break;
        }
      }
      if (index[i] < 0) lacking.push_back(p.name);
    }
    if (!first) return std::nullopt;
    if (!lacking.empty()) {
      diags_.report(DiagKind::NotRecorded, e.range, fmt::format("`{}` was not recorded in the events of {}", name, listed(lacking)))
          .note("read only the probes that have it: `trace PROBE ...` first");
      return Compiled{[](const DecodedEvent&) { return Datum{}; }, Sort::Number};
    }
    Compiled c;
    c.value = [index](const DecodedEvent& ev) {
      int32_t f = index[ev.header.probe_id];
      return f >= 0 && static_cast<size_t>(f) < ev.values.size() ? ev.values[f] : Value{};
    };
    c.eval = [value = c.value](const DecodedEvent& ev) { return datumOf(value(ev)); };
    c.sort = sortOf(*first);
    c.layout = first;
    return c;
  }

  std::optional<Compiled> eventName(const ast::Identifier& id) {
    const std::string& n = id.name;
    if (n == "time") return Compiled{[](const DecodedEvent& e) { return Datum::number(static_cast<int64_t>(e.header.time_ns), true); }, Sort::Unsigned};
    if (n == "cpu") return Compiled{[](const DecodedEvent& e) { return Datum::number(e.header.cpu, true); }, Sort::Unsigned};
    if (n == "pid") return Compiled{[](const DecodedEvent& e) { return Datum::number(e.header.pid, true); }, Sort::Unsigned};
    if (n == "tid") return Compiled{[](const DecodedEvent& e) { return Datum::number(e.header.tid, true); }, Sort::Unsigned};
    if (n == "comm") {
      Compiled c{[](const DecodedEvent& e) { return Datum::text(e.comm); }, Sort::Text};
      c.text_bytes = 16;
      return c;
    }
    if (n == "probe") return Compiled{[](const DecodedEvent& e) { return Datum::text(e.probe_name); }, Sort::Text};
    return notRecorded(id);
  }

  std::optional<Compiled> notRecorded(const ast::Expr& e) {
    std::vector<std::string> names(std::begin(kEventNames), std::end(kEventNames));
    for (size_t i = 0; i < layout_.probes.size(); ++i) {
      if (!read_[i]) continue;
      for (const std::string& f : replayFieldNames(layout_.probes[i])) {
        if (std::find(names.begin(), names.end(), f) == names.end()) names.push_back(f);
      }
    }
    diags_.report(DiagKind::NotRecorded, e.range, fmt::format("`{}` was not recorded", source(e.range)))
        .note(fmt::format("a replay reads what was recorded: {}", fmt::join(names, ", ")));
    return std::nullopt;
  }

  std::optional<Compiled> unary(const ast::Unary& u) {
    auto operand = compile(*u.operand);
    if (!operand) return std::nullopt;
    Eval x = operand->eval;
    switch (u.op) {
      case ast::UnaryOp::Negate: return Compiled{[x](const DecodedEvent& e) { return Datum::number(-x(e).n); }, Sort::Number};
      case ast::UnaryOp::Plus: return operand;
      case ast::UnaryOp::LogicalNot: return Compiled{[x](const DecodedEvent& e) { return Datum::number(!x(e).truthy()); }, Sort::Bool};
      case ast::UnaryOp::BitNot: return Compiled{[x](const DecodedEvent& e) { return Datum::number(~x(e).n, true); }, Sort::Unsigned};
      default:
        diags_.report(DiagKind::Unsupported, u.op_range, "a replay reads recorded values: there is no memory to read")
            .note("record the value itself (`select *p`), then replay it");
        return std::nullopt;
    }
  }

  std::optional<Compiled> binary(const ast::Binary& b) {
    auto lhs = compile(*b.lhs), rhs = compile(*b.rhs);
    if (!lhs || !rhs) return std::nullopt;
    Eval l = lhs->eval, r = rhs->eval;
    using ast::BinaryOp;
    bool text_operands = lhs->sort == Sort::Text || rhs->sort == Sort::Text;
    bool is_unsigned = lhs->sort == Sort::Unsigned || rhs->sort == Sort::Unsigned;
    auto arithmetic = [&](auto op) -> std::optional<Compiled> {
      if (text_operands) {
        diags_.report(DiagKind::TypeMismatch, b.op_range, "arithmetic takes numbers, not text");
        return std::nullopt;
      }
      return Compiled{[l, r, op, is_unsigned](const DecodedEvent& e) {
                        return Datum::number(op(l(e).n, r(e).n), is_unsigned);
                      },
                      is_unsigned ? Sort::Unsigned : Sort::Number};
    };
    auto compare = [&](auto op) -> std::optional<Compiled> {
      return Compiled{[l, r, op, is_unsigned](const DecodedEvent& e) {
                        Datum x = l(e), y = r(e);
                        int c;
                        if (x.has_number && y.has_number) {
                          c = is_unsigned ? (static_cast<uint64_t>(x.n) < static_cast<uint64_t>(y.n) ? -1 : x.n != y.n)
                                          : (x.n < y.n ? -1 : x.n != y.n);
                        } else if (x.has_text && y.has_text) {
                          c = x.s.compare(y.s);
                          c = c < 0 ? -1 : c > 0;
                        } else {
                          return Datum::number(0);  // a number and a text are never equal
                        }
                        return Datum::number(op(c));
                      },
                      Sort::Bool};
    };
    switch (b.op) {
      case BinaryOp::Mul: return arithmetic([](int64_t x, int64_t y) { return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)); });
      case BinaryOp::Div: return arithmetic([](int64_t x, int64_t y) { return y ? x / y : 0; });
      case BinaryOp::Mod: return arithmetic([](int64_t x, int64_t y) { return y ? x % y : 0; });
      case BinaryOp::Add: return arithmetic([](int64_t x, int64_t y) { return static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)); });
      case BinaryOp::Sub: return arithmetic([](int64_t x, int64_t y) { return static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)); });
      case BinaryOp::Shl: return arithmetic([](int64_t x, int64_t y) { return y < 0 || y > 63 ? 0 : static_cast<int64_t>(static_cast<uint64_t>(x) << y); });
      case BinaryOp::Shr: return arithmetic([](int64_t x, int64_t y) { return y < 0 || y > 63 ? 0 : static_cast<int64_t>(static_cast<uint64_t>(x) >> y); });
      case BinaryOp::BitAnd: return arithmetic([](int64_t x, int64_t y) { return x & y; });
      case BinaryOp::BitXor: return arithmetic([](int64_t x, int64_t y) { return x ^ y; });
      case BinaryOp::BitOr: return arithmetic([](int64_t x, int64_t y) { return x | y; });
      case BinaryOp::Lt: return compare([](int c) { return c < 0; });
      case BinaryOp::Le: return compare([](int c) { return c <= 0; });
      case BinaryOp::Gt: return compare([](int c) { return c > 0; });
      case BinaryOp::Ge: return compare([](int c) { return c >= 0; });
      case BinaryOp::Eq: return compare([](int c) { return c == 0; });
      case BinaryOp::Ne: return compare([](int c) { return c != 0; });
      case BinaryOp::Match:
        if (lhs->sort == Sort::Number || lhs->sort == Sort::Unsigned || rhs->sort != Sort::Text) {
          diags_.report(DiagKind::TypeMismatch, b.op_range, "`~` matches a text against a glob: `comm ~ \"nginx*\"`");
          return std::nullopt;
        }
        return Compiled{[l, r](const DecodedEvent& e) {
                          Datum x = l(e), y = r(e);
                          return Datum::number(x.has_text && fnmatch(y.s.c_str(), x.s.c_str(), 0) == 0);
                        },
                        Sort::Bool};
      case BinaryOp::And:
        return Compiled{[l, r](const DecodedEvent& e) { return Datum::number(l(e).truthy() && r(e).truthy()); }, Sort::Bool};
      case BinaryOp::Or:
        return Compiled{[l, r](const DecodedEvent& e) { return Datum::number(l(e).truthy() || r(e).truthy()); }, Sort::Bool};
    }
    return std::nullopt;
  }

  static std::string listed(const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) out += (i ? ", `" : "`") + names[i] + "`";
    return out;
  }

  const std::string& text_;
  Diagnostics& diags_;
  const plan::ProgramLayout& layout_;
  std::vector<bool> read_;
  std::vector<std::string> name_patterns_;
  std::vector<ReplayJoin> joins_;
  std::vector<const DecodedEvent*> joined_;  // by join: the event `NAME.` reads now
};

/// A column the query makes: copied from a recorded field, or computed.
struct Column {
  FieldLayout layout;
  Compiled value;
};

/// A computed value as the decoder would have made it for a field of `sort`.
Value valueOf(const Datum& d, Sort sort) {
  Value v;
  switch (sort) {
    case Sort::Number:
      v.kind = ValueKind::Int;
      v.i = d.n;
      v.text = std::to_string(d.n);
      break;
    case Sort::Unsigned:
      v.kind = ValueKind::Uint;
      v.u = static_cast<uint64_t>(d.n);
      v.text = std::to_string(v.u);
      break;
    case Sort::Bool:
      v.kind = ValueKind::Bool;
      v.u = d.n != 0;
      v.text = v.u ? "true" : "false";
      break;
    case Sort::Name:
      v.kind = ValueKind::Name;
      v.i = d.n;
      v.text = d.s;
      break;
    case Sort::Text:
      v.kind = ValueKind::String;
      v.text = d.s;
      break;
  }
  return v;
}

FieldLayout fieldFor(std::string name, Sort sort) {
  FieldLayout f;
  f.name = std::move(name);
  f.size = 8;
  switch (sort) {
    case Sort::Number: f.kind = FieldKind::Signed; break;
    case Sort::Unsigned: f.kind = FieldKind::Unsigned; break;
    case Sort::Bool: f.kind = FieldKind::Bool; break;
    case Sort::Name: f.kind = FieldKind::Signed; break;
    case Sort::Text:
      f.kind = FieldKind::String;
      f.size = 256;
      break;
  }
  return f;
}

/// The column of a recorded field or a computed expression.
Column columnOf(Compiled c, std::string name) {
  Column col;
  if (c.layout) {
    col.layout = *c.layout;
    col.layout.name = std::move(name);
    col.layout.args.clear();  // a format's text is made already
    col.layout.address_field = -1;
    col.layout.is_capture = false;  // a selected column, not a capture beneath the line
  } else {
    col.layout = fieldFor(std::move(name), c.sort);
    if (c.text_bytes) col.layout.size = c.text_bytes;
  }
  col.value = std::move(c);
  return col;
}

/// The value of column `c` for event `e`: the recorded value itself where it is one.
Value columnValue(const Column& c, const DecodedEvent& e) {
  if (c.value.value) return c.value.value(e);
  return valueOf(c.value.eval(e), c.value.sort);
}

/// Receives the recording's calls and hands the query's results to the real sink.
class QuerySink : public engine::Sink {
 public:
  QuerySink(Checker& checker, std::optional<Compiled> where, std::vector<Column> columns, bool select,
            std::vector<Column> keys, std::vector<AggregateCall> aggregates, const plan::AggregateLayout* table,
            uint64_t limit, uint64_t every_ns, int64_t boot_offset_ns, const plan::ProgramLayout& out_layout)
      : checker_(checker), where_(std::move(where)), columns_(std::move(columns)), select_(select),
        keys_(std::move(keys)), aggregates_(std::move(aggregates)), table_(table), limit_(limit),
        every_ns_(every_ns), boot_offset_ns_(boot_offset_ns), out_layout_(out_layout) {}

  void attach(engine::Sink& sink) { sink_ = &sink; }

  void onBegin() override { sink_->onBegin(); }
  void onEvent(const DecodedEvent& e) override {
    if (checker_.reads(e)) queryEvent(e);
    keep(e);
  }

 private:
  /// An event of the query: a row, when each join finds its event and `where` passes.
  void queryEvent(const DecodedEvent& e) {
    std::vector<ReplayJoin>& joins = checker_.joins();
    std::vector<std::string> keys(joins.size());
    for (size_t j = 0; j < joins.size(); ++j) {
      ReplayJoin& join = joins[j];
      keys[j] = keyOf(join, e, /*source=*/false);
      auto it = join.waiting.find(keys[j]);
      if (it == join.waiting.end()) {
        ++join.counts.unmatched;
        return;
      }
      if (join.within_ns && e.header.time_ns - it->second.header.time_ns > join.within_ns) {
        ++join.counts.expired;
        join.waiting.erase(it);
        return;
      }
      checker_.setJoined(j, &it->second);
    }
    bool passes = !where_ || where_->eval(e).truthy();
    if (passes) row(e);
    // A joined event is used up by the row it made; one the `where` turned down waits on.
    for (size_t j = 0; j < joins.size(); ++j) {
      checker_.setJoined(j, nullptr);
      if (passes) {
        ++joins[j].counts.matched;
        joins[j].waiting.erase(keys[j]);
      }
    }
  }

  /// An event of a join's source (that passes its `where`) waits under its key.
  void keep(const DecodedEvent& e) {
    std::vector<ReplayJoin>& joins = checker_.joins();
    for (size_t j = 0; j < joins.size(); ++j) {
      ReplayJoin& join = joins[j];
      if (!join.source[e.header.probe_id]) continue;
      if (join.where && !join.where->eval(e).truthy()) continue;
      checker_.setJoined(j, &e);
      std::string key = keyOf(join, e, /*source=*/true);
      checker_.setJoined(j, nullptr);
      auto [it, added] = join.waiting.insert_or_assign(key, e);
      ++join.counts.kept;
      if (!added) ++join.counts.replaced;
    }
  }

  static std::string keyOf(const ReplayJoin& join, const DecodedEvent& e, bool source) {
    ByteWriter key;
    for (const auto& [source_side, query_side] : join.keys) {
      Datum d = (source ? source_side : query_side)(e);
      key.u8(d.has_number);
      key.svarint(d.n);
      key.string(d.has_number ? "" : d.s);
    }
    return key.data();
  }

  void row(const DecodedEvent& e) {
    last_wall_ns_ = e.wall_ns;
    if (table_) return count(e);
    if (limit_ && shown_ >= limit_) return;
    ++shown_;
    if (!select_) {
      forward(e, e.values);
      return;
    }
    std::vector<Value> values;
    values.reserve(columns_.size());
    for (const Column& c : columns_) values.push_back(columnValue(c, e));
    forward(e, std::move(values));
  }

 public:
  void onTable(const engine::Table&) override {}  // the recorded tables answer the recorded query
  void onQueryEnd(uint32_t, const engine::QueryStats&) override {}
  void onEnd() override { sink_->onEnd(); }
  void onLoss(uint32_t, const engine::QueryStats&) override {}  // the summary says the recording's
  void onSummary(const engine::SessionResult& recorded) override {
    summarized_ = true;
    finish(recorded);
  }
  void onError(const std::string& message) override { sink_->onError(message); }
  void flush() override { sink_->flush(); }
  std::string failure() const override { return sink_->failure(); }
  bool readerGone() const override { return sink_->readerGone(); }
  bool failed() const override { return sink_->failed(); }

  /// The end, when the recording was cut short before its summary.
  void finishCutShort() {
    if (!summarized_) finish(engine::SessionResult{});
  }

 private:
  void forward(const DecodedEvent& e, std::vector<Value> values) {
    out_ = e;
    out_.probe = &out_layout_.probes[e.header.probe_id];
    out_.values = std::move(values);
    sink_->onEvent(out_);
  }

  void count(const DecodedEvent& e) {
    if (every_ns_) {
      uint64_t interval = e.header.time_ns / every_ns_;
      if (interval_ && interval != *interval_) showTable();
      interval_ = interval;
    }
    std::vector<Value> keys;
    keys.reserve(keys_.size());
    ByteWriter encoded;
    for (const Column& k : keys_) {
      keys.push_back(columnValue(k, e));
      // Grouped as it prints, as the kernel's stacks are (engine/table.cpp).
      Value printed = keys.back();
      printed.addresses.clear();
      encodeValue(encoded, printed);
    }
    auto [it, added] = groups_index_.emplace(encoded.data(), groups_.size());
    if (added) groups_.push_back({std::move(keys), std::vector<uint8_t>(table_->value_size, 0)});
    uint8_t* value = groups_[it->second].value.data();
    for (size_t s = 0; s < aggregates_.size(); ++s) {
      const AggregateCall& a = aggregates_[s];
      engine::countInto(table_->slots[s], value, a.argument ? a.argument->eval(e).n : 0);
    }
  }

  void showTable() {
    int64_t wall = every_ns_ && interval_ ? static_cast<int64_t>((*interval_ + 1) * every_ns_) + boot_offset_ns_
                                          : last_wall_ns_;
    engine::Table table = engine::tableOfGroups(*table_, groups_, wall, limit_);
    sink_->onTable(table);
    groups_.clear();
    groups_index_.clear();
  }

  void finish(const engine::SessionResult& recorded) {
    if (table_ && (!groups_.empty() || !every_ns_)) showTable();
    engine::SessionResult result;
    result.events = table_ ? 0 : shown_;
    result.lost = recorded.lost;
    engine::QueryStats stats;
    stats.events = stats.printed = result.events;
    stats.lost = recorded.lost;
    stats.ended = true;
    result.queries.push_back(stats);
    for (ReplayJoin& join : checker_.joins()) {
      engine::JoinResult r = join.counts;
      r.name = join.name;
      r.waiting = join.waiting.size();
      result.joins.push_back(r);
    }
    result.output_failure = sink_->failure();
    result.reader_gone = sink_->readerGone();
    sink_->onSummary(result);
  }

  Checker& checker_;
  std::optional<Compiled> where_;
  std::vector<Column> columns_;
  bool select_;
  std::vector<Column> keys_;
  std::vector<AggregateCall> aggregates_;
  const plan::AggregateLayout* table_;
  uint64_t limit_;
  uint64_t every_ns_;
  int64_t boot_offset_ns_;
  const plan::ProgramLayout& out_layout_;
  engine::Sink* sink_ = nullptr;
  DecodedEvent out_;
  uint64_t shown_ = 0;
  int64_t last_wall_ns_ = 0;
  bool summarized_ = false;
  std::optional<uint64_t> interval_;
  std::vector<engine::CountedGroup> groups_;
  std::unordered_map<std::string, size_t> groups_index_;
};

}  // namespace

std::vector<std::string> replayFieldNames(const plan::ProbeLayout& p) {
  std::vector<std::string> names(std::begin(kEventNames), std::end(kEventNames));
  for (const FieldLayout& f : p.fields) {
    if (!f.hidden && std::find(names.begin(), names.end(), f.name) == names.end()) names.push_back(f.name);
  }
  return names;
}

int replayQuery(Recording& recording, const std::string& name, const std::string& query, engine::OutputFormat format,
                const engine::TextOptions& text, engine::PrintContext& context, std::ostream& out,
                std::ostream& err, const std::string& color) {
  SourceManager sources;
  FileId file = sources.add(name, query);
  Diagnostics diags;
  RenderOptions render;
  render.color = color == "always";
  auto fail = [&] {
    renderDiagnostics(diags, sources, err, render);
    return 1;
  };
  std::optional<ast::Query> q = parse::parseReplayQuery(sources, file, diags);
  if (!q) return fail();
  const ast::Clauses& clauses = q->clauses;
  const plan::ProgramPlan& recorded = recording.plan().plan;
  Checker checker(sources, file, diags, recorded.layout);
  if (!checker.chooseProbes(*q)) return fail();
  if (!checker.checkJoins(clauses.joins)) return fail();
  if (clauses.track) {
    diags.report(DiagKind::Unsupported, *clauses.track, "`track` follows packets as the kernel sees them: record with it");
  }
  if (clauses.for_duration) {
    diags.report(DiagKind::Unsupported, clauses.for_duration->range, "a replay reads the whole recording: `for` has no time to run for")
        .note("filter on `time` instead");
  }
  std::optional<Compiled> where;
  if (clauses.where) where = checker.compile(*clauses.where);

  bool aggregated = false;
  for (const ast::SelectItem& item : clauses.select) {
    aggregated = aggregated || (item.expr->kind == ast::ExprKind::Call &&
                                Checker::aggregateKind(ast::as<ast::Call>(*item.expr).callee));
  }
  aggregated = aggregated || !clauses.group_by.empty();
  if (clauses.every && !aggregated) {
    diags.report(DiagKind::AggregateMisuse, clauses.every->range, "`every` prints a table each interval: select an aggregate");
  }

  // The plan the output is printed with: the recorded one, its probes' fields the query's.
  plan::ProgramPlan shown = recorded;
  shown.layout.aggregates.clear();
  shown.layout.queries = 1;
  shown.layout.query_names = {""};
  for (size_t i = 0; i < shown.layout.probes.size(); ++i) {
    shown.layout.probes[i].query = 0;
    // Only the probes the query reads print: the columns are theirs alone.
    if (!checker.probesRead()[i]) shown.layout.probes[i].writes_records = false;
  }
  std::vector<Column> columns, keys;
  std::vector<AggregateCall> aggregates;
  plan::AggregateLayout table;
  if (!aggregated) {
    for (const ast::SelectItem& item : clauses.select) {
      std::optional<Compiled> c = checker.compile(*item.expr);
      if (c) columns.push_back(columnOf(std::move(*c), item.alias.value_or(checker.source(item.expr->range))));
    }
    if (!clauses.select.empty()) {
      for (size_t i = 0; i < shown.layout.probes.size(); ++i) {
        if (!checker.probesRead()[i]) continue;
        plan::ProbeLayout& p = shown.layout.probes[i];
        p.fields.clear();
        for (const Column& c : columns) p.fields.push_back(c.layout);
        p.name_field = -1;  // each event keeps its own name
        p.packet.reset();
      }
    }
  } else {
    std::vector<bool> selected(clauses.group_by.size(), false);
    std::vector<std::string> key_names;
    for (const ast::ExprPtr& k : clauses.group_by) key_names.push_back(checker.source(k->range));
    std::vector<std::pair<bool, uint32_t>> chosen;  // (key, index), select order
    for (const ast::SelectItem& item : clauses.select) {
      std::string name = item.alias.value_or(checker.source(item.expr->range));
      if (item.expr->kind == ast::ExprKind::Call && Checker::aggregateKind(ast::as<ast::Call>(*item.expr).callee)) {
        if (std::optional<AggregateCall> a = checker.aggregate(ast::as<ast::Call>(*item.expr), name)) {
          chosen.emplace_back(false, static_cast<uint32_t>(aggregates.size()));
          aggregates.push_back(std::move(*a));
        }
        continue;
      }
      int32_t key = -1;
      for (size_t k = 0; k < clauses.group_by.size() && key < 0; ++k) {
        if (ast::sameExpr(*clauses.group_by[k], *item.expr)) key = static_cast<int32_t>(k);
      }
      if (key < 0) {
        std::string t = checker.source(item.expr->range);
        diags.report(DiagKind::AggregateMisuse, item.expr->range, fmt::format("`{}` is neither an aggregate nor a `group by` key", t))
            .note(clauses.group_by.empty() ? fmt::format("add `group by {}`", t) : "add it to `group by`");
        continue;
      }
      selected[key] = true;
      if (item.alias) key_names[key] = *item.alias;
      chosen.emplace_back(true, static_cast<uint32_t>(key));
    }
    for (size_t k = 0; k < clauses.group_by.size(); ++k) {
      std::optional<Compiled> c = checker.compile(*clauses.group_by[k]);
      if (!c) continue;
      Column col = columnOf(std::move(*c), key_names[k]);
      if (col.layout.kind == FieldKind::Record) col.layout.kind = FieldKind::Pointer, col.layout.size = 8;
      keys.push_back(std::move(col));
    }
    if (diags.hasErrors()) return fail();
    for (const Column& k : keys) table.keys.push_back(k.layout);
    // Every key prints (unselected ones first), then `select` order: as a live table.
    for (size_t k = 0; k < keys.size(); ++k) {
      if (!selected[k]) table.columns.emplace_back(true, static_cast<uint32_t>(k));
    }
    table.columns.insert(table.columns.end(), chosen.begin(), chosen.end());
    uint32_t offset = 0;
    for (AggregateCall& a : aggregates) {
      a.slot.offset = offset;
      offset += static_cast<uint32_t>(plan::slotBytes(a.slot));
      table.slots.push_back(a.slot);
    }
    table.value_size = std::max<uint32_t>(offset, 8);
    table.every_ns = clauses.every ? clauses.every->value : 0;
    table.map = "replay";
    shown.layout.aggregates.push_back(table);
    // Its events are counted, not printed: the output is its table, as a live one's is.
    for (plan::ProbeLayout& p : shown.layout.probes) p.writes_records = false;
  }
  if (diags.hasErrors()) return fail();

  uint64_t limit = clauses.limit ? clauses.limit->value : 0;
  const plan::AggregateLayout* table_layout = aggregated ? &shown.layout.aggregates.front() : nullptr;
  QuerySink query_sink(checker, std::move(where), std::move(columns), !clauses.select.empty() && !aggregated,
                       std::move(keys), std::move(aggregates), table_layout, limit,
                       table_layout ? table_layout->every_ns : 0, context.boot_offset_ns, shown.layout);
  std::unique_ptr<engine::Sink> sink = engine::makeSink(format, shown, context, out, err, text);
  query_sink.attach(*sink);
  bool read_all = recording.play(query_sink);
  if (!read_all) query_sink.finishCutShort();
  out.flush();
  if (!read_all) {
    err << "kq replay: error: " << recording.error() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace kq::record
