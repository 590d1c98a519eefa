#include "driver/packet_bytes.h"

#include <fmt/format.h>

#include "compiler/parse/parse.h"

namespace kq::driver {
namespace {

/// Whether every probe of `q` sees exactly one named `struct sk_buff *` (so the `net`
/// module's properties mean its packet), or is `trace packet`.
bool hasPackets(const sema::ResolvedQuery& q) {
  if (q.aggregates || q.probes.empty()) return false;
  for (const sema::ResolvedProbe& probe : q.probes) {
    const sema::ResolvedTarget& target = probe.chain.back();
    if (!target.packet_sites.empty()) continue;
    size_t skbs = 0;
    for (const sema::ProbeArg& a : target.args) {
      skbs += !a.name.empty() && a.type && a.type->spelling == "struct sk_buff *";
    }
    if (skbs != 1) return false;
  }
  return true;
}

}  // namespace

size_t addPacketColumns(ast::Script& script, const sema::CheckedProgram& checked, uint32_t bytes,
                        SourceManager& sources) {
  size_t added = 0;
  for (ast::Item& item : script.items) {
    auto* query = std::get_if<ast::Query>(&item);
    if (!query) continue;
    const sema::ResolvedQuery* resolved = nullptr;
    for (const sema::ResolvedQuery& q : checked.program.queries) {
      if (q.query == query) resolved = &q;
    }
    if (!resolved || !hasPackets(*resolved)) continue;
    // The columns as kq text, parsed once for each query (each owns its expressions).
    std::string text = fmt::format("trace packet select buf(nethdr, {}) as {}, network_len as {}, "
                                   "network_linear_len as {}, netns as {}",
                                   bytes, engine::kPacketBytesColumn, engine::kPacketLengthColumn,
                                   engine::kPacketLinearColumn, engine::kPacketNetnsColumn);
    FileId file = sources.add("<--packet-bytes>", text);
    Diagnostics diags;
    std::optional<ast::Script> parsed = parse::parseScript(sources, file, diags);
    if (!parsed || parsed->items.empty()) continue;
    auto& columns = std::get<ast::Query>(parsed->items.front()).clauses.select;
    for (ast::SelectItem& c : columns) {
      c.hidden = true;
      query->clauses.select.push_back(std::move(c));
    }
    ++added;
  }
  return added;
}

}  // namespace kq::driver
