// The code every program is made of: its blocks (entry, setup, bail-out), its frame, the
// process filter, the entry program that stashes arguments for the exit, the main program
// that evaluates `where` and writes a record (or updates an aggregate), and the fork
// follower of `-c`. The planner (probe_planner.h) says which programs to emit; this says
// what is in them. Internal to compiler/lower.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lower/expr_lowering.h"
#include "compiler/lower/frame.h"
#include "compiler/lower/object_builder.h"
#include "compiler/lower/record_layout.h"

namespace kq::lower {

/// One program of a probe, as the planner decided it: where and how it attaches, as the
/// plan will say (its attach, target, group and method, symbols, perf event, offsets,
/// `whole_session`: see plan::PlannedProgram; `ProgramEmitter::finish` adds its function,
/// stack, helpers and query), and what its code needs to know of the place.
/// A stash entry's key: (thread, site, the call's stack pointer or 0), 8 bytes each.
inline constexpr uint32_t kStashKeyBytes = 24;

struct ProgramSite : plan::PlannedProgram {
  std::string section;  // ELF section: `fentry/ip_send_skb`, `kprobe.multi`
  ArgAccess args;
  /// The value of `func` when the program serves one function.
  std::string func;
  /// A stash entry's key is (thread, site): a constant per function, or, for a program
  /// serving many functions, the function's address.
  uint64_t site = 0;
  bool site_is_func_ip = false;
  /// Entry programs: how many arguments this function has, to save for its exit.
  uint32_t arity = 0;
  /// raw_syscalls programs: the system calls they are for, one or a glob's (they return at
  /// once for every other, and for 32-bit compat calls, whose numbers are another table's).
  std::vector<uint32_t> syscall_nrs;
  bool syscall_exit = false;
};

/// A join's map and what it keeps (join_emitter.cpp).
struct JoinTable {
  const sema::ResolvedJoin* join = nullptr;
  /// Another source of an earlier join (sema::ResolvedJoin::feeds): the query looks up only
  /// that join, whose map, counters and layout this one shares.
  bool feeder = false;
  uint32_t counters = 0;  // its first counter (plan::PlannedJoin)
  llvm::GlobalVariable* map = nullptr;
  uint32_t key_bytes = 0;
  JoinValue value;
};

/// The probe being lowered, and what all its programs share.
struct ProbeUnit {
  const sema::ResolvedQuery& query;
  const sema::ResolvedProbe& probe;
  const sema::ResolvedTarget& target;
  std::vector<Field> fields;
  uint32_t id = 0;
  uint32_t record_bytes = 0;
  /// The group all the probe's programs share, when they fall back together.
  std::optional<uint32_t> group;
  /// Call context (`a -> b -> c`): per-thread depths, and how many outer functions.
  llvm::GlobalVariable* context = nullptr;
  uint32_t context_levels = 0;
  /// An aggregate query's map and slots; null for event queries.
  const Aggregation* aggregation = nullptr;
  /// At exit: the query's stash, how many arguments an entry keeps, and the `entry(x)`
  /// calls whose values it keeps after them.
  llvm::GlobalVariable* stash = nullptr;
  uint32_t stash_args = 0;
  std::vector<const ast::Call*> entries;
  /// A join's source: the join its programs keep events for (instead of records).
  const JoinTable* keeps = nullptr;
  /// The query's joins, each looked up by its events (indexed as ResolvedQuery::joins).
  std::vector<const JoinTable*> joins;
  /// `packet`: each recorded skb's journey and data head, by the skb's address, until it is
  /// freed; and each data head's journey, until its last skb lets go (clones share it).
  /// `track` follows the skbs they know.
  llvm::GlobalVariable* journeys = nullptr;
  llvm::GlobalVariable* heads = nullptr;
  /// `packet` with nft_do_chain's verdicts: the journey of each skb freed lately, by its
  /// address, for a chain's drop, which frees its packet before nft_do_chain returns.
  llvm::GlobalVariable* freed = nullptr;
  bool track = false;
  /// `packet graph`: the skb and journey each function entered with, by (thread, site), for
  /// its return.
  llvm::GlobalVariable* graph = nullptr;
  /// `packet graph`: how deep each thread is in each function (every call counts).
  llvm::GlobalVariable* graph_depth = nullptr;
  /// `packet`: records lost for a full ring, per CPU, by site (PacketLayout::lost_map).
  llvm::GlobalVariable* packet_lost = nullptr;
};

/// A program being generated: one query's part of the program at its site (the object's
/// programs are made of parts once every query is lowered, site_programs.h).
struct Program {
  Program(ObjectBuilder& object, llvm::Function* f, llvm::BasicBlock* setup, llvm::BasicBlock* bail,
          bool may_nest)
      : fn(f), b(object.module().context()), bail(bail), frame(object, f, setup, bail, may_nest) {}
  llvm::Function* fn;
  std::string section;
  uint32_t offset = 0;  // of the kq source it is for
  bool counts_only = false;  // see ProgramPart::counts_only
  llvm::IRBuilder<> b;
  llvm::BasicBlock* bail;  // returns 0
  Frame frame;
};

/// Branches to `then` when `cond` holds, else to `otherwise`, with `then` laid out next to
/// the test: BPF's branches cannot be turned around after instruction selection, so the path
/// every event takes, laid out elsewhere, would cost a jump more.
inline void branchOnTo(llvm::IRBuilder<>& b, llvm::Value* cond, llvm::BasicBlock* then,
                       llvm::BasicBlock* otherwise) {
  then->moveAfter(b.GetInsertBlock());
  b.CreateCondBr(cond, then, otherwise);
}

class ProgramEmitter {
 public:
  explicit ProgramEmitter(ObjectBuilder& object) : object_(object) {}

  /// The program that evaluates `where` and writes a record (or updates the aggregate); at
  /// exit (`from_stash`), it first takes what the entry program saved.
  void emitMain(const ProbeUnit& p, ProgramSite site, bool from_stash = false);
  /// At function entry: saves the entry time and the arguments for the exit program.
  void emitStash(const ProbeUnit& p, ProgramSite site);
  /// With `-c`: a child of a followed process is followed too.
  void emitForkFollower();
  /// `packet graph`: at a function's return, a record for the packet its entry matched.
  void emitPacketReturn(const ProbeUnit& p, ProgramSite site);

  // Pieces shared with call_context.cpp and aggregate_emitter.cpp.
  std::unique_ptr<Program> begin(const std::string& name, const std::string& section,
                                 SourceRange at);
  /// Ends `program` (returning 0) and adds it to the object's parts.
  void finish(Program& program, const std::string& name, const ProgramSite& site);
  ExprLowering lowering(Program& program, const sema::ExprTable& exprs, const ArgAccess& args);
  llvm::Value* mapLookup(Program& program, llvm::GlobalVariable* map, llvm::Value* key);
  /// bpf_ringbuf_submit's flags for a record of `record_bytes`, as the reader's pace asks.
  llvm::Value* submitFlags(Program& program, uint32_t record_bytes);
  /// The entry of `key` in `map`; when missing, added from the value `initial` makes
  /// (update flags `flags`) and looked up again: null only if it could not be added, and
  /// then `update_error`, if given, is why (the update's negative errno; 0 when it was
  /// found or added).
  llvm::Value* lookupOrAdd(Program& program, llvm::GlobalVariable* map, llvm::Value* key,
                           const std::function<llvm::Value*()>& initial, uint64_t flags,
                           llvm::Value** update_error = nullptr);
  /// The thread id as a map key.
  llvm::Value* tidKey(Program& program);
  /// Returns early unless the event's process is the one being traced.
  void processFilter(Program& program);
  /// raw_syscalls programs: return unless the event is `site`'s system call (first: it
  /// turns away every other system call of the machine).
  void syscallFilter(Program& program, ExprLowering& lower, const ProgramSite& site);
  /// Counts an event lost for `why` and ends the program.
  void countLost(Program& program, plan::Lost why);
  /// Adds one to entry `index` (an i32) of `counters`, a per-CPU array (so a plain add), in
  /// a block named `name`; then goes to `then`, or on in a block of its own where null.
  void addOne(Program& program, llvm::GlobalVariable* counters, llvm::Value* index, const char* name,
              llvm::BasicBlock* then = nullptr);
  ObjectBuilder& object() { return object_; }
  /// Writes a field of an aggregate key at `key`, as a record field is written.
  void writeKeyField(Program& program, ExprLowering& lower, llvm::Value* key, const Field& f,
                     const std::vector<Field>& all) {
    writeField(program, lower, key, f, all);
  }

 private:
  llvm::Value* stashKey(Program& program, const ProgramSite& site);
  /// Where the program's arguments are: its context, the probe's, `func` and `probe`.
  void bindArguments(Program& program, const ProbeUnit& p, ProgramSite& site);
  /// Packet programs (packet_emitter.cpp): the attach cookie and the skb, and where the skb
  /// is freed, its journey kept and forgotten; with `track`, whether the packet has been
  /// recorded before; before the record, its journey; after it, what `graph` keeps.
  void packetSetup(Program& program, const ProbeUnit& p, ArgAccess& args, const ProgramSite& site);
  llvm::Value* packetTracked(Program& program, ExprLowering& lower, const ProbeUnit& p);
  void packetJourney(Program& program, ExprLowering& lower, const ProbeUnit& p, ArgAccess& args);
  void packetRecorded(Program& program, ExprLowering& lower, const ProbeUnit& p);
  /// The journey `map` keeps for the skb or its data head at `key` (an 8-byte key), or 0.
  llvm::Value* journeyIn(Program& program, llvm::GlobalVariable* map, llvm::Value* address);
  /// The journey of the skb: by its address, else by its data's head; 0 where none is known.
  llvm::Value* journeyKnown(Program& program, ExprLowering& lower, const ProbeUnit& p);
  /// Where the skb lets go of its data or is freed: forgets what no later event can use.
  void forgetFreed(Program& program, ExprLowering& lower, const ProbeUnit& p);
  /// nft_do_chain's return, where a rule dropped (and freed) the packet: the journey it was
  /// freed on (ProbeUnit::freed), or none followed (the program returns).
  void netfilterDropJourney(Program& program, ExprLowering& lower, const ProbeUnit& p);
  /// A copy being made (skb_copy_header): on its original's journey, if that has one.
  void inheritCopy(Program& program, ExprLowering& lower, const ProbeUnit& p);
  /// An XDP program's skb (PacketAccess::skb): the one holding the data it runs on, which
  /// a journey's head entry keeps; the program returns where there is none.
  void xdpSkb(Program& program, ExprLowering& lower, const ProbeUnit& p, ArgAccess& args);
  /// A head entry's value: the journey, and an skb holding the data (0: none).
  llvm::Value* headEntry(Program& program, llvm::Value* journey, llvm::Value* skb);
  /// The (thread, site) key of the depth map, and the (thread, site, depth) key of the graph map.
  llvm::Value* depthKey(Program& program, ExprLowering& lower);
  llvm::Value* graphKey(Program& program, ExprLowering& lower, llvm::Value* depth);
  /// At entry: one call deeper; the new depth.
  llvm::Value* graphEnter(Program& program, const ProbeUnit& p, ExprLowering& lower);
  void takeStash(Program& program, const ProbeUnit& p, const ProgramSite& site, ArgAccess& args);
  /// The test hook that makes the verifier refuse a program at `at`.
  void rejectedOnPurpose(Program& program, const ast::Expr& at);
  /// What ExprLowering could not compile, as diagnostics at the expressions.
  void reportProblems(const ExprLowering& lower);
  void writeRecord(Program& program, ExprLowering& lower, const ProbeUnit& p);
  void writeHeader(Program& program, llvm::Value* record, uint32_t probe_id);
  void writeField(Program& program, ExprLowering& lower, llvm::Value* record, const Field& f,
                  const std::vector<Field>& all);
  void writeFieldBytes(Program& program, ExprLowering& lower, llvm::Value* record, const Field& f,
                       const std::vector<Field>& all);

  ObjectBuilder& object_;
};

/// A join's map, its counters and what it keeps (join_emitter.cpp).
JoinTable makeJoinTable(ObjectBuilder& object, const sema::ResolvedJoin& join, uint32_t query,
                        const LayoutOptions& options);
/// In a program of a join's source: keeps what the query reads, under the event's key.
void emitJoinKeep(ProgramEmitter& emitter, Program& program, ExprLowering& lower,
                  const JoinTable& table);
/// A join's waiting event an event of the query found, and the key it is kept under.
/// A join's other source (`join A as q ... join B as q`): `first`'s map, counters and
/// layout, with `join`'s keys and values.
JoinTable feederTable(const JoinTable& first, const sema::ResolvedJoin& join);

struct JoinMatch {
  const JoinTable* table = nullptr;
  llvm::Value* key = nullptr;
  /// An optional join: a stack word, 1 where its event was found (0: nothing to take out).
  llvm::Value* found = nullptr;
};
/// In a program of a query with joins: finds each join's waiting event by this event's key
/// (ending the program when one is missing, or too old: then it is taken out), copies what
/// it kept and makes it readable by `lower` through `args`.
std::vector<JoinMatch> emitJoinLookups(ProgramEmitter& emitter, Program& program, ExprLowering& lower,
                                       ArgAccess& args, const ProbeUnit& p);
/// Once the query's `where` passed: takes the matched events out of their joins (each
/// makes one row).
void emitJoinConsume(ProgramEmitter& emitter, Program& program, const std::vector<JoinMatch>& matches);

/// In a program of an aggregate query: computes the key, finds or adds the map entry, and
/// updates every slot (aggregate_emitter.cpp).
void emitAggregateUpdate(ProgramEmitter& emitter, Program& program, ExprLowering& lower,
                         const Aggregation& agg);

/// The entry and exit programs that count how deep a thread is in an outer function of a
/// call context, and the filter that keeps a main program's events inside it
/// (call_context.cpp).
void emitContextPrograms(ProgramEmitter& emitter, const ProbeUnit& p, const btf::Function& fn,
                         uint32_t level);
void contextFilter(ProgramEmitter& emitter, Program& program, const ProbeUnit& p);

}  // namespace kq::lower
