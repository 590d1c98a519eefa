// What each record and each aggregate table holds: the fields of a probe's record
// (captures ksnoop-style, then `select` columns), and an aggregate query's key and value
// slots. Everything here comes from sema's checked program: column names and key identity
// from the query's shape, field kinds from the builtins' descriptors, literal operands
// already evaluated. Internal to compiler/lower.
#pragma once

#include <memory>
#include <vector>

#include "compiler/lower/lower.h"
#include "plan/event_layout.h"

namespace llvm {
class GlobalVariable;
}

namespace kq::lower {

/// One value a record (or an aggregate key) carries, and the expression that computes it.
struct Field {
  plan::FieldLayout layout;
  const ast::Expr* expr = nullptr;  // null for an argument captured by `*`
  uint32_t arg = 0;                 // the argument, for `*`
  const sema::Type* type = nullptr;
  bool func_ip = false;  // the traced function's address (`func` where one program serves many)
  /// A `packet` probe's hidden facts (plan::PacketLayout), computed by its program.
  enum class Packet : uint8_t { None, Skb, Site, Return, Reason, Journey, Verdict } packet = Packet::None;
  /// A `fmt` argument inside a `fn`: the `fn` use whose body `expr` belongs to.
  const ast::Expr* within = nullptr;
  /// A syscall glob's hidden field: the call's number, which names the record's probe
  /// (plan::ProbeLayout::name_field).
  bool probe_name = false;
};

/// How a probe of an aggregate query updates its query's map.
struct Aggregation {
  plan::AggregateLayout layout;
  std::vector<Field> keys;                  // computed into the key, like record fields
  std::vector<const ast::Expr*> arguments;  // each slot's argument (null for count(), top())
  llvm::GlobalVariable* map = nullptr;
};

struct LayoutOptions {
  uint32_t string_bytes = 64;
  uint32_t dump_bytes = 1024;
  /// `func` is the traced function's address, shown as its symbol (globs, packets).
  bool func_is_address = false;
  /// The query's joins: a value one keeps (`issue.comm`) is laid out as the join keeps it.
  const std::vector<sema::ResolvedJoin>* joins = nullptr;
  /// `packet`: where packets are seen; `func` is then the site's number, printed as its name.
  const std::vector<sema::PacketSite>* packet_sites = nullptr;
};

/// What a join keeps for each event of its source, as the fields of its map's value: each
/// value the query reads through `NAME.` (field i is ResolvedJoin::stored[i]), then, with
/// `within`, the event's time.
struct JoinValue {
  std::vector<Field> fields;
  uint32_t bytes = 0;
  int32_t time_field = -1;
};
JoinValue joinValue(const sema::ResolvedJoin& join, const LayoutOptions& options);

/// The record's fields: captures (ksnoop-style), then `select` items; offsets after the
/// fixed header.
std::vector<Field> recordFields(const sema::ResolvedQuery& query, const sema::ResolvedProbe& probe,
                                const LayoutOptions& options);

/// Bytes in a record with `fields` (header included).
uint32_t recordBytes(const std::vector<Field>& fields);

/// An aggregate query's key and value layout (from its first probe); its map is not made.
std::unique_ptr<Aggregation> aggregationOf(const sema::ResolvedQuery& query,
                                           const sema::ResolvedProbe& probe, uint32_t query_number,
                                           const LayoutOptions& options);

}  // namespace kq::lower
