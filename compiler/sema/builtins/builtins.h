// kq's builtin names and functions, as tables of descriptors, one file per family:
// variables.cpp (pid, comm, task, ...), functions.cpp (str, hex, fmt, kaddr, ...), printed.cpp
// (cat, join, buf, strftime), net.cpp (byte order, pcap filters), names.cpp (enum_name), aggregates.cpp
// (count, sum, hist, ...). A descriptor is everything kq knows about a builtin: its name and
// arity, `check` (its type, and its literal operands evaluated), the record field that holds
// its value (`field`), the aggregate it keeps, and its id, on which lowering
// (compiler/lower/builtin_lowering.cpp) switches: a new id that lowering does not handle
// fails to compile there. Nothing else in kq looks at a builtin's name.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/btf/btf.h"
#include "compiler/diag/diagnostic.h"
#include "host/kernel_info.h"
#include "compiler/sema/lookup_table.h"
#include "compiler/sema/packet_filter.h"
#include "compiler/sema/program.h"
#include "compiler/sema/types.h"
#include "plan/event_layout.h"

namespace kq::sema {

/// What a builtin variable needs from its probe.
enum class Needs : uint8_t {
  Nothing,
  Exit,      // only at function exit: `duration`
  Function,  // only where a function is traced: `func`
};

/// Builtin variables that need code of their own, by what they are; `Computed` ones are
/// made from their `ValueRecipe` alone.
enum class BuiltinVar : uint8_t {
  Computed, Comm, Func, Probe, Kstack, Ustack, Duration, Task, Elapsed, Caller,
};

/// How a `Computed` builtin variable's value is made, with no code of its own: a BPF
/// helper's result (shifted right, then masked), or members followed from the current
/// task (`current->real_parent->tgid`), relocated by CO-RE.
struct ValueRecipe {
  int helper = 0;  // a helper id from include/uapi/linux/bpf.h, or 0
  uint8_t shift = 0;
  uint64_t mask = ~0ull;
  std::vector<std::string> task_path;
};

/// The record field a builtin's value is kept in: how it prints and how many bytes it takes
/// (0: as its type says).
struct FieldShape {
  plan::FieldKind kind;
  uint32_t bytes = 0;
};

struct BuiltinVariable {
  std::string_view name;
  BuiltinVar id;
  /// Its type; the error type when the kernel's BTF lacks what it needs (`task`).
  const Type* (*type)(TypeTable& types, const btf::Btf& btf);
  Needs needs;
  std::string_view doc;
  /// The field holding it, when its type alone does not say (`kstack`, `comm`).
  std::optional<FieldShape> field = std::nullopt;
  /// `Computed`: how to make it.
  ValueRecipe recipe = {};
};

/// Builtin functions and aggregates by what they are.
enum class BuiltinFn : uint8_t {
  Str, Hex, Errno, Ntop, Ksym, Usym, Kaddr, Fmt, EnumName, NetnsName,
  Cat, Join, Buf, Strftime,
  Ntohs, Htons, Ntohl, Htonl, Pcap,
  Entry,
  Macros,
  Count, Sum, Avg, Min, Max, Hist, Lhist, Top,
};

/// Where a call may stand. Most builtins have a value anywhere; some have one only as a
/// column prints (the text of `join`, `buf`, `strftime`), or only when the event prints
/// (`cat` reads its file then), so they cannot be operands of other expressions.
enum class Placement : uint8_t {
  Anywhere,
  Column,   // a `select` item, a capture, a `group by` key or a `fmt` argument
  Printed,  // a `select` item, a capture or a `fmt` argument: never a key
};

/// A call being checked: its arguments' types are known; `check` returns the call's type,
/// or reports a diagnostic and returns the error type. Operands that must be literals
/// (`lhist` bounds, `top`'s n, `str`'s length, `kaddr`'s address) are evaluated into
/// `operands`; a call that names numbers (`enum_name`) builds its `table` from the kernel's
/// types (`btf`).
struct BuiltinCall {
  const ast::Call& call;
  std::vector<const Type*> args;
  TypeTable& types;
  Diagnostics& diags;
  host::KernelInfo& kernel;
  const btf::Btf& btf;
  std::vector<int64_t> operands = {};
  std::shared_ptr<const LookupTable> table = nullptr;
  /// The probe whose arguments are in scope (null in declarations; without arguments in a
  /// `fn` body), for builtins that take one of them when none is named (`pcap`).
  const ResolvedTarget* target = nullptr;
  /// `pcap`: the filter, compiled.
  std::shared_ptr<const PacketFilter> packet_filter = nullptr;
  /// The compilation's files: C read for the call (`macros`) is added for its diagnostics.
  SourceManager* sources = nullptr;

  /// Reports that argument `i` has the wrong type; `wanted` says what it should be.
  const Type* badArgument(size_t i, std::string_view wanted);
  /// The string literal argument `i` is, or null after reporting that it must be one
  /// (`what`: "the path", as in "`cat` needs the path as a string literal").
  const ast::StringLiteral* literalString(size_t i, std::string_view what, std::string_view example);
  /// `str(p, n[, max])`, `buf(p, n[, max])`: the bytes argument `n` (at `length`) keeps: `n`
  /// itself when a literal (1 to `most`); when it is known only as the event happens, the
  /// literal `max` after it (1 to `most`), else `fallback`. Nothing after reporting.
  std::optional<uint64_t> lengthBound(size_t length, uint64_t most, uint64_t fallback);
  /// Whether argument `length` is a length known only as the event happens.
  bool runTimeLength(size_t length) const {
    return call.args.size() > length && call.args[length]->kind != ast::ExprKind::Integer;
  }
};

struct BuiltinFunction {
  std::string_view name;
  BuiltinFn id;
  size_t min_args;
  size_t max_args;
  const Type* (*check)(BuiltinCall& call);
  std::string_view signature;  // for messages and docs: `str(p[, n])`
  std::string_view doc;
  /// The field holding its value, from its arguments' types; null: as the call's type says.
  FieldShape (*field)(const std::vector<const Type*>& args,
                      const std::vector<int64_t>& operands) = nullptr;
  /// An aggregate: what it keeps in its query's map.
  std::optional<plan::AggregateKind> aggregate = std::nullopt;
  /// What it needs from its probe (`entry(x)`: a function exit).
  Needs needs = Needs::Nothing;
  Placement placement = Placement::Anywhere;
};

/// `f`, standing only where `placement` says (for the tables' brace initializers).
inline BuiltinFunction placed(BuiltinFunction f, Placement placement) {
  f.placement = placement;
  return f;
}

/// The network namespaces `ip netns` names (/run/netns, as the query is compiled), by inode:
/// the table `netns_name` names inodes with, and `netns == "blue"` finds one in.
std::shared_ptr<LookupTable> netnsTable(host::KernelInfo& kernel);

const std::vector<BuiltinVariable>& builtinVariables();
const std::vector<BuiltinFunction>& builtinFunctions();

/// Tables of each family, gathered by the two functions above.
void addProcessVariables(std::vector<BuiltinVariable>& out);
void addFormatFunctions(std::vector<BuiltinFunction>& out);
void addPrintedFunctions(std::vector<BuiltinFunction>& out);
void addNameFunctions(std::vector<BuiltinFunction>& out);
void addMacroFunctions(std::vector<BuiltinFunction>& out);
void addNetFunctions(std::vector<BuiltinFunction>& out);
void addProbeFunctions(std::vector<BuiltinFunction>& out);
void addAggregateFunctions(std::vector<BuiltinFunction>& out);

}  // namespace kq::sema
