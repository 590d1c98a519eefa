// Internal to compiler/lower, not a public interface: the builder behind lowerProgram (lower.h).
// Its members are defined in lower_program.cpp (entry point, record layouts, probes),
// probe_programs.cpp (the programs of each kind of probe) and program_emitter.cpp (the code
// every program is made of).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lower/expr_lowering.h"
#include "compiler/lower/lower.h"

namespace kq::lower {

class ProgramBuilder {
 public:
  ProgramBuilder(const sema::CheckedProgram& checked, const btf::Btf& btf,
                 const SourceManager& sources, const LowerOptions& options, Diagnostics& diags,
                 FileId main_file);

  std::optional<CompiledProgram> build(std::string* error);

 private:
  static constexpr uint32_t kHeaderBytes = sizeof(runtime::EventHeader);
  static constexpr uint32_t kStackBytes = 8 * 32;
  static constexpr uint32_t kStashArgs = 6;
  static constexpr uint32_t kStashBytes = 8 * (1 + kStashArgs);  // entry time, then arguments
  static constexpr uint32_t kMaxContextDepth = 8;

  /// One value a record carries, and the expression that computes it.
  struct Field {
    runtime::FieldLayout layout;
    const ast::Expr* expr = nullptr;  // null for an argument captured by `*`
    uint32_t arg = 0;                 // the argument, for `*`
    const sema::Type* type = nullptr;
    bool func_ip = false;  // the traced function's address (packet mode's `func`)
    /// A `fmt` argument inside a `fn`: the `fn` use whose body `expr` belongs to.
    const ast::Expr* within = nullptr;
  };

  struct Aggregation;

  struct Probe {
    const sema::ResolvedQuery& query;
    const sema::ResolvedProbe& probe;
    const sema::ResolvedTarget& target;
    const std::vector<Field>& fields;
    uint32_t id;
    uint32_t record_bytes;
    /// Call context (`a -> b -> c`): the chain's group, its per-thread depths, and how many
    /// outer functions there are.
    std::optional<uint32_t> group;
    llvm::GlobalVariable* context = nullptr;
    uint32_t context_levels = 0;
    /// A query with aggregates: its map and what goes where; null for event queries.
    const Aggregation* aggregation = nullptr;
  };

  /// How a probe of an aggregate query updates its query's map.
  struct Aggregation {
    runtime::AggregateLayout layout;
    std::vector<Field> keys;                     // computed into the key, like record fields
    std::vector<const ast::Expr*> arguments;     // each slot's argument (null for count())
    llvm::GlobalVariable* map = nullptr;
  };

  /// A program being generated: its function, a builder, and the block that returns 0.
  struct Emitter {
    explicit Emitter(llvm::Function* f, llvm::LLVMContext& ctx) : fn(f), b(ctx) {}
    llvm::Function* fn;
    llvm::IRBuilder<> b;
    llvm::BasicBlock* bail = nullptr;  // returns 0
  };

  static MapType runtime_ringbuf() { return MapType::Ringbuf; }

  void unsupported(SourceRange at, std::string what);

  // ---- layouts (lower_program.cpp) ----------------------------------------------------------

  /// The field a value of `type` needs, from the expression that computes it.
  runtime::FieldLayout layoutFor(const sema::ExprTable& exprs, const ast::Expr* e,
                                 const sema::Type* type, std::string name);

  /// A `select` item or `group by` key that prints through `fmt`: `fmt(...)` itself, or a
  /// `fn` (or property) whose body is one, like the stdlib's `tuple(skb)`.
  struct FmtUse {
    const ast::Call* call = nullptr;
    const sema::ExprTable* exprs = nullptr;  // where `call`'s arguments are typed
    const ast::Expr* within = nullptr;       // the `fn` use, when `call` is its body
    bool nested = false;                     // a `fmt` more than one `fn` down: not compiled
  };
  static FmtUse fmtIn(const sema::ExprTable& exprs, const ast::Expr& e);
  /// The Format field of `use`, printed as `name`; its arguments become hidden fields
  /// appended to `args`, which it names by index from `first_index`.
  Field formatField(const FmtUse& use, std::string name, size_t first_index,
                    std::vector<Field>& args);

  /// The record's fields: captures (ksnoop-style), then `select` items.
  std::vector<Field> fieldsOf(const sema::ResolvedQuery& query, const sema::ResolvedProbe& probe);

  // ---- probes (lower_program.cpp, probe_programs.cpp) ---------------------------------------

  void lowerProbe(const sema::ResolvedQuery& query, const sema::ResolvedProbe& probe,
                  uint32_t query_number);

  /// Entry and exit programs for an outer function of a call context: entering counts one
  /// level deeper (only inside the levels before it), leaving one less.
  void lowerContext(const Probe& p, const btf::Function& fn, uint32_t level);

  /// Returns early unless the thread is inside every outer function of the call context.
  void contextFilter(Emitter& e, ExprLowering& lower, const Probe& p);

  uint32_t newGroup(const std::string& name);

  std::string programName();

  void plan(const std::string& function, runtime::Attach attach, const std::string& target,
            uint32_t group, uint32_t method, const std::string& binary = "");

  llvm::GlobalVariable* stashMap();

  /// Whether a probe's expressions use `func`, whose value a kprobe.multi program would
  /// have to find at run time.
  static bool usesFunc(const sema::ResolvedProbe& probe);

  /// One program for every function of a glob (kernels with CONFIG_FPROBE).
  void lowerKprobeMulti(const Probe& p);

  /// `multi`: the function is one of a glob's, whose kprobe.multi program is method 1, so
  /// its own kprobes are method 2.
  void lowerFunction(const Probe& p, const btf::Function& fn, bool multi = false);

  void lowerTracepoint(const Probe& p);

  void lowerSyscall(const Probe& p);

  /// `packet`: every traceable function taking a `struct sk_buff *`, one kprobe.multi
  /// program per position of that argument, else one kprobe program attached to each.
  void lowerPacket(const Probe& p);
  /// A glob over tracepoints or syscalls: a classic tracepoint program for each match.
  void lowerEventGlob(const Probe& p);
  /// The aggregation of a query (built by its first probe).
  const Aggregation* aggregationFor(const sema::ResolvedQuery& query, const sema::ResolvedProbe& probe,
                                    uint32_t query_number);
  /// In a program of an aggregate query: compute the key, find or add the map entry, update
  /// every slot.
  void emitAggregate(Emitter& e, ExprLowering& lower, const Probe& p);
  /// `interval` (a period on CPU 0) and `profile` (a frequency on every CPU).
  void lowerPerfEvent(const Probe& p, uint64_t period_ns, uint64_t frequency_hz);
  /// Whether `func` appears inside `root`.
  static bool usesFuncIn(const sema::ResolvedProbe& probe, const ast::Expr& root);
  void lowerUprobe(const Probe& p, const ast::UprobeTarget& u, const std::string& symbol);

  // ---- programs (program_emitter.cpp) -------------------------------------------------------

  std::unique_ptr<Emitter> begin(const std::string& name, const std::string& section,
                                 const ast::Target& target);

  llvm::Value* mapLookup(Emitter& e, llvm::GlobalVariable* map, llvm::Value* key_slot);

  /// The thread id as a map key in a stack slot.
  llvm::Value* tidKey(Emitter& e, ExprLowering& lower);

  /// Returns early unless the event's process is the one being traced.
  void processFilter(Emitter& e, ExprLowering& lower);

  /// At function entry: save the entry time and the arguments for the exit program.
  void emitStash(const Probe& p, const std::string& name, const std::string& section,
                 runtime::Attach attach, const std::string& target, uint32_t group,
                 uint32_t method, ArgAccess args, llvm::GlobalVariable* stash, uint32_t nargs,
                 const std::string& binary = "");

  /// The program that evaluates `where` and writes a record.
  void emitMain(const Probe& p, const std::string& name, const std::string& section,
                runtime::Attach attach, const std::string& target, uint32_t group,
                uint32_t method, ArgAccess args, const std::string& func,
                llvm::GlobalVariable* stash = nullptr, const std::string& binary = "");

  void writeHeader(Emitter& e, llvm::Value* record, uint32_t probe_id);

  void writeField(Emitter& e, ExprLowering& lower, llvm::Value* record, const Field& f,
                  const std::vector<Field>& all);
  /// Counts an event lost for `why` and ends the program.
  void countLost(Emitter& e, ExprLowering& lower, runtime::Lost why);
  void writeFieldBytes(Emitter& e, ExprLowering& lower, llvm::Value* record, const Field& f,
                       const std::vector<Field>& all);

  /// With `-c`: a child of a followed process is followed too.
  void addForkFollower();

  const sema::CheckedProgram& checked_;
  const btf::Btf& btf_;
  std::map<const sema::ResolvedQuery*, std::unique_ptr<Aggregation>> aggregations_;
  llvm::GlobalVariable* zeros_ = nullptr;  // an all-zero value for new aggregate entries
  uint32_t zeros_size_ = 0;
  const SourceManager& sources_;
  const LowerOptions& options_;
  Diagnostics& diags_;
  BpfModule module_;
  CoreTypes core_;
  runtime::ProgramPlan plan_;
  llvm::GlobalVariable* events_ = nullptr;
  llvm::GlobalVariable* lost_ = nullptr;
  llvm::GlobalVariable* tracked_ = nullptr;
  uint32_t program_count_ = 0;
  uint32_t stash_count_ = 0;
  uint32_t current_query_ = 0;
};

}  // namespace kq::lower
