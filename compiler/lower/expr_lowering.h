// Expressions to BPF IR, inside one program. Values are 64-bit integers (pointers too);
// strings are byte buffers; member accesses are CO-RE relocatable and are direct loads
// where the verifier knows the pointer's BTF type (tp_btf, fentry), probe reads elsewhere.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lower/bpf_module.h"
#include "compiler/btf/btf.h"
#include "compiler/lower/core_types.h"
#include "compiler/lower/frame.h"
#include "compiler/lower/literal_parameters.h"
#include "compiler/lower/pt_regs.h"
#include "compiler/sema/program.h"

namespace kq::sema {
struct BuiltinVariable;
}

namespace kq::lower {

/// A value: an i64 (integers, pointers) or, for strings, a pointer to a byte buffer. A
/// value whose type is an array or a record is its address (an array decays to a pointer
/// to its first element), so lowering needs no pointer types sema did not make.
struct Val {
  llvm::Value* v = nullptr;
  const sema::Type* type = nullptr;
  bool btf = false;   // a pointer the verifier knows by BTF type: direct loads allowed
  bool user = false;  // a pointer into user memory
  uint32_t len = 0;   // strings: buffer size
};

/// Memory holding a value: a member, an element, `*p`.
struct Place {
  llvm::Value* addr = nullptr;  // ptr
  const sema::Type* type = nullptr;
  bool btf = false;
  bool user = false;
  /// A bitfield: `addr` is the end of its CO-RE access chain, which is never read itself;
  /// where the bits are comes from `preserve.field.info` relocations on it.
  bool bitfield = false;
};

/// Something ExprLowering could not compile, at a place in the query. It lowers a zero
/// instead and never throws; whoever builds the program reports these as diagnostics.
struct LoweringProblem {
  SourceRange range;
  std::string message;
};

/// How the program being generated reaches the probe's arguments and return value.
/// A `packet` program's own facts: which site it serves and where its skb (argument 0) and a
/// drop's reason are. A kprobe program serving every function reads them from its attach
/// cookie (kPacketCookie*), a tracepoint program knows them.
struct PacketAccess {
  llvm::Value* cookie = nullptr;
  uint32_t site = 0;                    // a tracepoint's site number
  std::optional<uint32_t> reason_slot;  // a tracepoint's context slot of the reason
  bool frees = false;                   // a tracepoint where the skb is freed
  bool releases = false;                // a tracepoint where the skb lets go of its data
  bool unseen = false;                  // a tracepoint attached only to end journeys
  /// The members its journey is kept through (null: by the skb's address alone).
  const sema::PacketIdentity* identity = nullptr;
  /// A slot holding the journey known before the skb was forgotten where it is freed (0:
  /// none, or not such a site); and the journey recorded (null: the skb's address).
  llvm::Value* journey_before_free = nullptr;
  llvm::Value* journey = nullptr;
  /// Some function of the kprobe's takes its skb or reason past the argument registers:
  /// read from the stack at entry.
  bool stack_args = false;
  /// The skb, read once when the program starts (a tracepoint's may be NULL: the program
  /// returns then, and the verifier knows this value is not), or at a function's return
  /// (`packet graph`) the one its entry saw.
  llvm::Value* skb = nullptr;
  bool at_return = false;
  /// `packet graph`, at entry: this call's depth in its function on this thread.
  llvm::Value* depth = nullptr;
  /// An XDP or TC program's fexit: its type (its return is the packet's verdict there), and
  /// whether its context is an XDP buffer (the skb is then the one whose head it starts at).
  uint32_t program_type = 0;
  bool xdp = false;
  /// nft_do_chain's fexit: where its packet and hook are (its return is the chain's verdict).
  const sema::NetfilterHookAccess* netfilter = nullptr;
};

/// A packet kprobe's cookie: the site number in the low 32 bits, then the register of the
/// skb, then the register of the reason plus one (0: none), then whether the skb is freed.
inline constexpr uint32_t kPacketCookieSkbShift = 32;
inline constexpr uint32_t kPacketCookieReasonShift = 40;
inline constexpr uint64_t kPacketCookieFrees = uint64_t{1} << 48;
inline constexpr uint64_t kPacketCookieReleases = uint64_t{1} << 49;
/// A site the globs left out, attached only to end the journeys of the skbs it frees.
inline constexpr uint64_t kPacketCookieUnseen = uint64_t{1} << 50;
/// The register of the skb the site's skb is a copy of, plus one (0: not a copy).
inline constexpr uint32_t kPacketCookieCopyShift = 56;

struct ArgAccess {
  /// SyscallRegs: a tp_btf program on raw_syscalls:sys_enter, whose ctx[0] is the `struct
  /// pt_regs *` the system call was made with (its arguments in the syscall convention).
  /// Usdt: a uprobe at a USDT site, whose arguments are where the site's note says.
  enum class Kind { CtxArray, PtRegs, TracepointRecord, SyscallRegs, Stash, Usdt, None } kind = Kind::None;
  llvm::Value* ctx = nullptr;
  /// Stash: the values saved at entry (loaded at the start of the exit program), one per
  /// argument the entry program stashed: arguments 0..stashed.size()-1 and no others.
  std::vector<llvm::Value*> stashed;
  llvm::Value* entry_ns = nullptr;
  /// At exit: the value each `entry(x)` had at entry (saved by the entry program).
  std::map<const ast::Expr*, llvm::Value*> entry_values;
  /// Usdt: the site.
  const host::UsdtSite* usdt = nullptr;
  /// TracepointRecord: field offsets.
  const host::TracepointFormat* format = nullptr;
  bool skip_syscall_nr = false;
  /// Where the return value is: ctx[return_slot] (fexit), the return register of
  /// pt_regs (kretprobe, uretprobe), or the `ret` field of a sys_exit record.
  enum class Ret { None, CtxSlot, Regs, SyscallExit } ret = Ret::None;
  uint32_t return_slot = 0;
  /// SyscallExit: the offset of `ret` in the sys_exit_<name> record
  /// (sema::ResolvedTarget::exit_ret_offset); unset, the 64-bit layout's 16.
  std::optional<uint32_t> syscall_ret_offset;
  /// PtRegs and Regs: whose calling convention and `struct pt_regs`.
  Arch arch = hostArch();
  /// raw_syscalls programs: `task_struct.thread_info` then its `status`, whose TS_COMPAT bit
  /// tells a 32-bit call (found by the planner, which uses raw_syscalls only with them).
  std::vector<btf::MemberSteps> compat_status;
  /// Arguments are user-space pointers (syscalls, uprobes).
  bool user_args = false;
  /// CtxArray: arguments already read (by slot), which reading them again returns: an
  /// iterator's objects, read once and checked for NULL, as the verifier tracks that check
  /// on the register it was made on.
  std::map<uint32_t, llvm::Value*> read_slots;
  /// PtRegs: the register of each argument, when it differs from its index (packet mode:
  /// `skb` is wherever each function takes it).
  std::vector<uint32_t> arg_positions;
  /// `func` is the traced function's address (bpf_get_func_ip), not a constant name.
  bool func_ip = false;
  /// `caller`: the frames of the kernel stack, below the tracing machinery's, that are the
  /// traced function's own: 1 at a function's entry (kprobe, fentry) and at fexit, else 0.
  uint32_t own_frames = 0;
  /// `packet` programs.
  std::optional<PacketAccess> packet;
  /// The probe's arguments (their types), for properties.
  const std::vector<sema::ProbeArg>* probe_args = nullptr;
  /// `elapsed`: the map of one 64-bit word holding when the session started (made when first
  /// asked for, ObjectBuilder::sessionStart).
  std::function<llvm::GlobalVariable*()> session_start;
  /// A constant value for `func` and `probe` in this program.
  std::string func;
  std::string probe;
  /// A syscall glob's `probe` (a lookup of the call's number): the number, constant in a
  /// program for one call; unset in a raw_syscalls program, which reads it.
  std::optional<uint32_t> probe_key;
  /// What each join of the query kept for this event (copied out of its map): where each
  /// value is, and its bytes (joined[join][slot], as sema's Ref::Joined numbers them).
  struct Kept {
    llvm::Value* addr = nullptr;
    uint32_t bytes = 0;
  };
  std::vector<std::vector<Kept>> joined;
};

class ExprLowering {
 public:
  ExprLowering(BpfModule& module, CoreTypes& core, const sema::TypeTable& types, llvm::IRBuilder<>& b,
               llvm::DISubprogram* scope, const sema::ExprTable& exprs, const ArgAccess& args,
               uint32_t string_bytes);

  /// The expression's value. A value read from memory or a helper (a member, an argument,
  /// a builtin, a property) is computed once per program: the same expression written again
  /// (`where skb->len > 100 select skb->len`) is the value already read wherever that read
  /// dominates, so the value filtered is the value printed.
  Val value(const ast::Expr& e);
  /// A condition as an i1.
  llvm::Value* condition(const ast::Expr& e);
  Place place(const ast::Expr& e);
  /// The expression as a string in a buffer of at most `max` bytes.
  Val string(const ast::Expr& e, uint32_t max);

  /// Writes the expression's bytes for a record field of `size` bytes at `dst`.
  void storeString(const ast::Expr& e, llvm::Value* dst, uint32_t size);
  /// Writes argument `index` (a char pointer or a tracepoint string) as a string field.
  void storeArgString(uint32_t index, const sema::Type* type, llvm::Value* dst, uint32_t size);
  /// Writes `join`'s field at `dst` (plan::FieldKind::StringList): the strings of the
  /// NULL-terminated array `array`, at most plan::kJoinArgs, and how many there were.
  void storeStringList(const ast::Expr& array, llvm::Value* dst, uint32_t size);
  /// Writes `size` bytes of what `e` points at (or is: an array, a struct) at `dst` (`buf`).
  void storeBytes(const ast::Expr& e, llvm::Value* dst, uint32_t size);
  /// `buf(p, n)` of a run-time `n` (plan::FieldKind::SizedBuffer): at `dst` how many bytes
  /// were kept (`n`, at most `size - 8`, 0 when negative), then those bytes of what `e`
  /// points at.
  void storeSizedBytes(const ast::Expr& e, const ast::Expr& n, llvm::Value* dst, uint32_t size);
  /// `n` as a length from 0 to `max`: a negative one is 0, a larger one `max`.
  llvm::Value* boundedLength(const ast::Expr& n, uint64_t max);
  /// Writes `ntop(family, addr)`'s field (plan::FieldKind::IpAddress) at `dst`: the
  /// family, then the 16 bytes (AF_INET6) or 4 bytes `addr` points at, or is.
  void storeIpAddress(const ast::Call& ntop, llvm::Value* dst);
  /// Reads `size` bytes of the struct `e` points at (or is) into `dst`; returns its address.
  llvm::Value* storeRecord(const ast::Expr& e, llvm::Value* dst, uint32_t size);
  /// The integer a lookup of a name (`caps[cap]`, `enum_name(s, "TCP_")`, a `fn` or `let`
  /// that is one) names: what its record field keeps, printed as the name.
  Val lookupKey(const ast::Expr& e);

  /// `packet` programs: the skb, the site's number, a drop's reason (0 where none), and
  /// whether the skb is freed here.
  llvm::Value* packetSkb();
  /// nft_do_chain's fexit (PacketAccess::netfilter): its `struct nft_pktinfo *`, and that
  /// one's skb (0 where it cannot be read).
  llvm::Value* netfilterPacketInfo();
  llvm::Value* netfilterSkb();
  /// nft_do_chain's return says a rule dropped the packet and freed it already (NF_STOLEN
  /// with an errno: host::kNfStolen).
  llvm::Value* netfilterDropped();
  llvm::Value* packetSite();
  llvm::Value* packetReason();
  llvm::Value* packetJourney();
  llvm::Value* packetJourneyBeforeFree() const { return args_.packet->journey_before_free; }
  /// Whether the skb lets go of its data here (i1).
  llvm::Value* packetReleases();
  /// The skb's data head (null without PacketAccess::identity), and how many skbs share
  /// its data (the shared info's `dataref`, its low 16 bits).
  llvm::Value* packetHead();
  llvm::Value* packetDataUsers(llvm::Value* head);
  /// Whether the skb is a clone or has one (its `cloned` bit, i1).
  llvm::Value* packetCloned();
  llvm::Value* packetFrees();
  llvm::Value* packetUnseen();
  /// Where the site's skb is a copy being made (skb_copy_header): the register of the skb
  /// copied plus one, 0 elsewhere (null: no site of the program makes copies); and that skb.
  llvm::Value* packetCopyPosition();
  llvm::Value* packetCopied(llvm::Value* position);
  /// An XDP or TC program's verdict, its type in the high 32 bits (0 at other sites).
  llvm::Value* packetVerdict();
  /// An XDP program's `xdp_buff->data_hard_start`: the head of the skb it runs on.
  llvm::Value* xdpHardStart();
  bool packetAtReturn() const { return args_.packet && args_.packet->at_return; }
  /// `caller`: the traced function's own frames at the top of the kernel stack.
  uint32_t ownFrames() const { return args_.own_frames; }
  llvm::Value* packetDepth() const { return args_.packet->depth; }

  const sema::ExprInfo& info(const ast::Expr& e) const;
  /// Until `leaveBody`, lowers expressions of the body of the `fn` (or property) that `use`
  /// calls, with its parameters bound as at `use`: a `fmt` in a `fn` is printed from its
  /// arguments, each a field of its own.
  void enterBody(const ast::Expr& use);
  void leaveBody();
  /// The kernel's BTF, for builtins that read kernel structs (`netns`).
  void setKernelBtf(const btf::Btf* btf) { btf_ = btf; }
  /// Where slots come from (the stack up to a budget, then scratch); without one, the stack.
  void setFrame(Frame* frame) { frame_ = frame; }
  /// A live site's literals, read from `global` in .rodata (literal_parameters.h).
  void setLiteralParameters(const LiteralParameters* literals, llvm::GlobalVariable* global) {
    literals_ = literals && !literals->empty() && global ? literals : nullptr;
    literals_global_ = global;
  }
  /// Argument `index` of the probe, as a value of `type`.
  Val arg(uint32_t index, const sema::Type* type);
  llvm::Value* i64(uint64_t v) { return b_.getInt64(v); }
  /// A stack slot of `bytes`, allocated in the entry block.
  llvm::Value* slot(uint32_t bytes);
  /// A load of the program's context or of kernel memory the verifier knows, marked
  /// !invariant.load: a value is read once per event, so the same read in another query's
  /// part of the program is this one (site_programs.cpp's shareReads).
  llvm::Value* readOnce(llvm::Type* type, llvm::Value* addr);
  /// bpf_probe_read_{kernel,user}[_str](dst, size, src).
  llvm::Value* probeRead(llvm::Value* dst, uint32_t size, llvm::Value* src, bool user, bool str);
  /// The string at `src` into `size` bytes at `dst`: NUL-terminated when it ends there,
  /// else its first `size` bytes with no NUL, which the runtime shows ending in `…` (a
  /// string of exactly size - 1 characters is not cut).
  void readString(llvm::Value* dst, uint32_t size, llvm::Value* src, bool user);
  /// The same with a size known as the event happens (bounded, as the verifier needs).
  llvm::Value* probeRead(llvm::Value* dst, llvm::Value* size, llvm::Value* src, bool user, bool str);
  /// Where a join kept `e`'s value for this event; null (after reporting) when it did not.
  const ArgAccess::Kept* kept(const sema::ExprInfo& info);
  /// What could not be compiled (each also lowered as a zero).
  const std::vector<LoweringProblem>& problems() const { return problems_; }
  /// In a raw_syscalls program: the number of the system call it fires for (sys_enter's
  /// `id`, or at sys_exit the number its registers kept).
  llvm::Value* syscallNumber(bool at_exit);
  /// A syscall glob's `probe`: the number of the call (ArgAccess::probe_key).
  llvm::Value* probeKey();
  /// Whether the current task is making a 32-bit compat system call (x86-64's TS_COMPAT,
  /// through CO-RE; false where BTF does not say): its numbers are another table's.
  llvm::Value* compatSyscall();

 private:
  Val load(const Place& p);
  Val loadBitfield(const Place& p);
  /// The address `steps` (CO-RE member accesses) lead to from `addr`.
  llvm::Value* access(llvm::Value* addr, const std::vector<std::pair<btf::BtfType, uint32_t>>& steps);
  const sema::Type* argType(uint32_t index) const;
  const host::TracepointField* recordField(uint32_t index) const;
  Val returnValue(const sema::Type* type);
  Val registerArg(uint32_t index, const sema::Type* type);
  Val usdtArg(uint32_t index, const sema::Type* type);
  llvm::Value* registerAt(llvm::Value* position);
  /// A register of the probe's `struct pt_regs` (at `regs`, else the program's context),
  /// through CO-RE when BTF describes it.
  llvm::Value* readRegister(const RegisterSlot& reg, llvm::Value* regs = nullptr);
  /// SyscallRegs: the `struct pt_regs *` of the system call (ctx[0]).
  llvm::Value* syscallRegs();
  /// Records a problem at the expression being lowered; returns a zero of `type`.
  Val problem(std::string message, const sema::Type* type);
  /// Bytes in one element of an array or pointer target, relocated for kernel records.
  llvm::Value* elementSize(const sema::Type* element);
  Val builtin(const ast::Expr& e, const sema::BuiltinVariable& variable);
  /// Whether `e` is a name: an identifier, or `issue.rq` in the program of the joined
  /// event `issue` (sema gave it the meaning of `rq` there).
  static bool isName(const ast::Expr& e, const sema::ExprInfo& ei);
  static const std::string& nameOf(const ast::Expr& e);

  /// A builtin variable that is text (`comm`, `func`, `probe`), written as a string.
  void storeBuiltinString(const sema::BuiltinVariable& variable, llvm::Value* dst, uint32_t size);
  void storeConstant(std::string_view text, llvm::Value* dst, uint32_t size);
  Val builtinCall(const ast::Call& c, const sema::ExprInfo& info);
  /// `pcap("...")`: whether the packet matches (packet_filter_lowering.cpp).
  Val packetFilter(const ast::Call& c, const sema::ExprInfo& info);
  /// A member of the `struct sk_buff` at `skb` (an integer or pointer, found by sema):
  /// loaded where the verifier knows the skb, else read; null if CO-RE cannot reach it.
  llvm::Value* packetMember(const Val& skb, const btf::MemberSteps& member, llvm::Value* tmp);
  /// Follows `members` from the current task (probe reads, CO-RE); 0 if BTF lacks a step.
  /// The current task's member at the end of `members` (sema found them: `ppid`, `netns`),
  /// following pointer members on the way.
  Val currentTaskChain(const std::vector<btf::MemberSteps>& members);
  Val call(const ast::Call& c);
  /// A call of a `use c` function, linked from its bitcode and inlined (c_call.cpp).
  Val cCall(const ast::Call& c, const sema::ExprInfo& ei);
  Val binary(const ast::Binary& b);
  Val compareStrings(const ast::Binary& b);
  /// A folded comparison of a lookup with a name: the key against the keys of that name.
  Val compareKeys(const ast::Binary& b, const std::vector<int64_t>& keys);
  /// A lookup's name as a string: a chain of its table's constants, else the number.
  void storeLookup(const ast::Expr& e, llvm::Value* dst, uint32_t size);
  /// The signed decimal text of `v` (`-12`), cut to fit `size` bytes with a NUL.
  void storeDecimal(llvm::Value* v, llvm::Value* dst, uint32_t size);
  /// Whether the strings in two buffers of `n` bytes are equal (up to the first NUL), as i1.
  llvm::Value* compareBuffers(llvm::Value* a, llvm::Value* c, uint32_t n);
  Val compute(const ast::Expr& e);
  /// A value `value` computed before, where it is still valid (its block dominates the one
  /// being written); null if none.
  const Val* known(const ast::Expr& e) const;
  Val cast(const ast::Cast& c);
  Val expand(const sema::ExprInfo& info, const ast::Expr& use, std::vector<Val> args);
  Place member(const ast::Member& m);
  Val extend(llvm::Value* v, const sema::Type* type);
  void at(const ast::Expr& e);
  llvm::Value* toPtr(llvm::Value* v);
  uint32_t sizeOf(const sema::Type* t) const;
  /// The parameter `e` is, if it is one (setLiteralParameters).
  const LiteralParameter* literalParameter(const ast::Expr& e) const;
  /// Whether `e` holds a parameter: its value is not to be kept for another expression
  /// that looks the same, since another run of the object may give them other values.
  bool holdsLiteralParameter(const ast::Expr& e) const;
  /// `width` bytes of parameter `p`, from byte `at` of its value.
  llvm::Value* loadLiteralParameter(const LiteralParameter& p, uint32_t width, uint32_t at);

  BpfModule& module_;
  CoreTypes& core_;
  const sema::TypeTable& types_;
  llvm::IRBuilder<>& b_;
  llvm::DISubprogram* scope_;
  const sema::ExprTable* exprs_;
  const ArgAccess& args_;
  uint32_t string_bytes_;
  /// Values of a function's parameters while its body is lowered.
  std::vector<Val> params_;
  /// What `enterBody` replaced.
  std::vector<std::pair<const sema::ExprTable*, std::vector<Val>>> outer_scopes_;
  /// Values read once (`value`): the expression, the table it was typed in, the value.
  struct Known {
    const ast::Expr* expr;
    const sema::ExprTable* exprs;
    Val val;
  };
  std::vector<Known> known_;
  const btf::Btf* btf_ = nullptr;
  Frame* frame_ = nullptr;
  const LiteralParameters* literals_ = nullptr;
  llvm::GlobalVariable* literals_global_ = nullptr;
  std::vector<LoweringProblem> problems_;
  /// The expression being lowered, where a problem is reported.
  SourceRange current_;
  /// What `info` answers for an expression sema did not type (a problem, not a crash).
  sema::ExprInfo untyped_;
};

}  // namespace kq::lower
