// Programs, maps and event layouts: for each probe and each way to attach it, a BPF program
// that filters in the kernel and writes one record per event to the ring buffer.
#include <fmt/format.h>

#include "compiler/lower/expr_lowering.h"
#include "compiler/lower/lower.h"
#include "compiler/sema/builtins/builtins.h"

namespace kq::lower {
namespace {

using runtime::Attach;
using runtime::FieldKind;
using runtime::FieldLayout;
using sema::TypeKind;

constexpr uint32_t kHeaderBytes = sizeof(runtime::EventHeader);
constexpr uint32_t kStackBytes = 8 * 32;
constexpr uint32_t kStashArgs = 6;
constexpr uint32_t kStashBytes = 8 * (1 + kStashArgs);  // entry time, then arguments

/// One value a record carries, and the expression that computes it.
struct Field {
  FieldLayout layout;
  const ast::Expr* expr = nullptr;  // null for an argument captured by `*`
  uint32_t arg = 0;                 // the argument, for `*`
  const sema::Type* type = nullptr;
};

std::string sourceText(const SourceManager& sources, const ast::Expr& e) {
  const std::string& text = sources.file(e.range.file).text();
  return text.substr(e.range.begin, e.range.end - e.range.begin);
}

class ProgramBuilder {
 public:
  ProgramBuilder(const sema::CheckedProgram& checked, const btf::Btf& btf,
                 const SourceManager& sources, const LowerOptions& options, Diagnostics& diags,
                 FileId main_file)
      : checked_(checked),
        btf_(btf),
        sources_(sources),
        options_(options),
        diags_(diags),
        module_("kq", sources.file(main_file)),
        core_(module_) {}

  std::optional<CompiledProgram> build(std::string* error) {
    events_ = module_.addMap({"events", runtime_ringbuf(), options_.ringbuf_bytes});
    lost_ = module_.addMap({"lost", MapType::PercpuArray, 1, 4, 8});
    if (options_.follow_children) {
      tracked_ = module_.addMap({"tracked", MapType::Hash, 65536, 4, 1});
      plan_.tracked_map = "tracked";
    }
    uint32_t query_number = 0;
    for (const sema::ResolvedQuery& query : checked_.program.queries) {
      for (const sema::ResolvedProbe& probe : query.probes) lowerProbe(query, probe, query_number);
      ++query_number;
    }
    plan_.layout.queries = query_number;
    if (diags_.hasErrors()) return std::nullopt;
    if (options_.follow_children) addForkFollower();

    auto object = module_.emit(options_.want_ir, options_.want_asm);
    if (!object) {
      *error = object.error().message;
      return std::nullopt;
    }
    return CompiledProgram{object.take(), std::move(plan_)};
  }

 private:
  static MapType runtime_ringbuf() { return MapType::Ringbuf; }

  void unsupported(SourceRange at, std::string what) {
    diags_.report(DiagKind::Unsupported, at, fmt::format("kq cannot compile {} yet", what))
        .note("`kq check` accepts it; running it needs a later version of kq");
  }

  // ---- layouts ------------------------------------------------------------------------------

  /// The field a value of `type` needs, from the expression that computes it.
  FieldLayout layoutFor(const sema::ExprTable& exprs, const ast::Expr* e, const sema::Type* type,
                        std::string name) {
    FieldLayout f;
    f.name = std::move(name);
    f.size = 8;
    if (e && e->kind == ast::ExprKind::Call) {
      const sema::ExprInfo& info = exprs.at(e);
      if (info.ref == sema::Ref::BuiltinFunction) {
        std::string_view fn = sema::builtinFunctions()[info.index].name;
        if (fn == "hex" || fn == "usym") f.kind = FieldKind::Hex;
        if (fn == "errno") f.kind = FieldKind::Errno;
        if (fn == "ksym") f.kind = FieldKind::Symbol;
        if (fn == "ntop") f.kind = FieldKind::Ipv4;
        if (fn != "str" && fn != "ntohs" && fn != "htons" && fn != "ntohl" && fn != "htonl") return f;
      }
    }
    if (e && e->kind == ast::ExprKind::Identifier) {
      const sema::ExprInfo& info = exprs.at(e);
      if (info.ref == sema::Ref::Builtin) {
        std::string_view b = sema::builtinVariables()[info.index].name;
        if (b == "kstack" || b == "ustack") {
          f.kind = b == "kstack" ? FieldKind::KernelStack : FieldKind::UserStack;
          f.size = kStackBytes;
          return f;
        }
        if (b == "comm") {
          f.kind = FieldKind::String;
          f.size = 16;
          return f;
        }
      }
    }
    if (type->isStringLike()) {
      f.kind = FieldKind::String;
      f.size = options_.string_bytes;
      return f;
    }
    switch (type->kind) {
      case TypeKind::Bool: f.kind = FieldKind::Bool; break;
      case TypeKind::Enum:
        f.kind = FieldKind::Enum;
        f.btf_id = type->btf.id;
        break;
      case TypeKind::Int: f.kind = type->is_signed ? FieldKind::Signed : FieldKind::Unsigned; break;
      case TypeKind::Pointer:
        if (type->element->isRecord() && !type->element->incomplete) {
          f.kind = FieldKind::Record;
          f.btf_id = type->element->btf.id;
          f.type_name = type->element->spelling;
          f.size = std::min<uint32_t>(type->element->size, options_.dump_bytes);
        } else {
          f.kind = FieldKind::Pointer;
        }
        break;
      case TypeKind::Struct:
      case TypeKind::Union:
      case TypeKind::Array:
        f.kind = FieldKind::Record;
        f.btf_id = type->btf.id;
        f.type_name = type->spelling;
        f.size = std::min<uint32_t>(type->size, options_.dump_bytes);
        break;
      default: break;
    }
    return f;
  }

  /// The record's fields: captures (ksnoop-style), then `select` items.
  std::vector<Field> fieldsOf(const sema::ResolvedQuery& query, const sema::ResolvedProbe& probe) {
    std::vector<Field> fields;
    const ast::Clauses& clauses = query.query->clauses;
    const sema::ResolvedTarget& target = probe.chain.back();
    auto add = [&](Field f) {
      if (f.layout.kind == FieldKind::Record) {
        // A struct's dump is preceded by the address it was read from.
        Field address;
        address.layout.name = f.layout.name;
        address.layout.kind = FieldKind::Pointer;
        address.layout.size = 8;
        address.layout.hidden = true;
        address.expr = nullptr;
        address.type = nullptr;
        f.layout.address_field = static_cast<int32_t>(fields.size());
        fields.push_back(address);
      }
      fields.push_back(std::move(f));
    };
    const std::optional<ast::CaptureList>* captures = target.target->captures();
    bool has_list = captures && *captures;
    bool all = !has_list && clauses.select.empty();
    if (has_list) {
      for (const ast::Capture& c : (*captures)->items) {
        if (!c.expr) {
          all = true;
          continue;
        }
        const sema::Type* type = probe.exprs.at(c.expr.get()).type;
        Field f{layoutFor(probe.exprs, c.expr.get(), type, sourceText(sources_, *c.expr)),
                c.expr.get(), 0, type};
        f.layout.is_capture = true;
        add(std::move(f));
      }
    }
    if (all) {
      for (const sema::ProbeArg& a : target.args) {
        std::string name = a.name.empty() ? fmt::format("arg{}", a.index) : a.name;
        Field f{layoutFor(probe.exprs, nullptr, a.type, name), nullptr, a.index, a.type};
        f.layout.is_capture = true;
        add(std::move(f));
      }
    }
    for (const ast::SelectItem& item : clauses.select) {
      const sema::Type* type = probe.exprs.at(item.expr.get()).type;
      std::string name = item.alias ? *item.alias : sourceText(sources_, *item.expr);
      add(Field{layoutFor(probe.exprs, item.expr.get(), type, name), item.expr.get(), 0, type});
    }
    uint32_t offset = kHeaderBytes;
    for (Field& f : fields) {
      f.layout.offset = offset;
      offset += (f.layout.size + 7) / 8 * 8;
    }
    return fields;
  }

  // ---- probes -------------------------------------------------------------------------------

  void lowerProbe(const sema::ResolvedQuery& query, const sema::ResolvedProbe& probe,
                  uint32_t query_number) {
    const ast::Query& ast_query = *query.query;
    if (query.aggregates) {
      unsupported(*ast_query.clauses.select_range, "aggregates (`count()`, `group by`)");
      return;
    }
    for (const sema::ResolvedTarget& t : probe.chain) {
      if (probe.chain.size() > 1 && !std::holds_alternative<ast::FunctionTarget>(t.target->kind)) {
        unsupported(t.target->range, "call context (`->`) through anything but kernel functions");
        return;
      }
    }
    for (const ast::SelectItem& item : ast_query.clauses.select) {
      if (item.expr->kind == ast::ExprKind::Call &&
          ast::as<ast::Call>(*item.expr).callee == "fmt") {
        unsupported(item.expr->range, "`fmt`");
        return;
      }
    }
    const sema::ResolvedTarget& target = probe.chain.back();
    const ast::Target& ast_target = *target.target;
    if (std::holds_alternative<ast::PacketTarget>(ast_target.kind) ||
        std::holds_alternative<ast::IntervalTarget>(ast_target.kind) ||
        std::holds_alternative<ast::ProfileTarget>(ast_target.kind)) {
      unsupported(ast_target.range, "this kind of probe");
      return;
    }

    uint32_t probe_id = static_cast<uint32_t>(plan_.layout.probes.size());
    std::vector<Field> fields = fieldsOf(query, probe);
    runtime::ProbeLayout layout;
    layout.name = target.description;
    layout.query = query_number;
    for (const Field& f : fields) layout.fields.push_back(f.layout);
    layout.size = fields.empty() ? kHeaderBytes
                                 : fields.back().layout.offset + (fields.back().layout.size + 7) / 8 * 8;
    plan_.layout.probes.push_back(layout);

    Probe p{query, probe, target, fields, probe_id, layout.size};
    if (probe.chain.size() > 1) {
      // `a -> b -> c`: a per-thread count of how deep each outer function is entered;
      // the programs of the whole chain switch attach methods together.
      std::string name;
      for (const sema::ResolvedTarget& t : probe.chain) name += (name.empty() ? "" : " -> ") + t.description;
      p.group = newGroup(name);
      p.context = module_.addMap({fmt::format("context_{}", probe_id), MapType::Hash, 65536, 4,
                                  4 * kMaxContextDepth});
      p.context_levels = static_cast<uint32_t>(probe.chain.size() - 1);
      for (uint32_t level = 0; level < p.context_levels; ++level) {
        for (const btf::Function& fn : probe.chain[level].functions) lowerContext(p, fn, level);
      }
    }
    if (const auto* f = std::get_if<ast::FunctionTarget>(&ast_target.kind)) {
      (void)f;
      // A glob: fentry for each function, else one kprobe.multi program for them all,
      // else a kprobe each; one group, so they fall back together.
      bool multi = target.functions.size() > 1 && !p.group && !usesFunc(probe);
      if (multi) p.group = newGroup(target.description);
      for (const btf::Function& fn : target.functions) lowerFunction(p, fn, multi);
      if (multi) lowerKprobeMulti(p);
    } else if (const auto* t = std::get_if<ast::TracepointTarget>(&ast_target.kind)) {
      (void)t;
      lowerTracepoint(p);
    } else if (std::holds_alternative<ast::SyscallTarget>(ast_target.kind)) {
      lowerSyscall(p);
    } else if (const auto* u = std::get_if<ast::UprobeTarget>(&ast_target.kind)) {
      for (const std::string& symbol : target.symbols) lowerUprobe(p, *u, symbol);
    }
  }

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
  };

  static constexpr uint32_t kMaxContextDepth = 8;

  /// A program being generated: its function, a builder, and the block that returns 0.
  struct Emitter {
    explicit Emitter(llvm::Function* f, llvm::LLVMContext& ctx) : fn(f), b(ctx) {}
    llvm::Function* fn;
    llvm::IRBuilder<> b;
    llvm::BasicBlock* bail = nullptr;  // returns 0
  };


  /// Entry and exit programs for an outer function of a call context: entering counts one
  /// level deeper (only inside the levels before it), leaving one less.
  void lowerContext(const Probe& p, const btf::Function& fn, uint32_t level) {
    struct Method {
      const char* enter;
      const char* leave;
      Attach enter_attach;
      Attach leave_attach;
    };
    const Method methods[] = {{"fentry/", "fexit/", Attach::Fentry, Attach::Fexit},
                              {"kprobe/", "kretprobe/", Attach::Kprobe, Attach::Kretprobe}};
    for (uint32_t m = 0; m < 2; ++m) {
      for (bool entering : {true, false}) {
        std::string name = programName();
        auto e = begin(name, std::string(entering ? methods[m].enter : methods[m].leave) + fn.name,
                       *p.probe.chain[level].target);
        sema::ExprTable none;
        ArgAccess args;
        ExprLowering lower(module_, core_, *checked_.types, e->b, e->fn->getSubprogram(), none,
                           args, options_.string_bytes);
        llvm::IRBuilder<>& b = e->b;
        llvm::Value* key = tidKey(*e, lower);
        llvm::Value* depths = mapLookup(*e, p.context, key);
        if (entering && level == 0) {
          // The outermost function creates the thread's entry on first use.
          auto* create = llvm::BasicBlock::Create(module_.context(), "create", e->fn);
          auto* have = llvm::BasicBlock::Create(module_.context(), "have", e->fn);
          llvm::BasicBlock* from = b.GetInsertBlock();
          b.CreateCondBr(b.CreateIsNull(depths), create, have);
          b.SetInsertPoint(create);
          llvm::Value* zeros = lower.slot(4 * kMaxContextDepth);
          for (uint32_t i = 0; i < kMaxContextDepth; ++i) {
            b.CreateStore(b.getInt32(0), b.CreateGEP(b.getInt32Ty(), zeros, b.getInt64(i)));
          }
          module_.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(), {p.context, key, zeros, b.getInt64(0)});
          llvm::Value* created = mapLookup(*e, p.context, key);
          llvm::BasicBlock* create_end = b.GetInsertBlock();
          b.CreateBr(have);
          b.SetInsertPoint(have);
          llvm::PHINode* phi = b.CreatePHI(b.getPtrTy(), 2);
          phi->addIncoming(depths, from);
          phi->addIncoming(created, create_end);
          depths = phi;
        }
        auto* found = llvm::BasicBlock::Create(module_.context(), "found", e->fn);
        b.CreateCondBr(b.CreateIsNotNull(depths), found, e->bail);
        b.SetInsertPoint(found);
        llvm::Value* slot = b.CreateGEP(b.getInt32Ty(), depths, b.getInt64(level));
        llvm::Value* depth = b.CreateLoad(b.getInt32Ty(), slot);
        if (entering) {
          for (uint32_t outer = 0; outer < level; ++outer) {
            llvm::Value* d = b.CreateLoad(b.getInt32Ty(), b.CreateGEP(b.getInt32Ty(), depths, b.getInt64(outer)));
            auto* inside = llvm::BasicBlock::Create(module_.context(), "inside", e->fn);
            b.CreateCondBr(b.CreateICmpNE(d, b.getInt32(0)), inside, e->bail);
            b.SetInsertPoint(inside);
          }
          b.CreateStore(b.CreateAdd(depth, b.getInt32(1)), slot);
        } else {
          auto* positive = llvm::BasicBlock::Create(module_.context(), "positive", e->fn);
          b.CreateCondBr(b.CreateICmpNE(depth, b.getInt32(0)), positive, e->bail);
          b.SetInsertPoint(positive);
          b.CreateStore(b.CreateSub(depth, b.getInt32(1)), slot);
        }
        b.CreateRet(b.getInt32(0));
        plan(name, entering ? methods[m].enter_attach : methods[m].leave_attach, fn.name, *p.group, m);
      }
    }
  }

  /// Returns early unless the thread is inside every outer function of the call context.
  void contextFilter(Emitter& e, ExprLowering& lower, const Probe& p) {
    if (!p.context) return;
    llvm::IRBuilder<>& b = e.b;
    llvm::Value* depths = mapLookup(e, p.context, tidKey(e, lower));
    auto* found = llvm::BasicBlock::Create(module_.context(), "in_context", e.fn);
    b.CreateCondBr(b.CreateIsNotNull(depths), found, e.bail);
    b.SetInsertPoint(found);
    llvm::Value* innermost = b.CreateLoad(
        b.getInt32Ty(), b.CreateGEP(b.getInt32Ty(), depths, b.getInt64(p.context_levels - 1)));
    auto* inside = llvm::BasicBlock::Create(module_.context(), "inside", e.fn);
    b.CreateCondBr(b.CreateICmpNE(innermost, b.getInt32(0)), inside, e.bail);
    b.SetInsertPoint(inside);
  }

  uint32_t newGroup(const std::string& name) {
    plan_.group_names.push_back(name);
    return static_cast<uint32_t>(plan_.group_names.size() - 1);
  }

  std::string programName() { return fmt::format("kq_prog_{}", program_count_++); }

  void plan(const std::string& function, Attach attach, const std::string& target, uint32_t group,
            uint32_t method, const std::string& binary = "") {
    plan_.programs.push_back({function, attach, target, binary, {}, group, method});
  }

  llvm::GlobalVariable* stashMap() {
    std::string name = fmt::format("stash_{}", stash_count_++);
    return module_.addMap({name, MapType::Hash, 65536, 4, kStashBytes});
  }

  /// Whether a probe's expressions use `func`, whose value a kprobe.multi program would
  /// have to find at run time.
  static bool usesFunc(const sema::ResolvedProbe& probe) {
    for (const auto& [expr, info] : probe.exprs) {
      if (info.ref == sema::Ref::Builtin && sema::builtinVariables()[info.index].name == "func") {
        return true;
      }
    }
    return false;
  }

  /// One program for every function of a glob (kernels with CONFIG_FPROBE).
  void lowerKprobeMulti(const Probe& p) {
    std::vector<std::string> symbols;
    for (const btf::Function& fn : p.target.functions) symbols.push_back(fn.name);
    ArgAccess regs{ArgAccess::Kind::PtRegs};
    size_t first = plan_.programs.size();
    if (!p.probe.at_exit) {
      emitMain(p, programName(), "kprobe.multi", Attach::KprobeMulti, "", *p.group, 1, regs, "");
    } else {
      llvm::GlobalVariable* stash = stashMap();
      emitStash(p, programName(), "kprobe.multi", Attach::KprobeMulti, "", *p.group, 1, regs, stash,
                kStashArgs);
      ArgAccess exit{ArgAccess::Kind::Stash};
      exit.ret = ArgAccess::Ret::Regs;
      emitMain(p, programName(), "kretprobe.multi", Attach::KretprobeMulti, "", *p.group, 1, exit,
               "", stash);
    }
    for (size_t i = first; i < plan_.programs.size(); ++i) {
      plan_.programs[i].symbols = symbols;
      plan_.programs[i].target = p.target.description;
    }
  }

  /// `multi`: the function is one of a glob's, whose kprobe.multi program is method 1, so
  /// its own kprobes are method 2.
  void lowerFunction(const Probe& p, const btf::Function& fn, bool multi = false) {
    uint32_t group = p.group ? *p.group : newGroup(fn.name);
    uint32_t kprobe_method = multi ? 2 : 1;
    uint32_t nargs = static_cast<uint32_t>(fn.params.size());
    ArgAccess ctx_args{ArgAccess::Kind::CtxArray};
    ArgAccess regs{ArgAccess::Kind::PtRegs};
    if (!p.probe.at_exit) {
      emitMain(p, programName(), "fentry/" + fn.name, Attach::Fentry, fn.name, group, 0, ctx_args,
               fn.name);
      emitMain(p, programName(), "kprobe/" + fn.name, Attach::Kprobe, fn.name, group,
               kprobe_method, regs, fn.name);
      return;
    }
    // At exit: fexit sees arguments and return value; the entry time comes from fentry.
    llvm::GlobalVariable* fentry_stash = stashMap();
    emitStash(p, programName(), "fentry/" + fn.name, Attach::Fentry, fn.name, group, 0, ctx_args,
              fentry_stash, 0);
    ArgAccess fexit = ctx_args;
    fexit.ret = ArgAccess::Ret::CtxSlot;
    fexit.return_slot = nargs;
    emitMain(p, programName(), "fexit/" + fn.name, Attach::Fexit, fn.name, group, 0, fexit,
             fn.name, fentry_stash);
    // kretprobe sees only the return value: the arguments were saved at entry.
    llvm::GlobalVariable* kprobe_stash = stashMap();
    emitStash(p, programName(), "kprobe/" + fn.name, Attach::Kprobe, fn.name, group,
              kprobe_method, regs, kprobe_stash, nargs);
    ArgAccess kret{ArgAccess::Kind::Stash};
    kret.ret = ArgAccess::Ret::Regs;
    emitMain(p, programName(), "kretprobe/" + fn.name, Attach::Kretprobe, fn.name, group,
             kprobe_method, kret, fn.name, kprobe_stash);
  }

  void lowerTracepoint(const Probe& p) {
    const sema::ResolvedTarget& t = p.target;
    uint32_t group = newGroup(t.description);
    if (!t.functions.empty()) {
      // A BTF handler exists: tp_btf, with typed arguments.
      ArgAccess args{ArgAccess::Kind::CtxArray};
      emitMain(p, programName(), "tp_btf/" + t.event, Attach::TpBtf, t.event, group, 0, args, "");
      return;
    }
    if (!t.format) {
      unsupported(t.target->range, "a tracepoint glob");
      return;
    }
    ArgAccess args{ArgAccess::Kind::TracepointRecord};
    args.format = &*t.format;
    // Pointers in syscall records point into the calling process.
    args.user_args = t.category == "syscalls";
    args.skip_syscall_nr = t.category == "syscalls";
    emitMain(p, programName(), "tracepoint/" + t.category + "/" + t.event, Attach::Tracepoint,
             t.category + "/" + t.event, group, 0, args, "");
  }

  void lowerSyscall(const Probe& p) {
    const sema::ResolvedTarget& t = p.target;
    if (t.event.empty() || !t.format) {
      unsupported(t.target->range, "a syscall glob");
      return;
    }
    std::string name = t.event.substr(std::string("sys_enter_").size());
    uint32_t group = newGroup("syscall " + name);
    ArgAccess enter{ArgAccess::Kind::TracepointRecord};
    enter.format = &*t.format;
    enter.skip_syscall_nr = true;
    enter.user_args = true;
    std::string enter_target = "syscalls/sys_enter_" + name;
    if (!p.probe.at_exit) {
      emitMain(p, programName(), "tracepoint/" + enter_target, Attach::Tracepoint, enter_target,
               group, 0, enter, "");
      return;
    }
    llvm::GlobalVariable* stash = stashMap();
    emitStash(p, programName(), "tracepoint/" + enter_target, Attach::Tracepoint, enter_target,
              group, 0, enter, stash, static_cast<uint32_t>(t.args.size()));
    ArgAccess exit{ArgAccess::Kind::Stash};
    exit.user_args = true;
    exit.ret = ArgAccess::Ret::SyscallExit;
    std::string exit_target = "syscalls/sys_exit_" + name;
    emitMain(p, programName(), "tracepoint/" + exit_target, Attach::Tracepoint, exit_target, group,
             0, exit, "", stash);
  }

  void lowerUprobe(const Probe& p, const ast::UprobeTarget& u, const std::string& symbol) {
    uint32_t group = newGroup(u.binary + ":" + symbol);
    ArgAccess regs{ArgAccess::Kind::PtRegs};
    regs.user_args = true;
    if (!p.probe.at_exit) {
      emitMain(p, programName(), "uprobe", Attach::Uprobe, symbol, group, 0, regs, symbol, nullptr,
               u.binary);
      return;
    }
    llvm::GlobalVariable* stash = stashMap();
    emitStash(p, programName(), "uprobe", Attach::Uprobe, symbol, group, 0, regs, stash, kStashArgs,
              u.binary);
    ArgAccess exit{ArgAccess::Kind::Stash};
    exit.user_args = true;
    exit.ret = ArgAccess::Ret::Regs;
    emitMain(p, programName(), "uretprobe", Attach::Uretprobe, symbol, group, 0, exit, symbol,
             stash, u.binary);
  }

  // ---- programs -----------------------------------------------------------------------------


  std::unique_ptr<Emitter> begin(const std::string& name, const std::string& section,
                                 const ast::Target& target) {
    llvm::Function* fn = module_.addProgram(name, section,
                                            target.range.file == 0 ? target.range.begin : 0);
    auto e = std::make_unique<Emitter>(fn, module_.context());
    auto* entry = llvm::BasicBlock::Create(module_.context(), "entry", fn);
    e->bail = llvm::BasicBlock::Create(module_.context(), "bail", fn);
    e->b.SetInsertPoint(e->bail);
    e->b.SetCurrentDebugLocation(module_.location(fn->getSubprogram(), target.range.begin));
    e->b.CreateRet(e->b.getInt32(0));
    e->b.SetInsertPoint(entry);
    e->b.SetCurrentDebugLocation(module_.location(fn->getSubprogram(), target.range.begin));
    return e;
  }

  llvm::Value* mapLookup(Emitter& e, llvm::GlobalVariable* map, llvm::Value* key_slot) {
    return module_.callHelper(e.b, Helper::MapLookupElem, e.b.getPtrTy(), {map, key_slot});
  }

  /// The thread id as a map key in a stack slot.
  llvm::Value* tidKey(Emitter& e, ExprLowering& lower) {
    llvm::Value* key = lower.slot(4);
    llvm::Value* pid_tgid = module_.callHelper(e.b, Helper::GetCurrentPidTgid, e.b.getInt64Ty(), {});
    e.b.CreateStore(e.b.CreateTrunc(pid_tgid, e.b.getInt32Ty()), key);
    return key;
  }

  /// Returns early unless the event's process is the one being traced.
  void processFilter(Emitter& e, ExprLowering& lower) {
    if (!options_.pid && !tracked_) return;
    llvm::Value* pid_tgid = module_.callHelper(e.b, Helper::GetCurrentPidTgid, e.b.getInt64Ty(), {});
    llvm::Value* tgid = e.b.CreateLShr(pid_tgid, e.b.getInt64(32));
    llvm::Value* keep;
    if (tracked_) {
      llvm::Value* key = lower.slot(4);
      e.b.CreateStore(e.b.CreateTrunc(tgid, e.b.getInt32Ty()), key);
      keep = e.b.CreateIsNotNull(mapLookup(e, tracked_, key));
    } else {
      keep = e.b.CreateICmpEQ(tgid, e.b.getInt64(options_.pid));
    }
    auto* next = llvm::BasicBlock::Create(module_.context(), "traced", e.fn);
    e.b.CreateCondBr(keep, next, e.bail);
    e.b.SetInsertPoint(next);
  }

  /// At function entry: save the entry time and the arguments for the exit program.
  void emitStash(const Probe& p, const std::string& name, const std::string& section,
                 Attach attach, const std::string& target, uint32_t group, uint32_t method,
                 ArgAccess args, llvm::GlobalVariable* stash, uint32_t nargs,
                 const std::string& binary = "") {
    auto e = begin(name, section, *p.target.target);
    args.ctx = e->fn->getArg(0);
    sema::ExprTable none;
    ExprLowering lower(module_, core_, *checked_.types, e->b, e->fn->getSubprogram(), none, args,
                       options_.string_bytes);
    processFilter(*e, lower);
    contextFilter(*e, lower, p);
    llvm::Value* value = lower.slot(kStashBytes);
    llvm::Value* now = module_.callHelper(e->b, Helper::KtimeGetNs, e->b.getInt64Ty(), {});
    e->b.CreateStore(now, value);
    for (uint32_t i = 0; i < std::min(nargs, kStashArgs); ++i) {
      Val v = lower.arg(i, checked_.types->u64());
      e->b.CreateStore(v.v, e->b.CreateGEP(e->b.getInt64Ty(), value, e->b.getInt64(1 + i)));
    }
    llvm::Value* key = tidKey(*e, lower);
    module_.callHelper(e->b, Helper::MapUpdateElem, e->b.getInt64Ty(),
                       {stash, key, value, e->b.getInt64(0)});
    e->b.CreateRet(e->b.getInt32(0));
    plan(name, attach, target, group, method, binary);
  }

  /// The program that evaluates `where` and writes a record.
  void emitMain(const Probe& p, const std::string& name, const std::string& section, Attach attach,
                const std::string& target, uint32_t group, uint32_t method, ArgAccess args,
                const std::string& func, llvm::GlobalVariable* stash = nullptr,
                const std::string& binary = "") {
    auto e = begin(name, section, *p.target.target);
    args.ctx = e->fn->getArg(0);
    args.probe_args = &p.target.args;
    args.func = func;
    args.probe = p.target.description;
    ExprLowering lower(module_, core_, *checked_.types, e->b, e->fn->getSubprogram(), p.probe.exprs,
                       args, options_.string_bytes);
    processFilter(*e, lower);
    contextFilter(*e, lower, p);

    if (stash) {
      llvm::Value* key = tidKey(*e, lower);
      llvm::Value* saved = mapLookup(*e, stash, key);
      auto* found = llvm::BasicBlock::Create(module_.context(), "stashed", e->fn);
      e->b.CreateCondBr(e->b.CreateIsNotNull(saved), found, e->bail);
      e->b.SetInsertPoint(found);
      // The exit program reads what the entry program saved, then forgets it.
      args.entry_ns = e->b.CreateLoad(e->b.getInt64Ty(), saved);
      args.stashed.clear();
      for (uint32_t i = 0; i < kStashArgs; ++i) {
        args.stashed.push_back(e->b.CreateLoad(
            e->b.getInt64Ty(), e->b.CreateGEP(e->b.getInt64Ty(), saved, e->b.getInt64(1 + i))));
      }
      module_.callHelper(e->b, Helper::MapDeleteElem, e->b.getInt64Ty(), {stash, key});
    }
    ExprLowering body(module_, core_, *checked_.types, e->b, e->fn->getSubprogram(), p.probe.exprs,
                      args, options_.string_bytes);
    body.setKernelBtf(&btf_);

    const ast::Clauses& clauses = p.query.query->clauses;
    if (clauses.where) {
      llvm::Value* keep = body.condition(*clauses.where);
      auto* pass = llvm::BasicBlock::Create(module_.context(), "kept", e->fn);
      e->b.CreateCondBr(keep, pass, e->bail);
      e->b.SetInsertPoint(pass);
    }
    e->b.SetCurrentDebugLocation(module_.location(e->fn->getSubprogram(), p.target.target->range.begin));
    llvm::Value* record = module_.callHelper(e->b, Helper::RingbufReserve, e->b.getPtrTy(),
                                             {events_, e->b.getInt64(p.record_bytes), e->b.getInt64(0)});
    auto* reserved = llvm::BasicBlock::Create(module_.context(), "reserved", e->fn);
    auto* full = llvm::BasicBlock::Create(module_.context(), "full", e->fn);
    e->b.CreateCondBr(e->b.CreateIsNotNull(record), reserved, full);

    // The ring buffer is full: count the lost event.
    e->b.SetInsertPoint(full);
    llvm::Value* zero = body.slot(4);
    e->b.CreateStore(e->b.getInt32(0), zero);
    llvm::Value* counter = mapLookup(*e, lost_, zero);
    auto* count = llvm::BasicBlock::Create(module_.context(), "count", e->fn);
    e->b.CreateCondBr(e->b.CreateIsNotNull(counter), count, e->bail);
    e->b.SetInsertPoint(count);
    e->b.CreateStore(e->b.CreateAdd(e->b.CreateLoad(e->b.getInt64Ty(), counter), e->b.getInt64(1)),
                     counter);
    e->b.CreateBr(e->bail);

    e->b.SetInsertPoint(reserved);
    writeHeader(*e, record, p.id);
    for (const Field& f : p.fields) writeField(*e, body, record, f, p.fields);
    module_.callHelper(e->b, Helper::RingbufSubmit, e->b.getVoidTy(), {record, e->b.getInt64(0)});
    e->b.CreateRet(e->b.getInt32(0));
    plan(name, attach, target, group, method, binary);
  }

  void writeHeader(Emitter& e, llvm::Value* record, uint32_t probe_id) {
    llvm::IRBuilder<>& b = e.b;
    auto at = [&](uint32_t offset) { return b.CreateGEP(b.getInt8Ty(), record, b.getInt64(offset)); };
    b.CreateStore(module_.callHelper(b, Helper::KtimeGetNs, b.getInt64Ty(), {}), at(0));
    b.CreateStore(b.getInt32(probe_id), at(8));
    b.CreateStore(b.CreateTrunc(module_.callHelper(b, Helper::GetSmpProcessorId, b.getInt64Ty(), {}),
                                b.getInt32Ty()),
                  at(12));
    llvm::Value* pid_tgid = module_.callHelper(b, Helper::GetCurrentPidTgid, b.getInt64Ty(), {});
    b.CreateStore(b.CreateTrunc(b.CreateLShr(pid_tgid, b.getInt64(32)), b.getInt32Ty()), at(16));
    b.CreateStore(b.CreateTrunc(pid_tgid, b.getInt32Ty()), at(20));
    module_.callHelper(b, Helper::GetCurrentComm, b.getInt64Ty(), {at(24), b.getInt64(16)});
  }

  void writeField(Emitter& e, ExprLowering& lower, llvm::Value* record, const Field& f,
                  const std::vector<Field>& all) {
    llvm::IRBuilder<>& b = e.b;
    llvm::Value* dst = b.CreateGEP(b.getInt8Ty(), record, b.getInt64(f.layout.offset));
    if (f.layout.hidden) return;  // written by the field it belongs to
    switch (f.layout.kind) {
      case FieldKind::String:
        if (f.expr) {
          lower.storeString(*f.expr, dst, f.layout.size);
        } else {
          lower.storeArgString(f.arg, f.type, dst, f.layout.size);
        }
        return;
      case FieldKind::KernelStack:
      case FieldKind::UserStack:
        module_.callHelper(b, Helper::GetStack, b.getInt64Ty(),
                           {e.fn->getArg(0), dst, b.getInt64(f.layout.size),
                            b.getInt64(f.layout.kind == FieldKind::UserStack ? 256 : 0)});
        return;
      case FieldKind::Record: {
        llvm::Value* address;
        if (f.expr) {
          address = lower.storeRecord(*f.expr, dst, f.layout.size);
        } else {
          Val v = lower.arg(f.arg, f.type);
          lower.probeRead(dst, f.layout.size, v.v, v.user, false);
          address = v.v;
        }
        const FieldLayout& addr = all[f.layout.address_field].layout;
        b.CreateStore(address, b.CreateGEP(b.getInt8Ty(), record, b.getInt64(addr.offset)));
        return;
      }
      default: {
        Val v = f.expr ? lower.value(*f.expr) : lower.arg(f.arg, f.type);
        b.CreateStore(v.v, dst);
        return;
      }
    }
  }

  /// With `-c`: a child of a followed process is followed too.
  void addForkFollower() {
    auto task = btf_.findStruct("task_struct");
    if (!task) return;
    const sema::Type* task_type = checked_.types->fromBtf(*task);
    auto tgid = checked_.types->findMember(task_type, "tgid");
    if (!tgid || tgid->steps.size() != 1) return;
    uint32_t group = newGroup("following forks");
    std::string name = programName();
    llvm::Function* fn = module_.addProgram(name, "tp_btf/sched_process_fork");
    llvm::IRBuilder<> b(module_.context());
    auto* entry = llvm::BasicBlock::Create(module_.context(), "entry", fn);
    auto* follow = llvm::BasicBlock::Create(module_.context(), "follow", fn);
    auto* done = llvm::BasicBlock::Create(module_.context(), "done", fn);
    b.SetInsertPoint(entry);
    b.SetCurrentDebugLocation(module_.location(fn->getSubprogram(), 0));
    const CoreTypes::Record& rec = core_.record(tgid->steps[0].first);
    auto [ir_index, di_index] = rec.index[tgid->steps[0].second];
    auto tgidOf = [&](uint32_t arg) {
      llvm::Value* slot = b.CreateGEP(b.getInt64Ty(), fn->getArg(0), b.getInt64(arg));
      llvm::Value* task_ptr = b.CreateIntToPtr(b.CreateLoad(b.getInt64Ty(), slot), b.getPtrTy());
      llvm::Value* field = b.CreatePreserveStructAccessIndex(rec.ir, task_ptr, ir_index, di_index, rec.di);
      return b.CreateLoad(b.getInt32Ty(), field);
    };
    auto keySlot = [&](llvm::Value* v) {
      llvm::IRBuilder<> top(&fn->getEntryBlock(), fn->getEntryBlock().begin());
      llvm::Value* slot = top.CreateAlloca(b.getInt32Ty());
      b.CreateStore(v, slot);
      return slot;
    };
    llvm::Value* parent = keySlot(tgidOf(0));
    llvm::Value* found = module_.callHelper(b, Helper::MapLookupElem, b.getPtrTy(), {tracked_, parent});
    b.CreateCondBr(b.CreateIsNotNull(found), follow, done);
    b.SetInsertPoint(follow);
    llvm::Value* child = keySlot(tgidOf(1));
    llvm::IRBuilder<> top(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    llvm::Value* one = top.CreateAlloca(b.getInt8Ty());
    b.CreateStore(b.getInt8(1), one);
    module_.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(), {tracked_, child, one, b.getInt64(0)});
    b.CreateBr(done);
    b.SetInsertPoint(done);
    b.CreateRet(b.getInt32(0));
    plan(name, Attach::TpBtf, "sched_process_fork", group, 0);
  }

  const sema::CheckedProgram& checked_;
  const btf::Btf& btf_;
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
};

}  // namespace

std::optional<CompiledProgram> lowerProgram(const sema::CheckedProgram& checked,
                                            const btf::Btf& btf, const SourceManager& sources,
                                            FileId main_file, const LowerOptions& options,
                                            Diagnostics& diags, std::string* error) {
  return ProgramBuilder(checked, btf, sources, options, diags, main_file).build(error);
}

}  // namespace kq::lower
