#include "compiler/ast/dump.h"

#include <fmt/format.h>

#include "compiler/ast/visitor.h"

namespace kq::ast {

std::string_view spell(UnaryOp op) {
  switch (op) {
    case UnaryOp::Negate: return "-";
    case UnaryOp::Plus: return "+";
    case UnaryOp::LogicalNot: return "not";
    case UnaryOp::BitNot: return "~";
    case UnaryOp::Deref: return "*";
    case UnaryOp::AddressOf: return "&";
  }
  return "?";
}

std::string_view spell(BinaryOp op) {
  switch (op) {
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Shl: return "<<";
    case BinaryOp::Shr: return ">>";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::Match: return "~";
    case BinaryOp::BitAnd: return "&";
    case BinaryOp::BitXor: return "^";
    case BinaryOp::BitOr: return "|";
    case BinaryOp::And: return "and";
    case BinaryOp::Or: return "or";
  }
  return "?";
}

std::string spell(const TypeName& type) {
  std::string out;
  switch (type.tag) {
    case TypeName::Tag::None: break;
    case TypeName::Tag::Struct: out = "struct "; break;
    case TypeName::Tag::Union: out = "union "; break;
    case TypeName::Tag::Enum: out = "enum "; break;
  }
  out += type.name;
  if (type.pointer_depth > 0) out += " " + std::string(type.pointer_depth, '*');
  return out;
}

namespace {

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string describeNumber(const IntegerLiteral& lit) {
  switch (lit.unit) {
    case NumberUnit::None:
      if (lit.spelling == std::to_string(lit.value)) return fmt::format("integer {}", lit.value);
      return fmt::format("integer {} = {}", lit.spelling, lit.value);
    case NumberUnit::Nanoseconds: return fmt::format("duration {} = {}ns", lit.spelling, lit.value);
    case NumberUnit::Bytes: return fmt::format("size {} = {} bytes", lit.spelling, lit.value);
    case NumberUnit::Hertz: return fmt::format("frequency {} = {}hz", lit.spelling, lit.value);
  }
  return "integer";
}

class Dumper : public ExprVisitor<Dumper> {
 public:
  explicit Dumper(std::ostream& out) : out_(out) {}

  void script(const Script& script) {
    line("script");
    Nest nest(*this);
    for (const Item& item : script.items) std::visit([&](const auto& decl) { this->item(decl); }, item);
  }

  // Expressions, one line each, children indented beneath.
  void visitInteger(const IntegerLiteral& lit) { line(describeNumber(lit)); }
  void visitString(const StringLiteral& lit) { line("string " + quoted(lit.value)); }
  void visitBool(const BoolLiteral& lit) { line(lit.value ? "bool true" : "bool false"); }
  void visitIdentifier(const Identifier& id) { line("identifier " + id.name); }
  void visitReturnValue(const ReturnValue&) { line("return"); }
  void visitCall(const Call& call) { nested("call " + call.callee, call); }
  void visitMember(const Member& member) {
    nested(fmt::format("member {}{}", member.arrow ? "->" : ".", member.member), member);
  }
  void visitIndex(const Index& index) { nested("index", index); }
  void visitUnary(const Unary& unary) { nested(fmt::format("unary {}", spell(unary.op)), unary); }
  void visitBinary(const Binary& binary) {
    nested(fmt::format("binary {}", spell(binary.op)), binary);
  }
  void visitConditional(const Conditional& cond) { nested("conditional", cond); }
  void visitCast(const Cast& cast) { nested("cast (" + spell(cast.type) + ")", cast); }
  void visitTable(const TableLiteral& table) {
    line("table");
    Nest nest(*this);
    auto text = [](const TableConstant& c) {
      return c.is_string ? quoted(c.string) : std::to_string(c.integer);
    };
    for (const TableEntry& entry : table.entries) {
      line(fmt::format("entry {}: {}", text(entry.key), text(entry.value)));
    }
  }

 private:
  struct Nest {
    explicit Nest(Dumper& d) : d(d) { ++d.depth_; }
    ~Nest() { --d.depth_; }
    Dumper& d;
  };

  void line(std::string_view text) {
    out_ << std::string(depth_ * 2, ' ') << text << "\n";
  }

  template <typename Node>
  void nested(std::string_view text, const Node& node) {
    line(text);
    Nest nest(*this);
    visitChildren(node);
  }

  void expr(std::string_view label, const Expr& e) {
    line(label);
    Nest nest(*this);
    visit(e);
  }

  void item(const UseDecl& use) {
    line(use.header.empty() ? "use " + use.module
                            : std::string(use.c_source ? "use c \"" : "use \"") + use.header + "\"");
  }

  void item(const LetDecl& let) {
    line("let " + let.name);
    Nest nest(*this);
    visit(*let.value);
  }

  void item(const FnDecl& fn) {
    line("fn " + fn.name);
    Nest nest(*this);
    for (const Param& param : fn.params) {
      line("param " + param.name + (param.type ? ": " + spell(*param.type) : ""));
    }
    expr("body", *fn.body);
  }

  void item(const ConfigDecl& config) {
    line("config " + config.name);
    Nest nest(*this);
    visit(*config.value);
  }

  void item(const ExtensionDecl& ext) {
    line("extension");
    Nest nest(*this);
    clauses(ext.clauses);
  }

  void item(const Query& query) {
    line(query.name.empty() ? "query" : "query " + query.name);
    Nest nest(*this);
    for (const Probe& probe : query.probes) this->probe(probe);
    clauses(query.clauses);
  }

  void probe(const Probe& probe) {
    line("probe");
    Nest nest(*this);
    for (const Target& target : probe.chain) {
      std::visit([&](const auto& t) { this->target(t); }, target.kind);
    }
  }

  void target(const FunctionTarget& t) {
    line(fmt::format("function {}{}{}", t.module ? t.module->text + ":" : "", t.function.text,
                     t.function.isGlob() ? " (glob)" : ""));
    captures(t.captures);
  }
  void target(const TracepointTarget& t) {
    line(t.raw ? fmt::format("rawtracepoint {}", t.event.text)
               : fmt::format("tracepoint {}:{}", t.category.text, t.event.text));
    captures(t.captures);
  }
  void target(const SyscallTarget& t) {
    line("syscall " + t.syscall.text);
    captures(t.captures);
  }
  void target(const UprobeTarget& t) {
    line(fmt::format("{} {}:{}", t.on_return ? "uretprobe" : "uprobe", t.binary, t.symbol.text));
    captures(t.captures);
  }
  void target(const UsdtTarget& t) {
    line(fmt::format("usdt {}:{}{}", t.binary, t.provider ? t.provider->text + ":" : "", t.name.text));
    captures(t.captures);
  }
  void target(const PacketTarget& t) {
    std::string globs;
    for (const Pattern& p : t.functions) globs += (globs.empty() ? "" : ", ") + p.text;
    line(fmt::format("{}{}", t.graph ? "packet graph" : "packet", globs.empty() ? "" : "(" + globs + ")"));
  }
  void target(const IntervalTarget& t) { line(fmt::format("interval {}ns", t.period_ns)); }
  void target(const ProfileTarget& t) { line(fmt::format("profile {}hz", t.frequency_hz)); }
  void target(const SessionTarget& t) { line(t.at_end ? "end" : "begin"); }
  void target(const IterTarget& t) {
    line("iter:" + t.name);
    captures(t.captures);
  }
  void target(const BpfProgramTarget& t) {
    line("bpf:" + t.program.text);
    captures(t.captures);
  }
  void target(const WatchpointTarget& t) {
    std::string at = t.symbol.empty() ? fmt::format("0x{:x}", t.address) : fmt::format("kaddr(\"{}\")", t.symbol);
    line(fmt::format("watchpoint:{}:{}:{}", at, t.length, t.mode));
  }
  void target(const PerfEventTarget& t) {
    line(fmt::format("{}:{}{}", t.hardware ? "hardware" : "software", t.event,
                     t.frequency_hz ? fmt::format(":{}hz", t.frequency_hz)
                                    : t.period ? fmt::format(":{}", t.period) : ""));
  }

  void captures(const std::optional<CaptureList>& list) {
    if (!list) return;
    Nest nest(*this);
    if (list->items.empty()) line("captures (none)");
    for (const Capture& capture : list->items) {
      if (capture.expr) {
        expr("capture", *capture.expr);
      } else {
        line("capture *");
      }
    }
  }

  void clauses(const Clauses& c) {
    for (const Join& join : c.joins) {
      std::string optional = std::string(join.optional ? " optional" : "") + (join.keep ? " keep" : "");
      line(join.within ? fmt::format("join as {}{} within {}ns", join.name, optional, join.within->value)
                       : "join as " + join.name + optional);
      Nest nest(*this);
      probe(join.source);
      if (join.where) expr("where", *join.where);
      expr("on", *join.on);
    }
    if (c.where) expr("where", *c.where);
    if (c.select_range) {
      line("select");
      Nest nest(*this);
      for (const SelectItem& item : c.select) {
        expr(item.alias ? "item as " + *item.alias : "item", *item.expr);
      }
    }
    if (c.group_by_range) {
      line("group by");
      Nest nest(*this);
      for (const ExprPtr& key : c.group_by) visit(*key);
    }
    if (c.every) line(fmt::format("every {}ns", c.every->value));
    if (c.for_duration) line(fmt::format("for {}ns", c.for_duration->value));
    if (c.limit) line(fmt::format("limit {}", c.limit->value));
    if (c.track) line("track");
  }

  std::ostream& out_;
  int depth_ = 0;
};

}  // namespace

void dumpScript(const Script& script, std::ostream& out) { Dumper(out).script(script); }

const std::optional<CaptureList>* Target::captures() const {
  if (const auto* f = std::get_if<FunctionTarget>(&kind)) return &f->captures;
  if (const auto* t = std::get_if<TracepointTarget>(&kind)) return &t->captures;
  if (const auto* s = std::get_if<SyscallTarget>(&kind)) return &s->captures;
  if (const auto* u = std::get_if<UprobeTarget>(&kind)) return &u->captures;
  if (const auto* u = std::get_if<UsdtTarget>(&kind)) return &u->captures;
  if (const auto* i = std::get_if<IterTarget>(&kind)) return &i->captures;
  if (const auto* b = std::get_if<BpfProgramTarget>(&kind)) return &b->captures;
  return nullptr;
}

}  // namespace kq::ast
