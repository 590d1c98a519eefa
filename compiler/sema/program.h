// The output of semantic analysis: every query's probes resolved against the kernel, and
// every expression's type and meaning. Code generation reads this; it never looks names up.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/btf/btf.h"
#include "host/kernel_info.h"
#include "host/perf_events.h"
#include "host/usdt.h"
#include "compiler/sema/lookup_table.h"
#include "compiler/sema/packet_filter.h"
#include "compiler/sema/types.h"
#include "plan/program_plan.h"

namespace kq::sema {

/// A way to attach a probe, in the order kq will try them (plan::Attach: the same
/// names the plan and the loader use).
using AttachKind = plan::Attach;

struct AttachMethod {
  AttachKind kind;
  host::Known available;
  std::string why;  // why it is unavailable or unknown; empty when available
};

/// How kernel functions can be attached here: fentry/fexit first, then kprobes.
std::vector<AttachMethod> functionAttachMethods(host::KernelInfo& kernel,
                                                const std::vector<btf::Function>& functions);

/// A name a probe brings into scope: an argument, a tracepoint field.
struct ProbeArg {
  std::string name;  // empty when the kernel gives the argument no name (reach it as argN)
  const Type* type;
  uint32_t index;
};

/// `packet`: where nft_do_chain finds its packet and the hook it runs (its `struct
/// nft_pktinfo *` argument's `skb`, and `state`'s `hook` and `pf`), found by sema for its
/// return's verdict (`NF_DROP (ip forward)`).
struct NetfilterHookAccess {
  uint32_t pkt = 0;     // the argument
  uint32_t params = 0;  // how many it has: the return's slot at fexit
  btf::MemberSteps skb;
  btf::MemberSteps state;
  btf::MemberSteps hook;  // of `struct nf_hook_state`: u8s
  btf::MemberSteps pf;
};

/// `packet`: one place a packet is seen: a kernel function, or (where neither kprobes nor
/// fentry exist) a tracepoint that carries an skb.
struct PacketSite {
  std::string name;    // `ip_rcv`, `skb:kfree_skb`
  std::string module;  // `vmlinux` or the module's name
  std::string event;   // a tracepoint's event (`kfree_skb`); empty for a function
  uint32_t skb = 0;    // the argument (a function's) or context slot (a tracepoint's) of the skb
  std::optional<uint32_t> reason;  // likewise, of an `enum skb_drop_reason`
  bool frees = false;  // the skb's memory is freed here (kfree_skbmem; skb:kfree_skb, skb:consume_skb)
  /// The skb lets go of its data here, before the data's count drops (skb_release_data,
  /// skb_free_head; skb:kfree_skb, skb:consume_skb): the last skb holding it frees it.
  bool releases = false;
  /// Left out by the globs but attached all the same, showing nothing: an skb freed here
  /// ends its journey, so that a later skb at its address is not taken for it.
  bool unseen = false;
  /// The argument of the skb whose copy `skb` is being made (skb_copy_header's `old`): the
  /// copy, data of its own, goes on that skb's journey.
  std::optional<uint32_t> copy_of;
  /// An XDP or TC program (fexit on its function): its verdict shows as the packet's step
  /// there. A TC program's context is the skb; an XDP program's `struct xdp_buff` is found
  /// by its data (PacketIdentity::xdp_hard_start), on the skb whose head it is.
  std::optional<host::BpfProgram> program;
  /// nft_do_chain's return (fexit): the verdict of a base chain's rules shows as a step of
  /// its own, `verdict: NF_DROP (ip forward)`, before a dropped packet is freed.
  std::optional<NetfilterHookAccess> netfilter;
};

/// `packet`: the members a packet's journey is kept through, found by sema so that
/// lowering looks none up. Clones share `head` and have `cloned` set (an skb new at a head
/// freed unseen has not); the data's count of skbs is the shared info's `dataref`, which
/// sits `end` bytes past `head` (or at `end`, a pointer).
struct PacketIdentity {
  btf::MemberSteps cloned;  // a bitfield: set on a clone and its original
  btf::MemberSteps head;
  btf::MemberSteps end;
  btf::MemberSteps dataref;  // of `struct skb_shared_info`
  /// `struct xdp_buff`'s `data_hard_start`: an skb's head where XDP runs on one (generic
  /// XDP, veth's). Unset where the BTF lacks it: XDP programs are then not traced.
  std::optional<btf::MemberSteps> xdp_hard_start;
};

/// One probe target after resolution.
struct ResolvedTarget {
  const ast::Target* target = nullptr;
  /// Kernel functions: the named one, or every match of a glob. For tracepoints with a
  /// BTF handler, the `__bpf_trace_<event>` function.
  std::vector<btf::Function> functions;
  std::string category;  // tracepoint
  std::string event;     // tracepoint event, or `sys_enter_<name>` for syscalls
  std::optional<host::TracepointFormat> format;  // classic tracepoint record
  /// A syscall: the offset of `ret` in its `sys_exit_<name>` record (from tracefs).
  std::optional<uint32_t> exit_ret_offset;
  /// `packet`: where packets are seen: each of `functions` (in order), then tracepoints,
  /// then XDP and TC programs.
  std::vector<PacketSite> packet_sites;
  /// `packet`: how clones are known (empty where the BTF lacks a member: journeys then
  /// follow the skb's address alone).
  std::optional<PacketIdentity> packet_identity;
  /// A glob over tracepoints or syscalls: each match, `category:event`.
  std::vector<std::string> events;
  /// A glob over syscalls whose every match has a number (host/syscall_numbers.h): the
  /// name `probe` has for each (`syscall:openat`), by number. `probe` is then a lookup of
  /// the call's number in it, so that one raw_syscalls program can serve them all.
  std::shared_ptr<const LookupTable> syscall_names;
  /// A glob of tracepoints (or of syscalls kq cannot number), a classic tracepoint program
  /// each: the name `probe` has for each match, by its position in `events`. `probe` is then
  /// that position, a constant of each match's program, named by this table: a table's key
  /// of 8 bytes, not a string of 256.
  std::shared_ptr<const LookupTable> event_names;
  /// The table `probe` is a lookup in, if it is one.
  const std::shared_ptr<const LookupTable>& probeNames() const { return syscall_names ? syscall_names : event_names; }
  std::string binary;                              // uprobe
  /// `software:`/`hardware:`: the event (host/perf_events.h) and how often the program
  /// runs: every `perf_period` events, or `perf_frequency_hz` times a second.
  const host::PerfEventKind* perf_event = nullptr;
  /// `watchpoint:`: the breakpoint's address, bytes and kind (HW_BREAKPOINT_R, _W, _RW, _X).
  struct Watch {
    uint64_t address = 0;
    uint32_t length = 0;
    uint32_t type = 0;
  };
  std::optional<Watch> watch;
  /// `vfs_read+0x10`: a kprobe this many bytes into the one function (no arguments).
  uint64_t kprobe_offset = 0;
  uint64_t perf_period = 0;
  uint64_t perf_frequency_hz = 0;
  std::vector<std::string> symbols;                // uprobe symbols matched
  /// `bpf:`: the BPF programs matched, each traced by fentry (fexit) on its function.
  std::vector<host::BpfProgram> bpf_programs;
  /// `usdt:`: the probes matched, each with its sites and where their arguments are.
  std::vector<host::UsdtProbe> usdt_probes;
  std::vector<ProbeArg> args;
  /// A tracepoint typed by its BTF handler (tp_btf) whose classic record tracefs also
  /// describes: the record's fields, which a query reads instead where it names one that
  /// is no argument of the handler (`bytes` of block:block_rq_issue; tracepoint_record.cpp).
  std::vector<ProbeArg> record_fields;
  /// A tracepoint typed by its classic record in place of its handler: the field that
  /// made it so, and the handler's arguments, which this query then cannot read.
  std::string record_because;
  std::vector<std::string> handler_args;
  /// The return value's type when the probe can see one (functions, syscalls, uprobes).
  const Type* return_type = nullptr;
  std::vector<AttachMethod> attach;
  /// "ip_send_skb", "tracepoint:net:net_dev_xmit", "tcp_v4_* (12 functions)".
  std::string description;
};

/// Whether `target` fires only as its function returns (`uretprobe:`): its query runs at the
/// exit whether or not it reads `return`.
inline bool firesAtReturn(const ResolvedTarget& target) {
  return !target.attach.empty() && target.attach.front().kind == AttachKind::Uretprobe;
}

/// What an identifier or call turned out to be.
enum class Ref : uint8_t {
  None, Arg, Param, Builtin, Let, Enumerator, Property, Fn, BuiltinFunction, Return,
  /// A function of a `use c "file.c"` (ExprInfo::c_function).
  CFunction,
  /// A value the query reads from a joined event (`issue.time`): evaluated when that event
  /// happened, kept, and read back (ResolvedJoin::stored).
  Joined,
};

/// A function of a `use c "helpers.c"` file: its kq types, and the bitcode (compiled for
/// BPF by the C plugin) that lowering links into the module and inlines.
struct CFunction {
  std::string name;
  const Type* return_type = nullptr;
  std::vector<const Type*> params;
  std::shared_ptr<const std::string> bitcode;
};

struct ExprInfo;
using ExprTable = std::unordered_map<const ast::Expr*, ExprInfo>;
struct BuiltinVariable;
struct BuiltinFunction;

struct ExprInfo {
  const Type* type = nullptr;
  Ref ref = Ref::None;
  uint32_t index = 0;  // Arg, Param: argument index; Joined: the join's number
  uint32_t slot = 0;   // Joined: which of the join's stored values
  /// Builtin: its descriptor (builtins/builtins.h).
  const BuiltinVariable* variable = nullptr;
  /// BuiltinFunction: its descriptor, and its literal operands, evaluated (`lhist`'s
  /// bounds, `top`'s n, `str`'s length).
  const BuiltinFunction* function = nullptr;
  std::vector<int64_t> operands;
  int64_t value = 0;   // Enumerator
  const ast::LetDecl* let = nullptr;
  const ast::FnDecl* fn = nullptr;  // Fn and Property
  const CFunction* c_function = nullptr;  // CFunction
  std::optional<MemberPath> member;
  bool constant = false;  // folds to a compile-time value
  /// Fn and Property: the body's expressions, typed for this use.
  std::shared_ptr<ExprTable> body;
  /// A table (its type's kind is Table), or the table a lookup names its value from:
  /// `caps[cap]`, `enum_name(state, "TCP_")`, a `fn` or `let` that is such a lookup. A lookup
  /// of a name is a string (printed from the integer kept, in the kernel a chain of
  /// constants); of a number (`{"read": 0}["read"]`), the constant in `value`.
  std::shared_ptr<const LookupTable> table;
  /// A comparison of a lookup of a name with a string literal (`caps[cap] ==
  /// "CAP_SYS_ADMIN"`, `~ "CAP_NET_*"`), folded: the keys whose names it holds for. The
  /// kernel compares the key with them, never a string.
  std::optional<std::vector<int64_t>> keys;
  /// `pcap("...")`: the filter libpcap compiled, and which argument is the packet.
  std::shared_ptr<const PacketFilter> packet_filter;
  /// A builtin read from the current task (`ppid`, `netns`): each member on the way, found
  /// in the kernel's BTF from `struct task_struct` (a pointer member is followed).
  std::vector<btf::MemberSteps> task_members;
};

/// A `select` item or `group by` key that prints through `fmt`: the `fmt` call, the table
/// its arguments are typed in, and the `fn` use whose body it is (null when it is the item
/// itself). Its arguments become fields of their own; the format applies when printing.
struct FormatUse {
  const ast::Call* call = nullptr;
  const ExprTable* exprs = nullptr;
  const ast::Expr* within = nullptr;
  /// Each argument after the format, as written (`sport(skb)`).
  std::vector<std::string> arg_names;
};

/// What uses `func` in a probe: programs serving many functions must find it at run time.
struct FuncUse {
  bool anywhere = false;
  bool in_where = false;
};

/// How many outer functions a call context (`a -> b -> c`) may have.
inline constexpr uint32_t kMaxCallContext = 8;

/// A probe of a query: its chain of targets (one unless `a -> b`) and its expressions.
struct ResolvedProbe {
  std::vector<ResolvedTarget> chain;
  ExprTable exprs;
  /// Whether it runs at function exit (uses `return` or `duration`).
  bool at_exit = false;
  /// The items and keys that print through `fmt` (query_shape.cpp).
  std::unordered_map<const ast::Expr*, FormatUse> formats;
  /// Each capture's name, as written (`skb->len`).
  std::unordered_map<const ast::Expr*, std::string> capture_names;
  FuncUse func;
};

/// A column of what a query prints: a `select` item, or a `group by` key.
struct Column {
  const ast::Expr* expr = nullptr;
  /// Its header: the `as` name, else the expression as written.
  std::string name;
  /// Aggregate queries: the `group by` key it shows, or -1 for an aggregate.
  int32_t key = -1;
  bool hidden = false;  // ast::SelectItem::hidden
};

/// What a query prints, decided once for all its probes (query_shape.cpp).
struct QueryShape {
  /// Event queries: the `select` items. Aggregate queries: every `group by` key not
  /// selected (keys always print, first), then the `select` items in order.
  std::vector<Column> columns;
  /// Aggregate queries: each `group by` key's name (its `as` name when selected with one).
  std::vector<std::string> key_names;
  uint64_t every_ns = 0;
  uint64_t for_ns = 0;
  uint64_t limit = 0;
};

/// One equality of a join's `on`: the joined event's side, typed in the join's own table,
/// and the query's side, typed in each of the query's probes' tables (the same expression
/// for the shorthand `on rq`).
struct JoinKey {
  const ast::Expr* joined = nullptr;
  const ast::Expr* main = nullptr;
};

/// A `join` of a query (kq-language §7): its source's events that pass its `where` are kept,
/// keyed by their side of `on`, until an event of the query with the same key reads them.
struct ResolvedJoin {
  const ast::Join* join = nullptr;
  /// The joined source: its targets, and the expressions evaluated when its events happen
  /// (its `where`, its side of each key, each stored value).
  ResolvedProbe probe;
  std::vector<JoinKey> keys;
  /// What the query reads through `NAME.`, each evaluated when the joined event happens
  /// (the largest expressions of the query that read nothing else): slot i is stored[i].
  std::vector<const ast::Expr*> stored;
  uint64_t within_ns = 0;  // 0: no limit
  /// Another source of an earlier join of the same name (`join A as q ... join B as q ...`,
  /// as runqlat's wakeups and preemptions feed one wait): the number of that join, whose
  /// map its events go into, keeping the same values (`stored` is that join's, evaluated in
  /// this source's scope) under a key of its own `on` whose query side is the same.
  std::optional<uint32_t> feeds;
};

struct ResolvedQuery {
  const ast::Query* query = nullptr;
  std::vector<ResolvedProbe> probes;
  std::vector<ResolvedJoin> joins;
  bool aggregates = false;
  QueryShape shape;
};

/// An ipftrace2 extension (`extension where ... select ...`): checked in a scope of one
/// argument, `skb` (a `struct sk_buff *`), as ipftrace2's `module()` receives it.
/// A `select` item of an extension as ipftrace2's event struct holds it: a member of its
/// 64-byte `data`, printed by ipftrace2 from the member's BTF type and decl tag.
struct ExtensionMember {
  std::string name;  // the `as` name (or the name selected): the member's
  const ast::Expr* expr = nullptr;  // what `module()` stores
  uint32_t offset = 0;  // in `data`
  uint32_t size = 0;    // 1, 2, 4 or 8
  enum class Shape : uint8_t { Int, Char, Bool, Pointer } shape = Shape::Int;
  bool is_signed = false;
  /// How ipftrace2 prints it: as its type says, `ipft:fmt:hex`, `ipft:fmt:enum:<ref>`.
  enum class Format : uint8_t { Plain, Hex, Enum } format = Format::Plain;
  btf::BtfType enum_type;  // Enum: the kernel's enum, whose names ipftrace2 prints
};

/// ipftrace2's per-event data: `module()` fills these bytes (ipft_event::data).
inline constexpr uint32_t kIpftDataBytes = 64;

struct ResolvedExtension {
  const ast::ExtensionDecl* decl = nullptr;
  ResolvedTarget target;
  ExprTable exprs;
  /// The `select` items, laid out in `data` (extension_layout.cpp).
  std::vector<ExtensionMember> members;
};

/// The script's `config` settings (config.cpp); 0: not set, the default.
struct ScriptConfig {
  /// `config max_groups = N`: how many groups each aggregate table of the script holds
  /// (plan::kAggregateGroups by default); events of groups past them are counted as lost.
  uint32_t max_groups = 0;
};

struct Program {
  std::vector<ResolvedQuery> queries;
  std::vector<ResolvedExtension> extensions;
  ScriptConfig config;
};

}  // namespace kq::sema
