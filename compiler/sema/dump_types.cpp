// `kq --dump types`: every expression of every query with its type, per probe.
#include <ostream>

#include <fmt/format.h>

#include "compiler/ast/visitor.h"
#include "compiler/sema/builtins/builtins.h"
#include "compiler/sema/sema.h"

namespace kq::sema {
namespace {

std::string refText(const ExprInfo& info, const SourceManager& sources) {
  switch (info.ref) {
    case Ref::Arg: return fmt::format("argument {}", info.index);
    case Ref::Param: return fmt::format("parameter {}", info.index);
    case Ref::Builtin: return fmt::format("builtin `{}`", builtinVariables()[info.index].name);
    case Ref::Let: return "constant";
    case Ref::Enumerator: return fmt::format("enumerator = {}", info.value);
    case Ref::Property: return fmt::format("property `{}` of argument {}", info.fn->name, info.index);
    case Ref::Fn: return fmt::format("fn `{}`", info.fn->name);
    case Ref::BuiltinFunction:
      if (const PacketFilter* filter = info.packet_filter.get()) {
        return fmt::format("builtin `pcap`{}: {} instructions from the MAC header, {} from the "
                           "network header",
                           filter->skb_arg ? fmt::format(" of argument {}", *filter->skb_arg) : "",
                           filter->from_mac.size(), filter->from_network.size());
      }
      return fmt::format("builtin `{}`", builtinFunctions()[info.index].name);
    case Ref::Return: return "return value";
    case Ref::CFunction: return fmt::format("C function `{}`", info.c_function->name);
    case Ref::Joined: return fmt::format("kept by join {}, value {}", info.index, info.slot);
    case Ref::None: break;
  }
  if (info.member) {
    return info.member->bitfield_bits
               ? fmt::format("member at bit {}, {} bits", info.member->bit_offset,
                             info.member->bitfield_bits)
               : fmt::format("member at byte {}", info.member->bit_offset / 8);
  }
  (void)sources;
  return "";
}

/// What a lookup or a folded comparison means: where its names come from, which keys.
std::string tableText(const ExprInfo& info, bool alone) {
  std::string out;
  if (info.keys) {
    std::string keys;
    for (int64_t k : *info.keys) keys += fmt::format("{}{}", keys.empty() ? "" : ", ", k);
    out = fmt::format("compares the key with {}", keys);
  } else if (info.table && info.type->kind != TypeKind::Table) {
    out = info.table->stringKeys() ? fmt::format("the number {}, from its table", info.value)
          : info.table->origin.empty()
              ? fmt::format("a name from a table of {} entries", info.table->names.size())
              : fmt::format("a name from {}", info.table->origin);
  }
  if (out.empty()) return "";
  return alone ? out : ", " + out;
}

class TypeDumper : public ast::ExprVisitor<TypeDumper> {
 public:
  TypeDumper(const ExprTable& table, const SourceManager& sources, std::ostream& out, int depth)
      : table_(table), sources_(sources), out_(out), depth_(depth) {}

  /// Prints `e`; false when its parts have no types of their own here.
  bool visitAny(const ast::Expr& e) {
    const std::string& text = sources_.file(e.range.file).text();
    std::string source = text.substr(e.range.begin, e.range.end - e.range.begin);
    auto it = table_.find(&e);
    std::string type = it == table_.end() ? "?" : it->second.type->spelling;
    std::string ref = it == table_.end() ? "" : refText(it->second, sources_);
    if (it != table_.end()) ref += tableText(it->second, ref.empty());
    out_ << std::string(depth_ * 2, ' ') << source << " : " << type;
    if (!ref.empty()) out_ << "  (" << ref << ")";
    out_ << "\n";
    // A value a join keeps, and `w.p` in the joined event's scope (the name `p`), are whole.
    if (it == table_.end()) return true;
    if (it->second.ref == Ref::Joined) return false;
    return e.kind != ast::ExprKind::Member || it->second.ref == Ref::None;
  }

#define KQ_DUMP_LEAF(Method, Node) \
  void Method(const ast::Node& e) { visitAny(e); }
#define KQ_DUMP_NODE(Method, Node) \
  void Method(const ast::Node& e) {  \
    if (!visitAny(e)) return;        \
    ++depth_;                        \
    visitChildren(e);                \
    --depth_;                        \
  }
  KQ_DUMP_LEAF(visitInteger, IntegerLiteral)
  KQ_DUMP_LEAF(visitString, StringLiteral)
  KQ_DUMP_LEAF(visitBool, BoolLiteral)
  KQ_DUMP_LEAF(visitIdentifier, Identifier)
  KQ_DUMP_LEAF(visitReturnValue, ReturnValue)
  KQ_DUMP_NODE(visitCall, Call)
  KQ_DUMP_NODE(visitMember, Member)
  KQ_DUMP_NODE(visitIndex, Index)
  KQ_DUMP_NODE(visitUnary, Unary)
  KQ_DUMP_NODE(visitBinary, Binary)
  KQ_DUMP_NODE(visitConditional, Conditional)
  KQ_DUMP_NODE(visitCast, Cast)
  KQ_DUMP_LEAF(visitTable, TableLiteral)
#undef KQ_DUMP_LEAF
#undef KQ_DUMP_NODE

 private:
  const ExprTable& table_;
  const SourceManager& sources_;
  std::ostream& out_;
  int depth_;
};

}  // namespace

void dumpTypes(const CheckedProgram& checked, const SourceManager& sources, std::ostream& out) {
  int number = 0;
  for (const ResolvedQuery& query : checked.program.queries) {
    ++number;
    for (const ResolvedProbe& probe : query.probes) {
      std::string chain;
      for (const ResolvedTarget& t : probe.chain) chain += (chain.empty() ? "" : " -> ") + t.description;
      out << fmt::format("query {}, probe {}{}\n", number, chain, probe.at_exit ? " (at exit)" : "");
      const ResolvedTarget& last = probe.chain.back();
      for (const ProbeArg& arg : last.args) {
        out << fmt::format("  arg{} {} : {}\n", arg.index, arg.name.empty() ? "-" : arg.name,
                           arg.type->spelling);
      }
      std::vector<const ast::Expr*> roots;
      for (const ast::Target& t : query.query->probes.front().chain) {
        const std::optional<ast::CaptureList>* captures = t.captures();
        if (!captures || !*captures) continue;
        for (const ast::Capture& c : (*captures)->items) {
          if (c.expr) roots.push_back(c.expr.get());
        }
      }
      const ast::Clauses& clauses = query.query->clauses;
      if (clauses.where) roots.push_back(clauses.where.get());
      for (const ast::SelectItem& item : clauses.select) roots.push_back(item.expr.get());
      for (const ast::ExprPtr& key : clauses.group_by) roots.push_back(key.get());
      for (const ast::Expr* root : roots) {
        if (probe.exprs.count(root)) TypeDumper(probe.exprs, sources, out, 1).visit(*root);
      }
    }
    for (size_t j = 0; j < query.joins.size(); ++j) {
      const ResolvedJoin& join = query.joins[j];
      if (join.probe.chain.empty()) continue;
      out << fmt::format("query {}, join {} `{}`, probe {}{}\n", number, j, join.join->name,
                         join.probe.chain.back().description,
                         join.probe.at_exit ? " (at exit)" : "");
      std::vector<const ast::Expr*> roots;
      if (join.join->where) roots.push_back(join.join->where.get());
      for (const JoinKey& key : join.keys) roots.push_back(key.joined);
      roots.insert(roots.end(), join.stored.begin(), join.stored.end());
      for (const ast::Expr* root : roots) {
        if (join.probe.exprs.count(root)) TypeDumper(join.probe.exprs, sources, out, 1).visit(*root);
      }
    }
  }
}

}  // namespace kq::sema
