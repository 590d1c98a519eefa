// kq's abstract syntax tree: what the parser produces and the semantic passes read.
// Nodes own their children; every node carries the source range it was parsed from.
// Names are not resolved here (an Identifier is just text): compiler/sema does that.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/diag/source.h"

namespace kq::ast {

// ---------------------------------------------------------------------------------------
// Expressions

enum class ExprKind : uint8_t {
  Integer,
  String,
  Bool,
  Identifier,
  ReturnValue,
  Call,
  Member,
  Index,
  Unary,
  Binary,
  Conditional,
  Cast,
  Table,
};

struct Expr {
  Expr(ExprKind kind, SourceRange range) : kind(kind), range(range) {}
  virtual ~Expr() = default;

  const ExprKind kind;
  SourceRange range;
};

using ExprPtr = std::unique_ptr<Expr>;

/// What a number's suffix made of it; the value is stored in the base unit.
enum class NumberUnit : uint8_t {
  None,
  Nanoseconds,  // 10ms, 2s, 5m
  Bytes,        // 4k, 1M
  Hertz,        // 99hz
};

struct IntegerLiteral : Expr {
  IntegerLiteral(SourceRange range, uint64_t value, NumberUnit unit, std::string spelling)
      : Expr(ExprKind::Integer, range), value(value), unit(unit), spelling(std::move(spelling)) {}
  uint64_t value;
  NumberUnit unit;
  std::string spelling;  // as written: `0xdeadbeef`, `10ms`
};

struct StringLiteral : Expr {
  StringLiteral(SourceRange range, std::string value)
      : Expr(ExprKind::String, range), value(std::move(value)) {}
  std::string value;  // escapes decoded
};

struct BoolLiteral : Expr {
  BoolLiteral(SourceRange range, bool value) : Expr(ExprKind::Bool, range), value(value) {}
  bool value;
};

/// A bare name: an argument, builtin, `let` constant, implicit property or enumerator.
struct Identifier : Expr {
  Identifier(SourceRange range, std::string name)
      : Expr(ExprKind::Identifier, range), name(std::move(name)) {}
  std::string name;
};

/// `return`: the probed function's return value.
struct ReturnValue : Expr {
  explicit ReturnValue(SourceRange range) : Expr(ExprKind::ReturnValue, range) {}
};

/// `name(args...)`: a function, aggregate or `fn` declared in a script.
struct Call : Expr {
  Call(SourceRange range, std::string callee, SourceRange callee_range, std::vector<ExprPtr> args)
      : Expr(ExprKind::Call, range),
        callee(std::move(callee)),
        callee_range(callee_range),
        args(std::move(args)) {}
  std::string callee;
  SourceRange callee_range;
  std::vector<ExprPtr> args;
};

/// `base.member` or `base->member`.
struct Member : Expr {
  Member(SourceRange range, ExprPtr base, bool arrow, std::string member, SourceRange member_range)
      : Expr(ExprKind::Member, range),
        base(std::move(base)),
        arrow(arrow),
        member(std::move(member)),
        member_range(member_range) {}
  ExprPtr base;
  bool arrow;
  std::string member;
  SourceRange member_range;
};

struct Index : Expr {
  Index(SourceRange range, ExprPtr base, ExprPtr index)
      : Expr(ExprKind::Index, range), base(std::move(base)), index(std::move(index)) {}
  ExprPtr base;
  ExprPtr index;
};

enum class UnaryOp : uint8_t { Negate, Plus, LogicalNot, BitNot, Deref, AddressOf };

struct Unary : Expr {
  Unary(SourceRange range, UnaryOp op, SourceRange op_range, ExprPtr operand)
      : Expr(ExprKind::Unary, range), op(op), op_range(op_range), operand(std::move(operand)) {}
  UnaryOp op;
  SourceRange op_range;
  ExprPtr operand;
};

enum class BinaryOp : uint8_t {
  Mul, Div, Mod,
  Add, Sub,
  Shl, Shr,
  Lt, Le, Gt, Ge,
  Eq, Ne, Match,  // Match: `comm ~ "nginx*"`, a glob match on strings
  BitAnd, BitXor, BitOr,
  And, Or,
};

struct Binary : Expr {
  Binary(SourceRange range, BinaryOp op, SourceRange op_range, ExprPtr lhs, ExprPtr rhs)
      : Expr(ExprKind::Binary, range),
        op(op),
        op_range(op_range),
        lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  BinaryOp op;
  SourceRange op_range;
  ExprPtr lhs;
  ExprPtr rhs;
};

/// `cond ? then : otherwise`.
struct Conditional : Expr {
  Conditional(SourceRange range, ExprPtr cond, ExprPtr then, ExprPtr otherwise)
      : Expr(ExprKind::Conditional, range),
        cond(std::move(cond)),
        then(std::move(then)),
        otherwise(std::move(otherwise)) {}
  ExprPtr cond;
  ExprPtr then;
  ExprPtr otherwise;
};

/// A type as written in a cast or a parameter: `struct sock *`, `unsigned long`, `u32`.
struct TypeName {
  enum class Tag : uint8_t { None, Struct, Union, Enum };
  Tag tag = Tag::None;
  std::string name;  // `sock` for `struct sock`, `unsigned long`, `u32`, a typedef name
  uint32_t pointer_depth = 0;
  SourceRange range;
};

struct Cast : Expr {
  Cast(SourceRange range, TypeName type, ExprPtr operand)
      : Expr(ExprKind::Cast, range), type(std::move(type)), operand(std::move(operand)) {}
  TypeName type;
  ExprPtr operand;
};

/// A key or value of a table literal: an integer (`21`, `-1`, `0x10`) or a string.
struct TableConstant {
  bool is_string = false;
  int64_t integer = 0;
  std::string string;  // escapes decoded
  SourceRange range;
};

struct TableEntry {
  TableConstant key;
  TableConstant value;
};

/// `{0: "CAP_CHOWN", 1: "CAP_DAC_OVERRIDE"}`: names for numbers (or numbers for names),
/// used by indexing it (`caps[cap]`).
struct TableLiteral : Expr {
  TableLiteral(SourceRange range, std::vector<TableEntry> entries)
      : Expr(ExprKind::Table, range), entries(std::move(entries)) {}
  std::vector<TableEntry> entries;
};

/// Downcast with a kind check (the caller has checked `expr.kind`).
template <typename T>
T& as(Expr& expr) {
  return static_cast<T&>(expr);
}
template <typename T>
const T& as(const Expr& expr) {
  return static_cast<const T&>(expr);
}

// ---------------------------------------------------------------------------------------
// Probes

/// A name or glob as written (`ip_send_skb`, `tcp_v4_*`).
struct Pattern {
  std::string text;
  SourceRange range;

  bool isGlob() const { return text.find_first_of("*?") != std::string::npos; }
};

/// `(skb, size, return)`; `*` stands for every argument.
struct Capture {
  ExprPtr expr;  // null for `*`
  SourceRange range;
};

struct CaptureList {
  std::vector<Capture> items;
  SourceRange range;
};

/// `ip_send_skb(skb)`, `tcp_*`, `nf_conntrack:nf_conntrack_in`.
struct FunctionTarget {
  std::optional<Pattern> module;
  Pattern function;
  std::optional<CaptureList> captures;
  /// `vfs_read+0x10`: a kprobe at this many bytes into the function (an instruction's start).
  std::optional<uint64_t> offset = std::nullopt;
  SourceRange offset_range = {};
};

/// `tracepoint:net:net_dev_xmit`; `rawtracepoint:sched_switch` (bpftrace's spelling: an
/// event by its name alone, any tracepoint BTF has, a tracefs event or not).
struct TracepointTarget {
  Pattern category;  // empty for a raw tracepoint
  Pattern event;
  std::optional<CaptureList> captures;
  bool raw = false;
};

/// `syscall:openat(filename)`.
struct SyscallTarget {
  Pattern syscall;
  std::optional<CaptureList> captures;
};

/// `uprobe:/usr/bin/bash:readline`, `uretprobe:...`.
/// `struct req *req`: a user-space function's argument, declared with its type.
struct TypedParam {
  TypeName type;
  std::string name;
  SourceRange name_range;
};

struct UprobeTarget {
  bool on_return;
  std::string binary;
  SourceRange binary_range;
  Pattern symbol;
  std::optional<CaptureList> captures;
  /// `uprobe:./myapp:handle_request(struct req *req)`: the arguments' types, in order.
  std::vector<TypedParam> params = {};
};

/// `usdt:./myapp:myapp:request` (a provider's probe), `usdt:./myapp:request` (the probe of
/// any provider): a statically defined probe of a program or library (<sys/sdt.h>).
struct UsdtTarget {
  std::string binary;
  SourceRange binary_range;
  std::optional<Pattern> provider;
  Pattern name;
  std::optional<CaptureList> captures;
  /// `(long id, char *path)`: the arguments' types, in order, in place of those their sizes give.
  std::vector<TypedParam> params = {};
};

/// `packet` (every traceable function taking `struct sk_buff *`), `packet graph`.
/// `packet`, `packet graph`, `packet(ip_*, udp_*)`: the functions are globs narrowing the set.
struct PacketTarget {
  bool graph = false;
  std::vector<Pattern> functions;
};

/// `interval 1s`.
struct IntervalTarget {
  uint64_t period_ns;
};

/// `watchpoint:0x404038:8:w`, `watchpoint:kaddr("jiffies"):8:rw`: a hardware breakpoint on
/// `length` bytes at an address (a number, or a kernel symbol's), firing as they are read
/// (`r`), written (`w`) or run (`x`).
struct WatchpointTarget {
  uint64_t address = 0;
  std::string symbol;  // `kaddr("sym")`'s name, else empty
  SourceRange address_range;
  uint64_t length = 0;
  SourceRange length_range;
  std::string mode;
  SourceRange mode_range;
};

/// `iter:task`, `iter:task_file`: a BPF iterator over the kernel's objects, run once as the
/// session starts; each object is an event.
struct IterTarget {
  std::string name;
  SourceRange name_range;
  std::optional<CaptureList> captures;
};

/// `bpf:xdp_drop_udp`, `bpf:42`, `bpf:xdp_*`: a BPF program loaded in the kernel (an XDP or
/// TC program, anyone's), by its name, a glob or its id; fentry on it, fexit for `return`.
struct BpfProgramTarget {
  Pattern program;
  std::optional<CaptureList> captures;
};

/// `begin`, `end`: once, as the session starts (its probes attached) and as it ends.
struct SessionTarget {
  bool at_end = false;
};

/// `profile 99hz`.
struct ProfileTarget {
  uint64_t frequency_hz;
};

/// `software:page-faults`, `software:page-faults:100`, `hardware:cycles:99hz`: a perf event
/// counted on every CPU, the program running once every `period` events (or `frequency_hz`
/// times a second); both zero, the event's own default period.
struct PerfEventTarget {
  bool hardware;
  std::string event;  // as written: `page-faults`, `faults`, `cycles`
  SourceRange event_range;
  uint64_t period = 0;
  uint64_t frequency_hz = 0;
};

struct Target {
  /// The capture list of a target that takes one, or null.
  const std::optional<CaptureList>* captures() const;

  using Variant = std::variant<FunctionTarget, TracepointTarget, SyscallTarget, UprobeTarget,
                               UsdtTarget, PacketTarget, IntervalTarget, ProfileTarget,
                               PerfEventTarget, SessionTarget, WatchpointTarget, IterTarget,
                               BpfProgramTarget>;
  Variant kind;
  SourceRange range;
};

/// `a -> b -> c`: fires at `c` when called (directly or not) from `b`, itself within `a`.
/// A plain probe is a chain of one target.
struct Probe {
  std::vector<Target> chain;
  SourceRange range;
};

// ---------------------------------------------------------------------------------------
// Clauses, queries and declarations

struct SelectItem {
  ExprPtr expr;
  std::optional<std::string> alias;
  SourceRange range;
  /// Kept in each record for a sink, never shown (`--packet-bytes`: the packet's bytes for
  /// `-f pcapng`); a query whose items are all hidden shows what it would without them.
  bool hidden = false;
};

/// A clause that takes one number: `every 1s`, `for 10s`, `limit 20`.
struct NumberClause {
  uint64_t value;  // nanoseconds for durations, a count for `limit`
  SourceRange range;
};

/// `join tracepoint:block:block_rq_issue(rq) as issue on rq within 1s`: events of `source`
/// that pass `where` are remembered, keyed by their side of `on`, until an event of the
/// query's own probe with the same key reads them as `issue.NAME`.
struct Join {
  Probe source;
  std::string name;
  SourceRange name_range;
  ExprPtr where;  // null without one
  ExprPtr on;
  std::optional<NumberClause> within;
  SourceRange range;
  /// `optional`: the query's event makes a row even when no joined event waits (an outer
  /// join); what it would have kept is then zero (`NAME.time` is 0).
  bool optional = false;
  /// `keep`: a joined event is not used up by the row it makes; each row reads the newest
  /// event under its key (a socket's owner, a device's last state).
  bool keep = false;
};

struct Clauses {
  std::vector<Join> joins;
  ExprPtr where;
  std::optional<SourceRange> select_range;
  std::vector<SelectItem> select;
  std::optional<SourceRange> group_by_range;
  std::vector<ExprPtr> group_by;
  std::optional<NumberClause> every;
  std::optional<NumberClause> for_duration;
  std::optional<NumberClause> limit;
  /// `track`: a packet matched once is followed by its address until it is freed.
  std::optional<SourceRange> track;
};

/// `trace probe, probe ... where ... select ...`.
struct Query {
  std::vector<Probe> probes;
  Clauses clauses;
  SourceRange range;
  /// `trace ... as opens`: the query's name (empty: it goes by its number).
  std::string name = "";
  SourceRange name_range = {};
};

/// `use net`.
struct UseDecl {
  std::string module;
  SourceRange range;
  /// `use "myapp.h"`: the header (then `module` is empty), and where its string is.
  std::string header = "";
  SourceRange header_range = {};
  /// `use c "helpers.c"`: `header` is a C file whose functions queries call.
  bool c_source = false;
};

/// `let big = 1000`.
struct LetDecl {
  std::string name;
  SourceRange name_range;
  ExprPtr value;
  SourceRange range;
};

struct Param {
  std::string name;
  SourceRange name_range;
  std::optional<TypeName> type;
};

/// `fn tuple(skb: struct sk_buff *) = fmt(...)`.
struct FnDecl {
  std::string name;
  SourceRange name_range;
  std::vector<Param> params;
  ExprPtr body;
  SourceRange range;
};

/// `extension where ... select ...`: a filter and data for ipftrace2 (`kq build --ipft`).
struct ExtensionDecl {
  Clauses clauses;
  SourceRange range;
};

/// `config max_groups = 100000`: a setting of the whole script (sema/config.h).
struct ConfigDecl {
  std::string name;
  SourceRange name_range;
  ExprPtr value;
  SourceRange range;
};

using Item = std::variant<UseDecl, LetDecl, FnDecl, ExtensionDecl, ConfigDecl, Query>;

/// A whole `.kq` file or command-line query.
struct Script {
  FileId file = 0;
  std::vector<Item> items;
};

}  // namespace kq::ast
