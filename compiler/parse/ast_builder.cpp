#include "compiler/parse/ast_builder.h"

#include <fmt/format.h>

#include "compiler/parse/lexical.h"
#include "compiler/parse/literals.h"

namespace kq::parse {
namespace {

using P = kqgrammar::KqParser;
using namespace kq::ast;

class Builder {
 public:
  Builder(const TokenSource& source, Diagnostics& diags) : source_(source), diags_(diags) {}

  // script : item* EOF
  Script script(P::ScriptContext* ctx) {
    Script out;
    out.file = source_.file();
    for (P::ItemContext* item : ctx->item()) out.items.push_back(this->item(item));
    return out;
  }

 private:
  SourceRange range(antlr4::ParserRuleContext* ctx) const {
    return source_.range(ctx->getStart(), ctx->getStop() ? ctx->getStop() : ctx->getStart());
  }
  SourceRange range(antlr4::tree::TerminalNode* node) const {
    return source_.range(node->getSymbol());
  }
  std::string text(antlr4::ParserRuleContext* ctx) const {
    SourceRange r = range(ctx);
    return source_.source().text().substr(r.begin, r.end - r.begin);
  }
  std::string text(antlr4::tree::TerminalNode* node) const {
    return std::string(source_.text(node->getSymbol()));
  }

  // item : useDecl | letDecl | fnDecl | extensionDecl | configDecl | query, each with an
  // optional `;`
  Item item(P::ItemContext* ctx) {
    if (auto* use = ctx->useDecl()) {
      // useDecl : USE name | USE name? STRING
      if (use->STRING()) {
        UseDecl out{"", range(use), decodeString(text(use->STRING())).value,
                    range(use->STRING())};
        if (use->name()) {
          out.c_source = text(use->name()) == "c";
          if (!out.c_source) {
            diags_.report(DiagKind::ExpectedToken, range(use->name()),
                          fmt::format("`use {} \"...\"` names no kind of file kq reads",
                                      text(use->name())))
                .note("`use c \"helpers.c\"` reads C functions, `use \"myapp.h\"` a header's types");
          }
        }
        return out;
      }
      return UseDecl{text(use->name()), range(use)};
    }
    if (auto* let = ctx->letDecl()) {
      return LetDecl{text(let->name()), range(let->name()), expr(let->expr()), range(let)};
    }
    if (auto* fn = ctx->fnDecl()) return fnDecl(fn);
    if (auto* ext = ctx->extensionDecl()) return extensionDecl(ext);
    if (auto* config = ctx->configDecl()) {
      // configDecl : CONFIG name '=' expr
      return ConfigDecl{text(config->name()), range(config->name()), expr(config->expr()), range(config)};
    }
    return query(ctx->query());
  }

  // fnDecl : FN name '(' (param (',' param)*)? ')' '=' expr
  // param : name (':' typeName)?
  FnDecl fnDecl(P::FnDeclContext* ctx) {
    FnDecl fn{text(ctx->name()), range(ctx->name()), {}, nullptr, range(ctx)};
    for (P::ParamContext* param : ctx->param()) {
      Param p{text(param->name()), range(param->name()), std::nullopt};
      if (param->typeName()) p.type = typeName(param->typeName());
      fn.params.push_back(std::move(p));
    }
    fn.body = expr(ctx->expr());
    return fn;
  }

  // extensionDecl : EXTENSION clause*
  ExtensionDecl extensionDecl(P::ExtensionDeclContext* ctx) {
    ExtensionDecl ext{clauses(ctx->clause()), range(ctx)};
    // An extension runs inside ipftrace2, which owns timing and output.
    for (P::ClauseContext* clause : ctx->clause()) {
      bool allowed = dynamic_cast<P::WhereClauseContext*>(clause) ||
                     dynamic_cast<P::SelectClauseContext*>(clause);
      if (!allowed) {
        diags_
            .report(DiagKind::ClauseNotAllowed, range(clause->getStart()),
                    fmt::format("an extension cannot have a `{}` clause",
                                source_.text(clause->getStart())))
            .note("an extension has only `where` (which packets to keep) and `select` (what to "
                  "record)");
      }
    }
    return ext;
  }

  SourceRange range(antlr4::Token* token) const { return source_.range(token); }

  // query : TRACE probe (',' probe)* (AS name)? clause*
  Query query(P::QueryContext* ctx) {
    Query q;
    q.range = range(ctx);
    for (P::ProbeContext* probe : ctx->probe()) q.probes.push_back(this->probe(probe));
    if (ctx->name()) {
      q.name = text(ctx->name());
      q.name_range = range(ctx->name());
    }
    q.clauses = clauses(ctx->clause());
    return q;
  }

  // replayQuery : (TRACE probe (',' probe)*)? clause* EOF
 public:
  Query replayQuery(P::ReplayQueryContext* ctx) {
    Query q;
    q.range = range(ctx);
    for (P::ProbeContext* probe : ctx->probe()) q.probes.push_back(this->probe(probe));
    q.clauses = clauses(ctx->clause());
    return q;
  }

 private:
  // clause : JOIN probe AS name (WHERE expr)? ON expr (WITHIN NUMBER)? | WHERE expr
  //        | SELECT selectItem (',' selectItem)* | GROUP BY expr (',' expr)*
  //        | EVERY NUMBER | FOR NUMBER | LIMIT NUMBER | TRACK
  Clauses clauses(const std::vector<P::ClauseContext*>& list) {
    Clauses out;
    std::vector<std::pair<std::string, SourceRange>> seen;
    for (P::ClauseContext* clause : list) {
      SourceRange keyword = range(clause->getStart());
      if (auto* join = dynamic_cast<P::JoinClauseContext*>(clause)) {
        out.joins.push_back(this->join(join));
        continue;
      }
      std::string name(source_.text(clause->getStart()));
      if (name == "group") name = "group by";
      bool repeated = false;
      for (const auto& [seen_name, seen_at] : seen) {
        if (seen_name != name) continue;
        diags_
            .report(DiagKind::DuplicateClause, keyword,
                    fmt::format("a query has only one `{}` clause", name))
            .note(seen_at, fmt::format("the first `{}` is here", name));
        repeated = true;
      }
      if (repeated) continue;
      seen.emplace_back(name, keyword);

      if (auto* where = dynamic_cast<P::WhereClauseContext*>(clause)) {
        out.where = expr(where->expr());
      } else if (auto* select = dynamic_cast<P::SelectClauseContext*>(clause)) {
        out.select_range = range(select);
        for (P::SelectItemContext* item : select->selectItem()) {
          SelectItem si{expr(item->expr()), std::nullopt, range(item)};
          if (item->name()) si.alias = text(item->name());
          out.select.push_back(std::move(si));
        }
      } else if (auto* group = dynamic_cast<P::GroupClauseContext*>(clause)) {
        out.group_by_range = range(group);
        for (P::ExprContext* key : group->expr()) out.group_by.push_back(expr(key));
      } else if (auto* every = dynamic_cast<P::EveryClauseContext*>(clause)) {
        out.every = numberClause(every->NUMBER(), NumberUnit::Nanoseconds, "every", range(every));
      } else if (auto* for_clause = dynamic_cast<P::ForClauseContext*>(clause)) {
        out.for_duration =
            numberClause(for_clause->NUMBER(), NumberUnit::Nanoseconds, "for", range(for_clause));
      } else if (auto* limit = dynamic_cast<P::LimitClauseContext*>(clause)) {
        out.limit = numberClause(limit->NUMBER(), NumberUnit::None, "limit", range(limit));
      } else if (dynamic_cast<P::TrackClauseContext*>(clause)) {
        out.track = keyword;
      }
    }
    return out;
  }

  // JOIN probe AS name OPTIONAL? KEEP? (WHERE expr)? ON expr (WITHIN NUMBER)?
  Join join(P::JoinClauseContext* ctx) {
    Join out{probe(ctx->probe()), text(ctx->name()), range(ctx->name()), nullptr, nullptr,
             std::nullopt, range(ctx)};
    if (ctx->WHERE()) out.where = expr(ctx->expr(0));
    out.on = expr(ctx->expr(ctx->WHERE() ? 1 : 0));
    out.optional = ctx->OPTIONAL() != nullptr;
    out.keep = ctx->KEEP() != nullptr;
    if (ctx->WITHIN()) {
      out.within = numberClause(ctx->NUMBER(), NumberUnit::Nanoseconds, "within", range(ctx));
    }
    return out;
  }

  static std::string_view unitExample(NumberUnit unit) {
    switch (unit) {
      case NumberUnit::None: return "a plain count like `10`";
      case NumberUnit::Nanoseconds: return "a duration like `10s` or `500ms`";
      case NumberUnit::Bytes: return "a size like `4k`";
      case NumberUnit::Hertz: return "a frequency like `99hz`";
    }
    return "";
  }

  /// A number token's value; a malformed one (only one right before a `:`, which the token
  /// checks leave to here) is reported, and reads as 0.
  DecodedNumber decodedNumber(antlr4::tree::TerminalNode* number) {
    auto decoded = decodeNumber(text(number));
    if (auto* error = std::get_if<LiteralError>(&decoded)) {
      reportLiteralError(*error, range(number), diags_);
      return DecodedNumber{};
    }
    return std::get<DecodedNumber>(decoded);
  }

  /// A number that must carry `unit` and be positive; `keyword` names where it appears.
  uint64_t unitNumber(antlr4::tree::TerminalNode* number, NumberUnit unit,
                      std::string_view keyword) {
    DecodedNumber decoded = decodedNumber(number);
    if (decoded.unit != unit) {
      diags_.report(DiagKind::WrongUnit, range(number),
                    fmt::format("`{}` takes {}, not `{}`", keyword, unitExample(unit),
                                text(number)));
      return 1;
    }
    if (decoded.value == 0) {
      diags_.report(DiagKind::ValueOutOfRange, range(number),
                    fmt::format("`{}` needs a value above zero", keyword));
      return 1;
    }
    return decoded.value;
  }

  /// `page-faults`, `page-faults:100` (every 100 faults), `cpu-clock:99hz` (99 times a second).
  PerfEventTarget perfEvent(bool hardware, antlr4::tree::TerminalNode* spec) {
    std::string written = text(spec);
    SourceRange at = range(spec);
    size_t colon = written.find(':');
    PerfEventTarget out{hardware, written.substr(0, colon), at};
    out.event_range.end = out.event_range.begin + static_cast<uint32_t>(out.event.size());
    if (colon == std::string::npos) return out;
    std::string period = written.substr(colon + 1);
    SourceRange period_range = at;
    period_range.begin += static_cast<uint32_t>(colon + 1);
    auto decoded = decodeNumber(period);
    auto* number = std::get_if<DecodedNumber>(&decoded);
    if (period.empty() || !number || (number->unit != NumberUnit::None && number->unit != NumberUnit::Hertz) ||
        number->value == 0) {
      diags_.report(DiagKind::WrongUnit, period.empty() ? at : period_range,
                    fmt::format("`{0}:{1}` takes a period after its `:`, a count of events above zero "
                                "like `{0}:{1}:100`, or a frequency like `{0}:{1}:99hz`",
                                hardware ? "hardware" : "software", out.event));
      return out;
    }
    if (number->unit == NumberUnit::Hertz) {
      if (number->value > kMaxProfileHz) {
        diags_.report(DiagKind::ValueOutOfRange, period_range,
                      fmt::format("a perf event samples at most {}hz", kMaxProfileHz))
            .note("sampling faster than the kernel's perf_event_max_sample_rate is refused");
      }
      out.frequency_hz = number->value;
    } else {
      out.period = number->value;
    }
    return out;
  }

  NumberClause numberClause(antlr4::tree::TerminalNode* number, NumberUnit unit,
                            std::string_view keyword, SourceRange clause_range) {
    return {unitNumber(number, unit, keyword), clause_range};
  }

  // probe : target ('->' target)*
  Probe probe(P::ProbeContext* ctx) {
    Probe out{{}, range(ctx)};
    for (P::TargetContext* target : ctx->target()) out.chain.push_back(this->target(target));
    return out;
  }

  // target : PACKET GRAPH? ('(' pattern (',' pattern)* ')')? GRAPH? | INTERVAL NUMBER | PROFILE NUMBER
  //        | TRACEPOINT ':' pattern ':' pattern captureList? | SYSCALL ':' pattern captureList?
  //        | (UPROBE | URETPROBE) UPROBE_PATH ':' symbolPattern (typedParams | captureList)?
  //        | pattern (':' pattern)? captureList?
  Target target(P::TargetContext* ctx) {
    Target out{PacketTarget{}, range(ctx)};
    if (auto* t = dynamic_cast<P::PacketTargetContext*>(ctx)) {
      // `packet graph(ip_*)` and `packet(ip_*) graph` are the same; once is enough.
      std::vector<antlr4::tree::TerminalNode*> graphs = t->GRAPH();
      if (graphs.size() > 1) {
        diags_.report(DiagKind::UnexpectedToken, range(graphs[1]), "`graph` is already given")
            .note("write `packet graph(...)` or `packet(...) graph`");
      }
      PacketTarget packet{!graphs.empty(), {}};
      for (P::PatternContext* p : t->pattern()) packet.functions.push_back(pattern(p));
      out.kind = std::move(packet);
    } else if (auto* t = dynamic_cast<P::IntervalTargetContext*>(ctx)) {
      out.kind = IntervalTarget{unitNumber(t->NUMBER(), NumberUnit::Nanoseconds, "interval")};
    } else if (auto* t = dynamic_cast<P::IterTargetContext*>(ctx)) {
      // ITER IDENT captureList?
      out.kind = IterTarget{text(t->IDENT()), range(t->IDENT()), captureList(t->captureList())};
    } else if (auto* t = dynamic_cast<P::BpfTargetContext*>(ctx)) {
      // BPF pattern captureList?
      out.kind = BpfProgramTarget{pattern(t->pattern()), captureList(t->captureList())};
    } else if (auto* t = dynamic_cast<P::WatchpointTargetContext*>(ctx)) {
      // WATCHPOINT (NUMBER | IDENT '(' STRING ')') ':' NUMBER ':' IDENT
      WatchpointTarget w;
      std::vector<antlr4::tree::TerminalNode*> numbers = t->NUMBER();
      size_t next = 0;
      if (t->STRING()) {
        if (t->IDENT(0)->getText() != "kaddr") {
          diags_.report(DiagKind::UnexpectedToken, range(t->IDENT(0)),
                        fmt::format("a watchpoint's address is a number or `kaddr(\"symbol\")`, not `{}(...)`",
                                    t->IDENT(0)->getText()));
        }
        w.symbol = decodeString(text(t->STRING())).value;
        w.address_range = source_.range(t->IDENT(0)->getSymbol(), t->RPAREN()->getSymbol());
      } else {
        w.address = unitNumber(numbers[next], NumberUnit::None, "watchpoint");
        w.address_range = range(numbers[next++]);
      }
      w.length = unitNumber(numbers[next], NumberUnit::None, "watchpoint");
      w.length_range = range(numbers[next]);
      antlr4::tree::TerminalNode* mode = t->IDENT(t->STRING() ? 1 : 0);
      w.mode = mode->getText();
      w.mode_range = range(mode);
      out.kind = std::move(w);
    } else if (auto* t = dynamic_cast<P::SessionTargetContext*>(ctx)) {
      // (SESSION_BEGIN | SESSION_END)
      out.kind = SessionTarget{t->SESSION_END() != nullptr};
    } else if (auto* t = dynamic_cast<P::ProfileTargetContext*>(ctx)) {
      uint64_t hz = unitNumber(t->NUMBER(), NumberUnit::Hertz, "profile");
      if (hz > kMaxProfileHz) {
        diags_.report(DiagKind::ValueOutOfRange, range(t->NUMBER()),
                      fmt::format("`profile` samples at most {}hz", kMaxProfileHz))
            .note("sampling faster than the kernel's perf_event_max_sample_rate is refused");
      }
      out.kind = ProfileTarget{hz};
    } else if (auto* t = dynamic_cast<P::PerfEventTargetContext*>(ctx)) {
      out.kind = perfEvent(t->HARDWARE() != nullptr, t->PERF_EVENT());
    } else if (auto* t = dynamic_cast<P::TracepointTargetContext*>(ctx)) {
      out.kind = TracepointTarget{pattern(t->pattern(0)), pattern(t->pattern(1)),
                                  captureList(t->captureList())};
    } else if (auto* t = dynamic_cast<P::SyscallTargetContext*>(ctx)) {
      out.kind = SyscallTarget{pattern(t->pattern()), captureList(t->captureList())};
    } else if (auto* t = dynamic_cast<P::UprobeTargetContext*>(ctx)) {
      UprobeTarget u{t->URETPROBE() != nullptr, text(t->UPROBE_PATH()),
                     range(t->UPROBE_PATH()), symbolPattern(t->symbolPattern()),
                     captureList(t->captureList())};
      u.params = typedParams(t->typedParams());
      out.kind = std::move(u);
    } else if (auto* t = dynamic_cast<P::UsdtTargetContext*>(ctx)) {
      // usdt:PATH:[PROVIDER:]NAME
      std::vector<P::SymbolPatternContext*> parts = t->symbolPattern();
      UsdtTarget u{text(t->UPROBE_PATH()), range(t->UPROBE_PATH()), std::nullopt,
                   symbolPattern(parts.back()), captureList(t->captureList())};
      if (parts.size() == 2) u.provider = symbolPattern(parts.front());
      u.params = typedParams(t->typedParams());
      out.kind = std::move(u);
    } else if (auto* t = dynamic_cast<P::FunctionTargetContext*>(ctx)) {
      FunctionTarget f;
      std::vector<P::PatternContext*> parts = t->pattern();
      if (parts.size() == 2 && (text(parts[0]) == "rawtracepoint" || text(parts[0]) == "rt")) {
        // bpftrace's `rawtracepoint:EVENT` (no kernel module has that name).
        out.kind = TracepointTarget{{"", range(parts[0])}, pattern(parts[1]), captureList(t->captureList()), true};
        return out;
      }
      if (parts.size() == 2) f.module = pattern(parts[0]);
      f.function = pattern(parts.back());
      f.captures = captureList(t->captureList());
      if (t->PLUS()) {
        // pattern (':' pattern)? ('+' NUMBER)?: an offset into the function
        DecodedNumber decoded = decodedNumber(t->NUMBER());
        if (decoded.unit != NumberUnit::None) {
          diags_.report(DiagKind::WrongUnit, range(t->NUMBER()),
                        fmt::format("an offset into a function is a number of bytes, like `+0x10`, not `{}`",
                                    text(t->NUMBER())));
        }
        f.offset = decoded.value;
        f.offset_range = range(t->NUMBER());
      }
      out.kind = std::move(f);
    }
    return out;
  }

  static constexpr uint64_t kMaxProfileHz = 100'000;

  // pattern : patternPart+ (adjacent)
  Pattern pattern(P::PatternContext* ctx) { return {text(ctx), range(ctx)}; }

  // symbolPattern : symbolPart+ (adjacent); symbolPart : patternPart | memberName
  Pattern symbolPattern(P::SymbolPatternContext* ctx) { return {text(ctx), range(ctx)}; }

  // typedParams : '(' typedParam (',' typedParam)* ')'
  // typedParam : qualifier=IDENT? (typeName | type=IDENT) name
  std::vector<TypedParam> typedParams(P::TypedParamsContext* params) {
    std::vector<TypedParam> out;
    if (!params) return out;
    for (P::TypedParamContext* p : params->typedParam()) {
      // A C prototype as written (`const char *name`): the qualifier changes nothing read.
      if (p->qualifier && p->qualifier->getText() != "const" && p->qualifier->getText() != "volatile") {
        diags_.report(DiagKind::UnexpectedToken, range(p->qualifier),
                      fmt::format("`{}` before a parameter's type: only `const` or `volatile` goes there",
                                  p->qualifier->getText()));
      }
      TypeName type = p->typeName() ? typeName(p->typeName())
                                    : TypeName{TypeName::Tag::None, p->type->getText(), 0, range(p->type)};
      out.push_back({std::move(type), text(p->name()), range(p->name())});
    }
    return out;
  }

  // captureList : '(' (capture (',' capture)*)? ')'
  // capture : '*' | expr
  std::optional<CaptureList> captureList(P::CaptureListContext* ctx) {
    if (!ctx) return std::nullopt;
    CaptureList out{{}, range(ctx)};
    for (P::CaptureContext* capture : ctx->capture()) {
      if (auto* e = dynamic_cast<P::CaptureExprContext*>(capture)) {
        out.items.push_back({expr(e->expr()), range(capture)});
      } else {
        out.items.push_back({nullptr, range(capture)});
      }
    }
    return out;
  }

  // typeName : (STRUCT | UNION | ENUM) name '*'* | scalarKeyword+ '*'* | INTTYPE '*'*
  //          | IDENT '*'+
  TypeName typeName(P::TypeNameContext* ctx) {
    TypeName out;
    out.range = range(ctx);
    if (auto* t = dynamic_cast<P::TaggedTypeContext*>(ctx)) {
      out.tag = t->STRUCT()  ? TypeName::Tag::Struct
                : t->UNION() ? TypeName::Tag::Union
                             : TypeName::Tag::Enum;
      out.name = text(t->name());
      out.pointer_depth = t->STAR().size();
    } else if (auto* t = dynamic_cast<P::ScalarTypeContext*>(ctx)) {
      for (P::ScalarKeywordContext* word : t->scalarKeyword()) {
        if (!out.name.empty()) out.name += " ";
        out.name += text(word);
      }
      out.pointer_depth = t->STAR().size();
    } else if (auto* t = dynamic_cast<P::IntTypeContext*>(ctx)) {
      out.name = text(t->INTTYPE());
      out.pointer_depth = t->STAR().size();
    } else if (auto* t = dynamic_cast<P::TypedefPointerContext*>(ctx)) {
      out.name = text(t->IDENT());
      out.pointer_depth = t->STAR().size();
    }
    return out;
  }

  // expr : see KqParser.g4; one case per labelled alternative.
  ExprPtr expr(P::ExprContext* ctx) {
    // Deep left-leaning chains (`a or b or c ...`) are loops in the parser but depth here.
    struct Depth {
      explicit Depth(size_t& d) : d(d) { ++d; }
      ~Depth() { --d; }
      size_t& d;
    } depth(depth_);
    if (depth_ > kMaxNesting) {
      if (!reported_depth_) {
        reported_depth_ = true;
        diags_.report(DiagKind::NestingTooDeep, range(ctx),
                      fmt::format("expression nests more than {} levels deep", kMaxNesting))
            .note("split it with `let` or `fn` declarations");
      }
      return std::make_unique<BoolLiteral>(range(ctx), false);
    }

    SourceRange at = range(ctx);
    if (auto* e = dynamic_cast<P::PrimaryExprContext*>(ctx)) return primary(e->primary());
    if (auto* e = dynamic_cast<P::DotExprContext*>(ctx)) {
      return std::make_unique<Member>(at, expr(e->expr()), false, text(e->memberName()),
                                      range(e->memberName()));
    }
    if (auto* e = dynamic_cast<P::ArrowExprContext*>(ctx)) {
      return std::make_unique<Member>(at, expr(e->expr()), true, text(e->memberName()),
                                      range(e->memberName()));
    }
    if (auto* e = dynamic_cast<P::IndexExprContext*>(ctx)) {
      return std::make_unique<Index>(at, expr(e->expr(0)), expr(e->expr(1)));
    }
    if (auto* e = dynamic_cast<P::CastExprContext*>(ctx)) {
      return std::make_unique<Cast>(at, typeName(e->typeName()), expr(e->expr()));
    }
    if (auto* e = dynamic_cast<P::UnaryExprContext*>(ctx)) {
      return std::make_unique<Unary>(at, unaryOp(e->op->getType()), range(e->op), expr(e->expr()));
    }
    if (auto* e = dynamic_cast<P::BinaryExprContext*>(ctx)) {
      return std::make_unique<Binary>(at, binaryOp(e->op->getType()), range(e->op),
                                      expr(e->expr(0)), expr(e->expr(1)));
    }
    auto* e = dynamic_cast<P::ConditionalExprContext*>(ctx);
    return std::make_unique<Conditional>(at, expr(e->expr(0)), expr(e->expr(1)), expr(e->expr(2)));
  }

  // primary : NUMBER | STRING | TRUE | FALSE | RETURN | name '(' args ')' | name | '(' expr ')'
  //         | '{' (tableEntry (',' tableEntry)* ','?)? '}'
  ExprPtr primary(P::PrimaryContext* ctx) {
    SourceRange at = range(ctx);
    if (auto* p = dynamic_cast<P::NumberLiteralContext*>(ctx)) {
      std::string spelling = text(p->NUMBER());
      DecodedNumber n = decodedNumber(p->NUMBER());
      return std::make_unique<IntegerLiteral>(at, n.value, n.unit, spelling);
    }
    if (auto* p = dynamic_cast<P::StringLiteralContext*>(ctx)) {
      return std::make_unique<StringLiteral>(at, decodeString(text(p->STRING())).value);
    }
    if (auto* p = dynamic_cast<P::BoolLiteralContext*>(ctx)) {
      return std::make_unique<BoolLiteral>(at, p->TRUE() != nullptr);
    }
    if (dynamic_cast<P::ReturnValueContext*>(ctx)) return std::make_unique<ReturnValue>(at);
    if (auto* p = dynamic_cast<P::CallContext*>(ctx)) {
      std::vector<ExprPtr> args;
      for (P::ExprContext* arg : p->expr()) args.push_back(expr(arg));
      return std::make_unique<Call>(at, text(p->name()), range(p->name()), std::move(args));
    }
    if (auto* p = dynamic_cast<P::IdentifierContext*>(ctx)) {
      return std::make_unique<Identifier>(at, text(p->name()));
    }
    if (auto* p = dynamic_cast<P::TableLiteralContext*>(ctx)) return table(p, at);
    auto* p = dynamic_cast<P::ParenthesizedContext*>(ctx);
    ExprPtr inner = expr(p->expr());
    inner->range = at;  // `(a + b)` spans its parentheses, so a caret covers them too
    return inner;
  }

  // tableEntry : tableConstant ':' tableConstant
  ExprPtr table(P::TableLiteralContext* ctx, SourceRange at) {
    std::vector<TableEntry> entries;
    for (P::TableEntryContext* entry : ctx->tableEntry()) {
      entries.push_back(
          {tableConstant(entry->tableConstant(0)), tableConstant(entry->tableConstant(1))});
    }
    return std::make_unique<TableLiteral>(at, std::move(entries));
  }

  // tableConstant : '-'? NUMBER | STRING
  TableConstant tableConstant(P::TableConstantContext* ctx) {
    TableConstant out;
    out.range = range(ctx);
    if (ctx->STRING()) {
      out.is_string = true;
      out.string = decodeString(text(ctx->STRING())).value;
      return out;
    }
    DecodedNumber n = decodedNumber(ctx->NUMBER());
    if (n.unit != NumberUnit::None) {
      diags_.report(DiagKind::WrongUnit, range(ctx->NUMBER()),
                    fmt::format("a table's keys and values are plain integers, not `{}`",
                                text(ctx->NUMBER())));
    }
    bool negative = ctx->MINUS() != nullptr;
    if (negative && n.value > uint64_t{1} << 63) {
      diags_.report(DiagKind::ValueOutOfRange, out.range,
                    fmt::format("`{}` is below the smallest 64-bit integer", text(ctx)));
    }
    // Above 2^63 - 1, a key is the 64-bit pattern an unsigned value of the kernel has.
    out.integer = static_cast<int64_t>(negative ? 0 - n.value : n.value);
    return out;
  }

  static UnaryOp unaryOp(size_t token) {
    switch (token) {
      case P::MINUS: return UnaryOp::Negate;
      case P::PLUS: return UnaryOp::Plus;
      case P::BANG:
      case P::NOT: return UnaryOp::LogicalNot;
      case P::TILDE: return UnaryOp::BitNot;
      case P::STAR: return UnaryOp::Deref;
      default: return UnaryOp::AddressOf;
    }
  }

  static BinaryOp binaryOp(size_t token) {
    switch (token) {
      case P::STAR: return BinaryOp::Mul;
      case P::SLASH: return BinaryOp::Div;
      case P::PERCENT: return BinaryOp::Mod;
      case P::PLUS: return BinaryOp::Add;
      case P::MINUS: return BinaryOp::Sub;
      case P::SHL: return BinaryOp::Shl;
      case P::SHR: return BinaryOp::Shr;
      case P::LT: return BinaryOp::Lt;
      case P::LE: return BinaryOp::Le;
      case P::GT: return BinaryOp::Gt;
      case P::GE: return BinaryOp::Ge;
      case P::EQ: return BinaryOp::Eq;
      case P::NE: return BinaryOp::Ne;
      case P::TILDE: return BinaryOp::Match;
      case P::AMP: return BinaryOp::BitAnd;
      case P::CARET: return BinaryOp::BitXor;
      case P::PIPE: return BinaryOp::BitOr;
      case P::AND:
      case P::ANDAND: return BinaryOp::And;
      default: return BinaryOp::Or;
    }
  }

  const TokenSource& source_;
  Diagnostics& diags_;
  size_t depth_ = 0;
  bool reported_depth_ = false;
};

}  // namespace

Script buildScript(P::ScriptContext* tree, const TokenSource& source, Diagnostics& diags) {
  return Builder(source, diags).script(tree);
}

Query buildReplayQuery(P::ReplayQueryContext* tree, const TokenSource& source, Diagnostics& diags) {
  return Builder(source, diags).replayQuery(tree);
}

}  // namespace kq::parse
