// Programs, maps and event layouts: for each probe and each way to attach it, a BPF program
// that filters in the kernel and writes one record per event to the ring buffer.
// This file: the builder's entry point, the records' layouts, and which programs each probe
// gets; probe_programs.cpp has the programs of each kind of probe, program_emitter.cpp the
// code they are made of.
#include <algorithm>

#include <fmt/format.h>

#include "compiler/lower/program_builder.h"
#include "compiler/sema/builtins/builtins.h"

namespace kq::lower {
namespace {

using runtime::FieldKind;
using runtime::FieldLayout;
using sema::TypeKind;

std::string sourceText(const SourceManager& sources, const ast::Expr& e) {
  const std::string& text = sources.file(e.range.file).text();
  return text.substr(e.range.begin, e.range.end - e.range.begin);
}

bool isFmtCall(const sema::ExprTable& exprs, const ast::Expr& e) {
  return e.kind == ast::ExprKind::Call && ast::as<ast::Call>(e).callee == "fmt" &&
         exprs.at(&e).ref == sema::Ref::BuiltinFunction;
}

}  // namespace

ProgramBuilder::ProgramBuilder(const sema::CheckedProgram& checked, const btf::Btf& btf,
                               const SourceManager& sources, const LowerOptions& options,
                               Diagnostics& diags, FileId main_file)
    : checked_(checked),
      btf_(btf),
      sources_(sources),
      options_(options),
      diags_(diags),
      module_("kq", sources.file(main_file)),
      core_(module_) {}

std::optional<CompiledProgram> ProgramBuilder::build(std::string* error) {
  events_ = module_.addMap({"events", runtime_ringbuf(), options_.ringbuf_bytes});
  lost_ = module_.addMap({"lost", MapType::PercpuArray, runtime::kLostReasons, 4, 8});
  if (options_.follow_children) {
    tracked_ = module_.addMap({"tracked", MapType::Hash, 65536, 4, 1});
    plan_.tracked_map = "tracked";
  }
  uint32_t query_number = 0;
  for (const sema::ResolvedQuery& query : checked_.program.queries) {
    current_query_ = query_number;
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

void ProgramBuilder::unsupported(SourceRange at, std::string what) {
  diags_.report(DiagKind::Unsupported, at, fmt::format("kq cannot compile {} yet", what))
      .note("`kq check` accepts it; running it needs a later version of kq");
}

// ---- layouts ------------------------------------------------------------------------------

FieldLayout ProgramBuilder::layoutFor(const sema::ExprTable& exprs, const ast::Expr* e,
                                      const sema::Type* type, std::string name) {
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

ProgramBuilder::FmtUse ProgramBuilder::fmtIn(const sema::ExprTable& exprs, const ast::Expr& item) {
  if (isFmtCall(exprs, item)) return {&ast::as<ast::Call>(item), &exprs, nullptr, false};
  const sema::ExprInfo& info = exprs.at(&item);
  if (!(info.ref == sema::Ref::Fn || info.ref == sema::Ref::Property) || !info.fn || !info.body) {
    return {};
  }
  const ast::Expr& body = *info.fn->body;
  if (isFmtCall(*info.body, body)) return {&ast::as<ast::Call>(body), info.body.get(), &item, false};
  FmtUse deeper = fmtIn(*info.body, body);
  return FmtUse{nullptr, nullptr, nullptr, deeper.call != nullptr || deeper.nested};
}

ProgramBuilder::Field ProgramBuilder::formatField(const FmtUse& use, std::string name,
                                                  size_t first_index, std::vector<Field>& args) {
  const ast::Call& call = *use.call;
  Field format;
  format.layout.name = std::move(name);
  format.layout.kind = FieldKind::Format;
  format.layout.format = ast::as<ast::StringLiteral>(*call.args[0]).value;
  for (size_t i = 1; i < call.args.size(); ++i) {
    const ast::Expr& arg = *call.args[i];
    const sema::Type* arg_type = use.exprs->at(&arg).type;
    Field f{layoutFor(*use.exprs, &arg, arg_type, sourceText(sources_, arg)), &arg, 0, arg_type};
    f.layout.hidden = true;
    f.within = use.within;
    if (f.layout.kind == FieldKind::Record) f.layout.kind = FieldKind::Pointer;
    format.layout.args.push_back(static_cast<int32_t>(first_index + args.size()));
    args.push_back(std::move(f));
  }
  return format;
}

std::vector<ProgramBuilder::Field> ProgramBuilder::fieldsOf(const sema::ResolvedQuery& query,
                                                            const sema::ResolvedProbe& probe) {
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
  bool packet = std::holds_alternative<ast::PacketTarget>(target.target->kind);
  auto funcField = [&](std::string name) {
    Field f;
    f.layout.name = std::move(name);
    f.layout.kind = FieldKind::Symbol;
    f.layout.size = 8;
    f.func_ip = true;
    return f;
  };
  if (packet && all) {
    // By default a packet shows where it is (the function) and which it is (the skb).
    add(funcField("func"));
    Field skb;
    skb.layout.name = "skb";
    skb.layout.kind = FieldKind::Pointer;
    skb.layout.size = 8;
    skb.type = target.args.front().type;
    add(std::move(skb));
    all = false;
  }
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
    if (const FmtUse use = fmtIn(probe.exprs, *item.expr); use.call) {
      // Each argument is a hidden field; the format is applied when the event is printed.
      std::vector<Field> args;
      Field format = formatField(use, name, fields.size(), args);
      for (Field& f : args) fields.push_back(std::move(f));
      fields.push_back(std::move(format));
      continue;
    }
    const sema::ExprInfo& info = probe.exprs.at(item.expr.get());
    if (packet && info.ref == sema::Ref::Builtin && sema::builtinVariables()[info.index].name == "func") {
      add(funcField(name));
      continue;
    }
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

void ProgramBuilder::lowerProbe(const sema::ResolvedQuery& query, const sema::ResolvedProbe& probe,
                                uint32_t query_number) {
  const ast::Query& ast_query = *query.query;
  const Aggregation* aggregation = nullptr;
  if (query.aggregates) {
    aggregation = aggregationFor(query, probe, query_number);
    if (!aggregation) return;
  }
  for (const sema::ResolvedTarget& t : probe.chain) {
    if (probe.chain.size() > 1 && !std::holds_alternative<ast::FunctionTarget>(t.target->kind)) {
      unsupported(t.target->range, "call context (`->`) through anything but kernel functions");
      return;
    }
  }
  for (const ast::SelectItem& item : ast_query.clauses.select) {
    // fmt is formatted where it is printed: in `select`, or as the body of a `fn` used there.
    if (fmtIn(probe.exprs, *item.expr).nested) {
      unsupported(item.expr->range, "`fmt` deeper than one `fn` below `select`");
      return;
    }
  }
  const sema::ResolvedTarget& target = probe.chain.back();
  const ast::Target& ast_target = *target.target;
  bool packet = std::holds_alternative<ast::PacketTarget>(ast_target.kind);
  if (packet && std::get<ast::PacketTarget>(ast_target.kind).graph) {
    unsupported(ast_target.range, "`packet graph`");
    return;
  }
  if (packet && ast_query.clauses.where && usesFuncIn(probe, *ast_query.clauses.where)) {
    unsupported(ast_query.clauses.where->range, "`func` in the `where` of a `packet` query");
    return;
  }

  uint32_t probe_id = static_cast<uint32_t>(plan_.layout.probes.size());
  std::vector<Field> fields = fieldsOf(query, probe);
  runtime::ProbeLayout layout;
  layout.name = target.description;
  layout.query = query_number;
  layout.aggregate = aggregation != nullptr;
  for (const Field& f : fields) layout.fields.push_back(f.layout);
  layout.size = fields.empty() ? kHeaderBytes
                               : fields.back().layout.offset + (fields.back().layout.size + 7) / 8 * 8;
  plan_.layout.probes.push_back(layout);

  Probe p{query, probe, target, fields, probe_id, layout.size};
  p.aggregation = aggregation;
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
  } else if (packet) {
    lowerPacket(p);
  } else if (const auto* i = std::get_if<ast::IntervalTarget>(&ast_target.kind)) {
    lowerPerfEvent(p, i->period_ns, 0);
  } else if (const auto* pr = std::get_if<ast::ProfileTarget>(&ast_target.kind)) {
    lowerPerfEvent(p, 0, pr->frequency_hz);
  } else if (const auto* u = std::get_if<ast::UprobeTarget>(&ast_target.kind)) {
    for (const std::string& symbol : target.symbols) lowerUprobe(p, *u, symbol);
  }
}

std::optional<CompiledProgram> lowerProgram(const sema::CheckedProgram& checked,
                                            const btf::Btf& btf, const SourceManager& sources,
                                            FileId main_file, const LowerOptions& options,
                                            Diagnostics& diags, std::string* error) {
  return ProgramBuilder(checked, btf, sources, options, diags, main_file).build(error);
}

}  // namespace kq::lower

namespace kq::lower {

const ProgramBuilder::Aggregation* ProgramBuilder::aggregationFor(const sema::ResolvedQuery& query,
                                                                  const sema::ResolvedProbe& probe,
                                                                  uint32_t query_number) {
  auto& slot = aggregations_[&query];
  if (slot) return slot.get();
  auto agg = std::make_unique<Aggregation>();
  runtime::AggregateLayout& layout = agg->layout;
  layout.query = query_number;
  layout.map = fmt::format("agg_{}", query_number);
  const ast::Clauses& clauses = query.query->clauses;
  if (clauses.every) layout.every_ns = clauses.every->value;

  // The key: the `group by` expressions, laid out like record fields, but small: a struct
  // by its address, a string by its first 32 bytes.
  uint32_t offset = 0;
  auto place = [&](Field f) {
    if (f.layout.kind == FieldKind::Record) f.layout.kind = FieldKind::Pointer;
    if (f.layout.kind == FieldKind::String) f.layout.size = std::min<uint32_t>(f.layout.size, 32);
    f.layout.offset = offset;
    offset += (f.layout.size + 7) / 8 * 8;
    layout.keys.push_back(f.layout);
    agg->keys.push_back(std::move(f));
  };
  for (const ast::ExprPtr& key : clauses.group_by) {
    if (const FmtUse use = fmtIn(probe.exprs, *key); use.call || use.nested) {
      // Grouped by a `fmt`: by its arguments, formatted when the table prints.
      if (use.nested) {
        unsupported(key->range, "`fmt` deeper than one `fn` below `group by`");
        return nullptr;
      }
      std::vector<Field> args;
      Field format = formatField(use, sourceText(sources_, *key), layout.keys.size(), args);
      for (Field& f : args) place(std::move(f));
      place(std::move(format));  // no bytes of its own
      continue;
    }
    const sema::Type* type = probe.exprs.at(key.get()).type;
    place(Field{layoutFor(probe.exprs, key.get(), type, sourceText(sources_, *key)), key.get(), 0, type});
  }
  layout.key_size = std::max<uint32_t>(offset, 8);

  // The value: each aggregate's slots; columns in `select` order.
  uint32_t value = 0;
  for (const ast::SelectItem& item : clauses.select) {
    std::string name = item.alias ? *item.alias : sourceText(sources_, *item.expr);
    const sema::ExprInfo& info = probe.exprs.at(item.expr.get());
    bool aggregate = info.ref == sema::Ref::BuiltinFunction &&
                     sema::builtinFunctions()[info.index].aggregate;
    if (!aggregate) {
      // A key (query_shape checked it is one): find which.
      std::string text = sourceText(sources_, *item.expr);
      for (uint32_t k = 0; k < layout.keys.size(); ++k) {
        if (layout.keys[k].hidden) continue;
        std::string key_text = layout.keys[k].name;
        auto compact = [](std::string t) {
          t.erase(std::remove_if(t.begin(), t.end(), ::isspace), t.end());
          return t;
        };
        if (compact(key_text) == compact(text)) {
          layout.columns.emplace_back(true, k);
          if (item.alias) layout.keys[k].name = *item.alias;
          break;
        }
      }
      continue;
    }
    const auto& call = ast::as<ast::Call>(*item.expr);
    runtime::AggregateSlot s;
    s.name = name;
    s.offset = value;
    std::string_view fn = call.callee;
    if (fn == "count") s.kind = runtime::AggregateKind::Count, value += 8;
    else if (fn == "sum") s.kind = runtime::AggregateKind::Sum, value += 8;
    else if (fn == "avg") s.kind = runtime::AggregateKind::Avg, value += 16;
    else if (fn == "min") s.kind = runtime::AggregateKind::Min, value += 16;
    else if (fn == "max") s.kind = runtime::AggregateKind::Max, value += 16;
    else if (fn == "hist") s.kind = runtime::AggregateKind::Hist, s.buckets = 65, value += 8 * 65;
    else if (fn == "lhist") {
      s.kind = runtime::AggregateKind::Lhist;
      s.lo = static_cast<int64_t>(ast::as<ast::IntegerLiteral>(*call.args[1]).value);
      s.hi = static_cast<int64_t>(ast::as<ast::IntegerLiteral>(*call.args[2]).value);
      s.step = static_cast<int64_t>(ast::as<ast::IntegerLiteral>(*call.args[3]).value);
      if (s.step <= 0 || s.hi <= s.lo || (s.hi - s.lo) / s.step > 1000) {
        diags_.report(DiagKind::ValueOutOfRange, item.expr->range,
                      "`lhist` needs lo < hi and a step giving at most 1000 buckets");
        return nullptr;
      }
      s.buckets = static_cast<uint32_t>((s.hi - s.lo + s.step - 1) / s.step) + 2;
      value += 8 * s.buckets;
    } else if (fn == "top") {
      s.kind = runtime::AggregateKind::Top, value += 8;
      uint64_t n = ast::as<ast::IntegerLiteral>(*call.args[0]).value;
      bool another = std::any_of(layout.slots.begin(), layout.slots.end(), [](const auto& o) {
        return o.kind == runtime::AggregateKind::Top;
      });
      if (another) {
        diags_.report(DiagKind::Unsupported, item.expr->range,
                      "a query keeps one `top`: it decides which groups the table shows");
        return nullptr;
      }
      s.limit = static_cast<uint32_t>(n);
    } else {
      unsupported(item.expr->range, fmt::format("`{}`", fn));
      return nullptr;
    }
    layout.columns.emplace_back(false, static_cast<uint32_t>(layout.slots.size()));
    layout.slots.push_back(s);
    bool counts = s.kind == runtime::AggregateKind::Count || s.kind == runtime::AggregateKind::Top;
    agg->arguments.push_back(counts ? nullptr : call.args[0].get());
  }
  layout.value_size = std::max<uint32_t>(value, 8);
  agg->map = module_.addMap({layout.map, MapType::Hash, runtime::kAggregateGroups, layout.key_size, layout.value_size});
  zeros_size_ = std::max(zeros_size_, layout.value_size);
  plan_.layout.aggregates.push_back(layout);
  slot = std::move(agg);
  return slot.get();
}

}  // namespace kq::lower
