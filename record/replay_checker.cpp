#include "record/replay_checker.h"

#include <fnmatch.h>

#include <map>

#include <fmt/format.h>

#include "record/replay_query.h"

namespace kq::record::replay {

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

bool Checker::chooseProbes(const ast::Query& q) {
  std::vector<const ast::Probe*> probes;
  for (const ast::Probe& p : q.probes) probes.push_back(&p);
  return chooseProbes(probes);
}

bool Checker::chooseProbes(const std::vector<const ast::Probe*>& probes) {
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

bool Checker::reads(const DecodedEvent& e) const {
  if (!read_[e.header.probe_id]) return false;
  if (name_patterns_.empty() || e.probe->name_field < 0) return true;
  for (const std::string& p : name_patterns_) {
    if (fnmatch(p.c_str(), e.probe_name.c_str(), 0) == 0) return true;
  }
  return false;
}

std::optional<Compiled> Checker::compile(const ast::Expr& e) {
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

std::optional<plan::AggregateKind> Checker::aggregateKind(const std::string& callee) {
  static const std::map<std::string, plan::AggregateKind> kinds = {
      {"count", plan::AggregateKind::Count}, {"sum", plan::AggregateKind::Sum}, {"avg", plan::AggregateKind::Avg},
      {"min", plan::AggregateKind::Min},     {"max", plan::AggregateKind::Max}, {"hist", plan::AggregateKind::Hist},
      {"lhist", plan::AggregateKind::Lhist}, {"top", plan::AggregateKind::Top}};
  auto it = kinds.find(callee);
  if (it == kinds.end()) return std::nullopt;
  return it->second;
}

std::optional<AggregateCall> Checker::aggregate(const ast::Call& call, std::string name) {
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

bool Checker::checkJoins(const std::vector<ast::Join>& joins) {
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
    j.keep = join.keep;
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

bool Checker::readsJoin(const ast::Expr& e, const std::string& name) {
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

std::optional<Compiled> Checker::joinedName(size_t j, const ast::Member& m) {
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

std::optional<Compiled> Checker::recordedField(const ast::Expr& e) {
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

std::optional<Compiled> Checker::eventName(const ast::Identifier& id) {
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

std::optional<Compiled> Checker::notRecorded(const ast::Expr& e) {
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

std::optional<Compiled> Checker::unary(const ast::Unary& u) {
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

std::optional<Compiled> Checker::binary(const ast::Binary& b) {
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

std::string Checker::listed(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", `" : "`") + names[i] + "`";
  return out;
}

}  // namespace kq::record::replay
