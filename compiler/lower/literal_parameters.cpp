#include "compiler/lower/literal_parameters.h"

#include <elf.h>

#include <cstring>
#include <optional>

#include <fmt/format.h>

namespace kq::lower {
namespace {

using Op = ast::BinaryOp;

bool isComparison(Op op) {
  return op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge || op == Op::Eq || op == Op::Ne ||
         op == Op::Match;
}

/// The bytes of a parameter's value, as lowering compares them; none for a string whose
/// comparison reads nothing (`~ "*"`).
std::vector<uint8_t> valueBytes(const ast::Expr& literal, Op op) {
  std::vector<uint8_t> out;
  if (literal.kind == ast::ExprKind::Integer) {
    uint64_t v = ast::as<ast::IntegerLiteral>(literal).value;
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));  // little-endian, as BPF
    return out;
  }
  std::string text = ast::as<ast::StringLiteral>(literal).value;
  bool prefix = op == Op::Match && !text.empty() && text.back() == '*';
  if (prefix) text.pop_back();
  size_t need = text.size() + (prefix ? 0 : 1);
  if (need == 0) return out;
  out.assign(text.begin(), text.end());
  out.resize((need + 7) / 8 * 8, 0);  // the NUL, then what the widest word's load reads
  return out;
}

/// Collects the parameters of `where` clauses, checked against the tables of every probe
/// each clause is lowered for: a literal is a parameter only where each of them agrees.
class Collector {
 public:
  Collector(FileId main_file, LiteralParameters& out) : main_file_(main_file), out_(out) {}

  void where(const ast::Expr& e, const std::vector<const sema::ExprTable*>& tables) {
    if (e.kind == ast::ExprKind::Unary) {
      const auto& u = ast::as<ast::Unary>(e);
      if (u.op == ast::UnaryOp::LogicalNot) where(*u.operand, tables);
      return;
    }
    if (e.kind != ast::ExprKind::Binary) return;
    const auto& bin = ast::as<ast::Binary>(e);
    if (bin.op == Op::And || bin.op == Op::Or) {
      where(*bin.lhs, tables);
      where(*bin.rhs, tables);
      return;
    }
    if (!isComparison(bin.op)) return;
    // `~` matches its left side against the literal on its right.
    if (bin.op != Op::Match) consider(bin, *bin.lhs, *bin.rhs, tables);
    consider(bin, *bin.rhs, *bin.lhs, tables);
  }

 private:
  void consider(const ast::Binary& bin, const ast::Expr& literal, const ast::Expr& other,
                const std::vector<const sema::ExprTable*>& tables) {
    bool integer = literal.kind == ast::ExprKind::Integer;
    if ((!integer && literal.kind != ast::ExprKind::String) || literal.range.file != main_file_) return;
    if (other.kind == ast::ExprKind::Integer || other.kind == ast::ExprKind::String) return;
    std::string kind;
    for (const sema::ExprTable* table : tables) {
      auto b = table->find(&bin), o = table->find(&other), l = table->find(&literal);
      if (b == table->end() || o == table->end() || l == table->end()) return;
      // A lookup's name (`caps[cap] == "CAP_SYS_ADMIN"`) is folded to keys when checked.
      if (b->second.keys || o->second.constant || !o->second.type || !l->second.type) return;
      const sema::Type& type = *o->second.type;
      if (integer ? bin.op == Op::Match || !type.isInteger()
                  : !type.isStringLike() || (bin.op != Op::Eq && bin.op != Op::Ne && bin.op != Op::Match)) {
        return;
      }
      kind = l->second.type->spelling;
    }
    if (tables.empty()) return;
    std::vector<uint8_t> bytes = valueBytes(literal, bin.op);
    if (bytes.empty()) return;
    if (!integer) {
      const std::string& text = ast::as<ast::StringLiteral>(literal).value;
      kind = fmt::format("string {} bytes{}", text.size(), bin.op == Op::Match && !text.empty() && text.back() == '*' ? ", a prefix" : "");
    }
    LiteralParameter p;
    p.literal = &literal;
    p.offset = static_cast<uint32_t>(out_.bytes.size());
    p.size = static_cast<uint32_t>(bytes.size());
    p.kind = std::move(kind);
    out_.bytes.insert(out_.bytes.end(), bytes.begin(), bytes.end());
    out_.params.push_back(std::move(p));
  }

  FileId main_file_;
  LiteralParameters& out_;
};

}  // namespace

const LiteralParameter* LiteralParameters::find(const ast::Expr& literal) const {
  for (const LiteralParameter& p : params) {
    if (p.literal == &literal) return &p;
  }
  return nullptr;
}

std::string LiteralParameters::shape(std::string_view text) const {
  std::string out(text);
  for (size_t i = 0; i < params.size(); ++i) {
    const LiteralParameter& p = params[i];
    for (uint32_t k = p.literal->range.begin; k < p.literal->range.end && k < out.size(); ++k) out[k] = '?';
    // Equal values may be read once (lowering computes an expression written twice once):
    // an object is for values equal where these are.
    std::optional<size_t> same;
    for (size_t j = 0; j < i && !same; ++j) {
      const LiteralParameter& q = params[j];
      if (q.size == p.size && std::memcmp(&bytes[q.offset], &bytes[p.offset], p.size) == 0) same = j;
    }
    out += fmt::format("\n# parameter {}: {}{}", i, p.kind, same ? fmt::format(", equal to {}", *same) : "");
  }
  return out;
}

LiteralParameters literalParameters(const sema::Program& program, FileId main_file) {
  LiteralParameters out;
  Collector collect(main_file, out);
  for (const sema::ResolvedQuery& q : program.queries) {
    std::vector<const sema::ExprTable*> tables;
    for (const sema::ResolvedProbe& p : q.probes) tables.push_back(&p.exprs);
    if (q.query->clauses.where) collect.where(*q.query->clauses.where, tables);
    for (const sema::ResolvedJoin& j : q.joins) {
      if (j.join && j.join->where) collect.where(*j.join->where, {&j.probe.exprs});
    }
  }
  return out;
}

bool setLiteralParameters(std::vector<char>& elf, const std::vector<uint8_t>& bytes) {
  Elf64_Ehdr header;
  if (elf.size() < sizeof header) return false;
  std::memcpy(&header, elf.data(), sizeof header);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_shentsize != sizeof(Elf64_Shdr) ||
      header.e_shoff + uint64_t{header.e_shnum} * sizeof(Elf64_Shdr) > elf.size()) {
    return false;
  }
  auto section = [&](size_t i) {
    Elf64_Shdr s;
    std::memcpy(&s, elf.data() + header.e_shoff + i * sizeof s, sizeof s);
    return s;
  };
  auto within = [&](const Elf64_Shdr& s) { return s.sh_offset <= elf.size() && s.sh_size <= elf.size() - s.sh_offset; };
  for (size_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr symtab = section(i);
    if (symtab.sh_type != SHT_SYMTAB || symtab.sh_link >= header.e_shnum || !within(symtab)) continue;
    Elf64_Shdr strings = section(symtab.sh_link);
    if (!within(strings)) return false;
    std::string_view names(elf.data() + strings.sh_offset, strings.sh_size);
    for (size_t k = 0; k < symtab.sh_size / sizeof(Elf64_Sym); ++k) {
      Elf64_Sym sym;
      std::memcpy(&sym, elf.data() + symtab.sh_offset + k * sizeof sym, sizeof sym);
      if (sym.st_name >= names.size()) continue;
      std::string_view name = names.substr(sym.st_name);
      name = name.substr(0, name.find('\0'));
      if (name != kLiteralParametersSymbol) continue;
      if (sym.st_size != bytes.size() || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= header.e_shnum) return false;
      Elf64_Shdr data = section(sym.st_shndx);
      if (data.sh_type != SHT_PROGBITS || !within(data) || sym.st_value > data.sh_size ||
          bytes.size() > data.sh_size - sym.st_value) {
        return false;
      }
      std::memcpy(elf.data() + data.sh_offset + sym.st_value, bytes.data(), bytes.size());
      return true;
    }
  }
  return false;
}

}  // namespace kq::lower
