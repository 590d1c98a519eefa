// Joins across probes (kq-language §7) in the kernel. Each join has an LRU hash map keyed
// by its `on` values. The programs of its source keep, under the event's key, what the
// query reads through `NAME.` (laid out by record_layout's joinValue); the programs of the
// query look their own key up, copy what was kept out of the map, and go on with the values
// readable as the join's; an event that passes the query's `where` takes the entry out (a
// match makes one row; a `keep` join's entry stays). Per-CPU counters
// say how many events were kept, matched, unmatched and too old (plan::JoinCount); the
// runtime works out the evicted ones from them.
#include <fmt/format.h>

#include "compiler/ast/visitor.h"
#include "compiler/lower/program_emitter.h"

namespace kq::lower {
namespace {

/// Events of a join's source waiting for their match, at most. When the map is full the
/// least recently kept make room: counted as evicted.
constexpr uint32_t kJoinEntries = 16384;

/// BPF_ANY: add or replace; BPF_NOEXIST: add only.
constexpr uint64_t kUpdateAny = 0;
constexpr uint64_t kUpdateNew = 1;
/// Kept values this size or smaller are copied out of the map with loads and stores;
/// larger ones with one bpf_probe_read_kernel.
constexpr uint32_t kCopyInlineBytes = 128;

/// Adds one to a join counter (a per-CPU array entry, so a plain add) and goes on.
void count(ProgramEmitter& emitter, Program& program, const JoinTable& table,
           plan::JoinCount what) {
  llvm::Value* index = program.b.getInt32(table.counters + static_cast<uint32_t>(what));
  emitter.addOne(program, emitter.object().joinCounts(), index, "join_count");
}

/// Whether a `fn` body's expressions read a joined event anywhere (said for the whole body).
bool bodyReadsJoined(const sema::ExprTable& body) {
  for (const auto& [expr, info] : body) {
    if (info.ref == sema::Ref::Joined || (info.body && bodyReadsJoined(*info.body))) return true;
  }
  return false;
}

/// Whether an expression reads a joined event (`s.time`), itself or through a `fn` it uses.
/// Any node may be one: sema makes a whole expression of the joined side alone (`s.fd ==
/// 0`) a value the join keeps, and its parts are then not the query's.
class ReadsJoined : public ast::ExprVisitor<ReadsJoined> {
 public:
  explicit ReadsJoined(const sema::ExprTable& exprs) : exprs_(exprs) {}
  bool found = false;

  void visitIdentifier(const ast::Identifier& id) { check(id); }
  void visitReturnValue(const ast::ReturnValue& r) { check(r); }
  void visitMember(const ast::Member& m) {
    check(m);
    visitChildren(m);
  }
  void visitCall(const ast::Call& c) {
    check(c);
    visitChildren(c);
  }
  void visitIndex(const ast::Index& i) {
    check(i);
    visitChildren(i);
  }
  void visitUnary(const ast::Unary& u) {
    check(u);
    visitChildren(u);
  }
  void visitBinary(const ast::Binary& b) {
    check(b);
    visitChildren(b);
  }
  void visitConditional(const ast::Conditional& c) {
    check(c);
    visitChildren(c);
  }
  void visitCast(const ast::Cast& c) {
    check(c);
    visitChildren(c);
  }

 private:
  void check(const ast::Expr& e) {
    auto it = exprs_.find(&e);
    if (it == exprs_.end()) return;
    found = found || it->second.ref == sema::Ref::Joined || (it->second.body && bodyReadsJoined(*it->second.body));
  }
  const sema::ExprTable& exprs_;
};

/// The parts of `where` (split at `and`) that read no joined event: what an event must
/// pass for its missing match to be counted.
void joinFreeParts(const sema::ExprTable& exprs, const ast::Expr& where, std::vector<const ast::Expr*>& out) {
  if (where.kind == ast::ExprKind::Binary && ast::as<ast::Binary>(where).op == ast::BinaryOp::And) {
    joinFreeParts(exprs, *ast::as<ast::Binary>(where).lhs, out);
    joinFreeParts(exprs, *ast::as<ast::Binary>(where).rhs, out);
    return;
  }
  ReadsJoined reads(exprs);
  reads.visit(where);
  if (!reads.found) out.push_back(&where);
}

/// The key of this event: each `on` value of its side, 8 bytes each.
llvm::Value* joinKey(Program& program, ExprLowering& lower, const JoinTable& table, bool joined_side) {
  llvm::IRBuilder<>& b = program.b;
  llvm::Value* key = program.frame.allocate(table.key_bytes);
  for (size_t i = 0; i < table.join->keys.size(); ++i) {
    const sema::JoinKey& k = table.join->keys[i];
    Val v = lower.value(joined_side ? *k.joined : *k.main);
    b.CreateStore(v.v, b.CreateGEP(b.getInt8Ty(), key, b.getInt64(8 * i)));
  }
  return key;
}

}  // namespace

JoinTable makeJoinTable(ObjectBuilder& object, const sema::ResolvedJoin& join, uint32_t query,
                        const LayoutOptions& options) {
  plan::ProgramPlan& plan = object.plan();
  JoinTable table;
  table.join = &join;
  table.value = joinValue(join, options);
  table.key_bytes = static_cast<uint32_t>(8 * join.keys.size());
  uint32_t number = static_cast<uint32_t>(plan.joins.size());
  table.counters = number * plan::kJoinCounts;
  std::string map = fmt::format("join_{}", number);
  table.map = object.addMap({map, MapType::LruHash, kJoinEntries, table.key_bytes, table.value.bytes});
  plan.joins.push_back({join.join->name, query, map, table.counters});
  return table;
}

JoinTable feederTable(const JoinTable& first, const sema::ResolvedJoin& join) {
  JoinTable table = first;
  table.join = &join;
  table.feeder = true;
  return table;
}

void emitJoinKeep(ProgramEmitter& emitter, Program& program, ExprLowering& lower,
                  const JoinTable& table) {
  llvm::IRBuilder<>& b = program.b;
  BpfModule& module = emitter.object().module();
  llvm::Value* key = joinKey(program, lower, table, true);
  // Zeroed first: text shorter than its field leaves no stale bytes behind. Volatile
  // stores: LLVM would make a memset of them, which BPF cannot call.
  llvm::Value* value = program.frame.allocate(table.value.bytes);
  for (uint32_t i = 0; i < table.value.bytes; i += 8) {
    b.CreateStore(b.getInt64(0), b.CreateGEP(b.getInt8Ty(), value, b.getInt64(i)), /*isVolatile=*/true);
  }
  for (size_t i = 0; i < table.value.fields.size(); ++i) {
    const Field& f = table.value.fields[i];
    if (static_cast<int32_t>(i) == table.value.time_field) {
      b.CreateStore(module.callHelper(b, Helper::KtimeGetNs, b.getInt64Ty(), {}),
                    b.CreateGEP(b.getInt8Ty(), value, b.getInt64(f.layout.offset)));
      continue;
    }
    emitter.writeKeyField(program, lower, value, f, table.value.fields);
  }
  // A key already waiting is an earlier event of the same thing (a request issued again):
  // the newer one replaces it. Added only if new first, so the common case is one update.
  llvm::Value* added = module.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(),
                                         {table.map, key, value, b.getInt64(kUpdateNew)});
  auto* fresh = llvm::BasicBlock::Create(b.getContext(), "join_fresh", program.fn);
  auto* replaced = llvm::BasicBlock::Create(b.getContext(), "join_replaced", program.fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), "join_kept", program.fn);
  b.CreateCondBr(b.CreateICmpEQ(added, b.getInt64(0)), fresh, replaced);
  b.SetInsertPoint(fresh);
  count(emitter, program, table, plan::JoinCount::Kept);
  b.CreateBr(done);
  b.SetInsertPoint(replaced);
  module.callHelper(b, Helper::MapUpdateElem, b.getInt64Ty(),
                    {table.map, key, value, b.getInt64(kUpdateAny)});
  count(emitter, program, table, plan::JoinCount::Replaced);
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

std::vector<JoinMatch> emitJoinLookups(ProgramEmitter& emitter, Program& program, ExprLowering& lower,
                                       ArgAccess& args, const ProbeUnit& p) {
  llvm::IRBuilder<>& b = program.b;
  BpfModule& module = emitter.object().module();
  std::vector<JoinMatch> matches;
  args.joined.assign(p.joins.size(), {});
  // An event the query's `where` rejects whatever was joined is not one without a match.
  std::vector<const ast::Expr*> join_free;
  if (const ast::Expr* where = p.query.query->clauses.where.get(); where && !p.keeps) {
    joinFreeParts(p.probe.exprs, *where, join_free);
  }
  for (size_t j = 0; j < p.joins.size(); ++j) {
    const JoinTable& table = *p.joins[j];
    if (table.feeder) continue;  // its events are looked up as the first source's
    llvm::Value* key = joinKey(program, lower, table, false);
    bool optional = table.join->join->optional;
    // A copy: once the entry is deleted, another CPU may reuse its memory. An optional
    // join's is zeros where nothing was found, and the row goes on.
    llvm::Value* copy = program.frame.allocate(table.value.bytes);
    llvm::Value* was_found = optional ? program.frame.allocate(8) : nullptr;
    auto* joined = optional ? llvm::BasicBlock::Create(b.getContext(), "join_done", program.fn) : program.bail;
    if (optional) {
      for (uint32_t i = 0; i < table.value.bytes; i += 8) {
        b.CreateStore(b.getInt64(0), b.CreateGEP(b.getInt8Ty(), copy, b.getInt64(i)), /*isVolatile=*/true);
      }
      b.CreateStore(b.getInt64(0), was_found);
    }
    llvm::Value* entry = emitter.mapLookup(program, table.map, key);
    auto* found = llvm::BasicBlock::Create(b.getContext(), "join_found", program.fn);
    auto* missing = llvm::BasicBlock::Create(b.getContext(), "join_missing", program.fn);
    b.CreateCondBr(b.CreateIsNotNull(entry), found, missing);
    b.SetInsertPoint(missing);
    if (!join_free.empty()) {
      llvm::Value* kept = nullptr;
      for (const ast::Expr* part : join_free) {
        llvm::Value* holds = lower.condition(*part);
        kept = kept ? b.CreateAnd(kept, holds) : holds;
      }
      auto* unmatched = llvm::BasicBlock::Create(b.getContext(), "join_unmatched", program.fn);
      b.CreateCondBr(kept, unmatched, joined);
      b.SetInsertPoint(unmatched);
    }
    count(emitter, program, table, plan::JoinCount::Unmatched);
    b.CreateBr(joined);
    b.SetInsertPoint(found);
    if (table.value.bytes <= kCopyInlineBytes) {
      for (uint32_t i = 0; i < table.value.bytes; i += 8) {
        llvm::Value* word = b.CreateLoad(b.getInt64Ty(), b.CreateGEP(b.getInt8Ty(), entry, b.getInt64(i)));
        b.CreateStore(word, b.CreateGEP(b.getInt8Ty(), copy, b.getInt64(i)));
      }
    } else {
      lower.probeRead(copy, table.value.bytes, entry, false, false);
    }
    if (table.value.time_field >= 0) {
      // Too old: dropped, whatever the query's `where` would say.
      uint32_t offset = table.value.fields[table.value.time_field].layout.offset;
      llvm::Value* then = b.CreateLoad(b.getInt64Ty(), b.CreateGEP(b.getInt8Ty(), copy, b.getInt64(offset)));
      llvm::Value* now = module.callHelper(b, Helper::KtimeGetNs, b.getInt64Ty(), {});
      auto* recent = llvm::BasicBlock::Create(b.getContext(), "join_recent", program.fn);
      auto* expired = llvm::BasicBlock::Create(b.getContext(), "join_expired", program.fn);
      b.CreateCondBr(b.CreateICmpULE(b.CreateSub(now, then), b.getInt64(table.join->within_ns)),
                     recent, expired);
      b.SetInsertPoint(expired);
      module.callHelper(b, Helper::MapDeleteElem, b.getInt64Ty(), {table.map, key});
      count(emitter, program, table, plan::JoinCount::Expired);
      if (optional) {
        // What was copied is too old: zeros again, as where nothing was found.
        for (uint32_t i = 0; i < table.value.bytes; i += 8) {
          b.CreateStore(b.getInt64(0), b.CreateGEP(b.getInt8Ty(), copy, b.getInt64(i)), /*isVolatile=*/true);
        }
      }
      b.CreateBr(joined);
      b.SetInsertPoint(recent);
    }
    if (optional) {
      b.CreateStore(b.getInt64(1), was_found);
      b.CreateBr(joined);
      b.SetInsertPoint(joined);
    }
    for (const Field& f : table.value.fields) {
      args.joined[j].push_back({b.CreateGEP(b.getInt8Ty(), copy, b.getInt64(f.layout.offset)),
                                f.layout.size});
    }
    matches.push_back({&table, key, was_found});
  }
  return matches;
}

void emitJoinConsume(ProgramEmitter& emitter, Program& program, const std::vector<JoinMatch>& matches) {
  llvm::IRBuilder<>& b = program.b;
  for (const JoinMatch& m : matches) {
    llvm::BasicBlock* next = nullptr;
    if (m.found) {
      // An optional join's event, where there was one.
      auto* take = llvm::BasicBlock::Create(b.getContext(), "join_take", program.fn);
      next = llvm::BasicBlock::Create(b.getContext(), "join_taken", program.fn);
      b.CreateCondBr(b.CreateICmpNE(b.CreateLoad(b.getInt64Ty(), m.found), b.getInt64(0)), take, next);
      b.SetInsertPoint(take);
    }
    // A `keep` join's event stays for the rows after this one.
    if (!m.table->join->join->keep) {
      emitter.object().module().callHelper(b, Helper::MapDeleteElem, b.getInt64Ty(), {m.table->map, m.key});
    }
    count(emitter, program, *m.table, plan::JoinCount::Matched);
    if (next) {
      b.CreateBr(next);
      b.SetInsertPoint(next);
    }
  }
}

}  // namespace kq::lower
