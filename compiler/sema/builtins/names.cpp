// Names for numbers from the kernel's types: `enum_name(x, "TCP_")` names `x` by the
// enumerators that start with the prefix, of any enum (the TCP states' enum has no name).
// The table is built here, from the BTF kq compiles against, and applied when printing.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>

#include <fmt/format.h>

#include "compiler/sema/builtins/builtins.h"

namespace kq::sema {
namespace {

size_t commonPrefixLength(const std::vector<btf::Enumerator>& enumerators) {
  std::string_view first = enumerators.front().name;
  size_t n = first.size();
  for (const btf::Enumerator& e : enumerators) {
    size_t i = 0;
    while (i < n && i < e.name.size() && e.name[i] == first[i]) ++i;
    n = i;
  }
  return n;
}

/// Which enum `prefix` names when several have enumerators starting with it: one whose
/// matching enumerators share no longer prefix (`TCP_` names the TCP states, not the
/// `TCP_NLA_...` attributes), the one with the most of them; without such an enum, the
/// one with the most matches; the first in BTF on a tie.
const btf::EnumeratorGroup& chooseEnum(const std::vector<btf::EnumeratorGroup>& groups,
                                       std::string_view prefix) {
  auto rank = [&](const btf::EnumeratorGroup& g) {
    bool named_by_prefix = commonPrefixLength(g.enumerators) == prefix.size();
    return std::pair{named_by_prefix, g.enumerators.size()};
  };
  const btf::EnumeratorGroup* best = &groups.front();
  for (const btf::EnumeratorGroup& g : groups) {
    if (rank(g) > rank(*best)) best = &g;
  }
  return *best;
}

std::string describeEnum(const btf::EnumeratorGroup& group) {
  std::string name(group.enum_type.name());
  std::string out = name.empty() ? "an anonymous enum" : "enum " + name;
  const auto& list = group.enumerators;
  out += fmt::format(": {} = {}", list.front().name, list.front().value);
  if (list.size() > 1) out += fmt::format(", {} = {}", list[1].name, list[1].value);
  if (list.size() > 2) out += fmt::format(", ... ({} names)", list.size());
  return out;
}

constexpr const char* kPrefixExample =
    "the prefix is the start the enumerators' names share, as in `enum_name(state, \"TCP_\")`";

/// A note for a prefix no enumerator starts with: the prefix in upper case, or one alike.
std::string prefixHint(const btf::Btf& btf, std::string_view prefix) {
  std::string upper(prefix);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper != prefix && !btf.enumeratorsWithPrefix(upper).empty()) {
    return fmt::format("did you mean `{}`? enumerators are written in upper case", upper);
  }
  // Of the prefixes as long, the closest; of those as close, the one most names share.
  std::map<std::string_view, size_t> prefixes;
  for (std::string_view name : btf.enumeratorNames()) {
    if (name.size() >= prefix.size()) ++prefixes[name.substr(0, prefix.size())];
  }
  size_t limit = std::max<size_t>(1, prefix.size() / 3);
  std::pair<size_t, size_t> best{limit + 1, 0};  // (distance, -names), smaller is better
  std::string_view found;
  for (const auto& [candidate, count] : prefixes) {
    std::pair<size_t, size_t> rank{editDistance(prefix, candidate), SIZE_MAX - count};
    if (rank < best) best = rank, found = candidate;
  }
  if (!found.empty()) return fmt::format("did you mean `{}`?", found);
  return kPrefixExample;
}

const Type* checkEnumName(BuiltinCall& c) {
  if (!(c.args[0]->isInteger() || c.args[0]->isError())) return c.badArgument(0, "an integer");
  const ast::Expr& prefix_arg = *c.call.args[1];
  if (prefix_arg.kind != ast::ExprKind::String) {
    c.diags.report(DiagKind::TypeMismatch, prefix_arg.range,
                   "`enum_name` needs its prefix as a string literal, as in "
                   "`enum_name(state, \"TCP_\")`");
    return c.types.error();
  }
  const std::string& prefix = ast::as<ast::StringLiteral>(prefix_arg).value;
  if (prefix.empty()) {
    c.diags.report(DiagKind::ValueOutOfRange, prefix_arg.range, "`enum_name` needs a prefix")
        .note(kPrefixExample);
    return c.types.error();
  }
  std::vector<btf::EnumeratorGroup> groups = c.btf.enumeratorsWithPrefix(prefix);
  if (groups.empty()) {
    c.diags
        .report(DiagKind::UnknownEnumerator, prefix_arg.range,
                fmt::format("no enumerator of the kernel's enums starts with `{}`", prefix))
        .note(prefixHint(c.btf, prefix));
    return c.types.error();
  }
  const btf::EnumeratorGroup& chosen = chooseEnum(groups, prefix);
  auto table = std::make_shared<LookupTable>();
  // An enumerator sharing an earlier one's value (an alias) does not rename it.
  for (const btf::Enumerator& e : chosen.enumerators) table->names.emplace(e.value, e.name);
  table->origin = describeEnum(chosen);
  c.table = std::move(table);
  return c.types.string();
}

/// `netns_name(inode)`: the name `ip netns` gives the network namespace, from the names in
/// /run/netns as the query is compiled (the kernel keeps the inode).
const Type* checkNetnsName(BuiltinCall& c) {
  if (!(c.args[0]->isInteger() || c.args[0]->isError())) return c.badArgument(0, "a namespace's inode");
  c.table = netnsTable(c.kernel);
  return c.types.string();
}

}  // namespace

std::shared_ptr<LookupTable> netnsTable(host::KernelInfo& kernel) {
  auto table = std::make_shared<LookupTable>();
  std::string listed;
  for (const host::NamedNetns& ns : kernel.netNamespaces()) {
    if (!table->names.emplace(static_cast<int64_t>(ns.inode), ns.name).second) continue;
    listed += fmt::format("{}{} = {}", listed.empty() ? "" : ", ", ns.name, ns.inode);
  }
  table->origin = listed.empty() ? "the network namespaces `ip netns` names: none (/run/netns)"
                                 : "the network namespaces `ip netns` names: " + listed;
  return table;
}

void addNameFunctions(std::vector<BuiltinFunction>& out) {
  out.push_back(
      {"enum_name", BuiltinFn::EnumName, 2, 2, checkEnumName, "enum_name(x, \"PREFIX\")"});
  out.push_back({"netns_name", BuiltinFn::NetnsName, 1, 1, checkNetnsName, "netns_name(inode)",
                 "the name `ip netns` gives a network namespace (`netns`, `dev_netns`), or its inode"});
}

}  // namespace kq::sema
