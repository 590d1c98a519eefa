#include "compiler/sema/durations.h"
#include "host/btf_file.h"
#include "compiler/lower/record_layout.h"

#include <algorithm>

#include <bpf/btf.h>
#include <fmt/format.h>

#include "compiler/sema/builtins/builtins.h"
#include "host/netfilter.h"

namespace kq::lower {
namespace {

using plan::AggregateKind;
using plan::FieldKind;
using plan::FieldLayout;
using sema::TypeKind;

constexpr uint32_t kHeaderBytes = sizeof(plan::EventHeader);

uint32_t round8(uint32_t n) { return (n + 7) / 8 * 8; }

/// A field for a value of a C header's type (`use "myapp.h"`), whose BTF the runtime
/// does not have: an enum prints through the names of its enumerators; records and arrays
/// (whose bytes would need that BTF to print) as their address.
FieldLayout userSpaceField(const sema::Type* type, FieldLayout f) {
  if (type->kind == TypeKind::Enum) {
    f.kind = FieldKind::Table;
    const ::btf_type* raw = type->btf.get();
    bool is64 = btf_is_enum64(raw);
    for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
      uint32_t name_off = is64 ? btf_enum64(raw)[i].name_off : btf_enum(raw)[i].name_off;
      int64_t value = is64 ? static_cast<int64_t>(btf_enum64_value(btf_enum64(raw) + i))
                           : btf_enum(raw)[i].val;
      f.names.emplace(value, type->btf.file->btf->name(name_off));
    }
    return f;
  }
  f.kind = FieldKind::Pointer;
  return f;
}

/// A field for a value of `type`, as the type alone says.
FieldLayout byType(const sema::Type* type, const LayoutOptions& options) {
  FieldLayout f;
  f.size = 8;
  if (type->isStringLike()) {
    f.kind = FieldKind::String;
    f.size = options.string_bytes;
    return f;
  }
  auto record = [&](const sema::Type* t) {
    f.kind = FieldKind::Record;
    f.btf_id = t->btf.id;
    f.type_name = t->spelling;
    f.size = std::min<uint32_t>(t->size, options.dump_bytes);
  };
  if (const btf::BtfFile* file = type->btf.file; file && file->user_space) {
    return userSpaceField(type, f);
  }
  if (type->isPointer() && type->element->btf.file && type->element->btf.file->user_space) {
    f.kind = FieldKind::Pointer;  // into a program's memory: the address
    return f;
  }
  switch (type->kind) {
    case TypeKind::Bool: f.kind = FieldKind::Bool; break;
    case TypeKind::Enum:
      f.kind = FieldKind::Enum;
      f.btf_id = type->btf.id;
      f.type_name = type->spelling;
      break;
    case TypeKind::Int:
      f.kind = type->is_signed ? FieldKind::Signed : FieldKind::Unsigned;
      if (type->size >= 1 && type->size <= 8) f.int_bytes = static_cast<uint8_t>(type->size);
      break;
    case TypeKind::Pointer:
      if (type->element->isRecord() && !type->element->incomplete) {
        record(type->element);
      } else {
        f.kind = FieldKind::Pointer;
      }
      break;
    case TypeKind::Struct:
    case TypeKind::Union:
    case TypeKind::Array: record(type); break;
    default: break;
  }
  return f;
}

/// The literal text a builtin's field prints with: `cat`'s path, `join`'s separator,
/// `strftime`'s format.
void addLiterals(FieldLayout& f, const ast::Call& call) {
  auto literal = [&](size_t i) -> std::string {
    if (i >= call.args.size() || call.args[i]->kind != ast::ExprKind::String) return "";
    return ast::as<ast::StringLiteral>(*call.args[i]).value;
  };
  switch (f.kind) {
    case FieldKind::File:
      f.path = literal(0);
      f.size = 0;  // read when printed: no bytes in the record
      break;
    case FieldKind::StringList: f.separator = call.args.size() > 1 ? literal(1) : " "; break;
    case FieldKind::WallTime: f.format = literal(0); break;
    default: break;
  }
}

/// The field holding `e`'s value: as its builtin's descriptor says, else as its type says;
/// a value a join keeps, as the join keeps it.
FieldLayout fieldFor(const sema::ExprTable& exprs, const ast::Expr* e, const sema::Type* type,
                     std::string name, const LayoutOptions& options) {
  FieldLayout f = byType(type, options);
  auto it = e ? exprs.find(e) : exprs.end();
  if (it != exprs.end() && it->second.ref == sema::Ref::Joined && options.joins &&
      it->second.index < options.joins->size()) {
    JoinValue kept = joinValue((*options.joins)[it->second.index], options);
    f = kept.fields.at(it->second.slot).layout;
    f.offset = 0;
    f.hidden = false;
    f.name = std::move(name);
    return f;
  }
  if (it != exprs.end() && it->second.table && it->second.type->kind == TypeKind::String) {
    // A lookup (`caps[cap]`): the record keeps the key; its name is found when printing.
    f = FieldLayout{};
    f.kind = FieldKind::Table;
    f.size = 8;
    f.names = it->second.table->names;
  } else if (it != exprs.end()) {
    const sema::ExprInfo& info = it->second;
    std::optional<sema::FieldShape> shape;
    if (info.function && info.function->field) {
      std::vector<const sema::Type*> args;
      for (const ast::ExprPtr& a : ast::as<ast::Call>(*e).args) {
        auto arg = exprs.find(a.get());
        args.push_back(arg == exprs.end() ? type : arg->second.type);
      }
      shape = info.function->field(args, info.operands);
    } else if (info.variable && info.variable->field) {
      shape = *info.variable->field;
    }
    if (shape) {
      f.kind = shape->kind;
      f.size = shape->bytes ? shape->bytes : f.size;
      if (f.kind == FieldKind::String && !shape->bytes) f.size = options.string_bytes;
      f.btf_id = 0;
      f.type_name.clear();
      if (info.function) addLiterals(f, ast::as<ast::Call>(*e));
    }
  }
  f.name = std::move(name);
  return f;
}

Field funcAddressField(std::string name) {
  Field f;
  f.layout.name = std::move(name);
  f.layout.kind = FieldKind::Symbol;
  f.layout.size = 8;
  f.func_ip = true;
  return f;
}

/// `func` where one program serves many functions: a `packet` probe's site number, printed
/// as the site's name; elsewhere the function's address, printed as its symbol.
Field funcField(std::string name, const LayoutOptions& options) {
  if (!options.packet_sites) return funcAddressField(std::move(name));
  Field f;
  f.layout.name = std::move(name);
  f.layout.kind = FieldKind::Table;
  f.layout.size = 8;
  for (size_t i = 0; i < options.packet_sites->size(); ++i) {
    f.layout.names.emplace(static_cast<int64_t>(i), (*options.packet_sites)[i].name);
  }
  f.packet = Field::Packet::Site;
  return f;
}

void addField(std::vector<Field>& fields, Field f);

Field packetField(Field::Packet role, FieldKind kind) {
  Field f;
  f.layout.name = role == Field::Packet::Skb       ? "skb"
                  : role == Field::Packet::Return  ? "is_return"
                  : role == Field::Packet::Journey ? "journey"
                  : role == Field::Packet::Verdict ? "verdict"
                                                   : "reason";
  f.layout.kind = kind;
  f.layout.size = 8;
  f.layout.hidden = true;
  f.packet = role;
  return f;
}

/// What the per-packet view and ipftrace2's JSON need of each event, hidden: the skb,
/// where it was seen, whether a function returned (graph), a drop's reason, the journey.
void addPacketFields(std::vector<Field>& fields, const sema::ResolvedTarget& target,
                     const LayoutOptions& options) {
  addField(fields, packetField(Field::Packet::Skb, FieldKind::Pointer));
  fields.back().type = target.args.front().type;
  Field site = funcField("function", options);
  site.layout.hidden = true;
  addField(fields, std::move(site));
  addField(fields, packetField(Field::Packet::Return, FieldKind::Bool));
  addField(fields, packetField(Field::Packet::Reason, FieldKind::Enum));
  addField(fields, packetField(Field::Packet::Journey, FieldKind::Unsigned));
  // XDP's and TC's verdicts, named by the program type and the value, and netfilter's (by
  // its hook too, host::netfilterVerdictWord): 0 is no verdict.
  Field verdict = packetField(Field::Packet::Verdict, FieldKind::Table);
  for (const sema::PacketSite& site : target.packet_sites) {
    if (site.netfilter) {
      for (auto& [word, name] : host::netfilterVerdictNames()) verdict.layout.names.emplace(static_cast<int64_t>(word), name);
    }
    const host::Verdicts* verdicts = site.program ? host::verdictsOf(site.program->type) : nullptr;
    if (!verdicts) continue;
    for (const auto& [value, name] : verdicts->names) {
      int64_t key = static_cast<int64_t>(uint64_t{site.program->type} << 32 | static_cast<uint32_t>(value));
      verdict.layout.names.emplace(key, std::string(name));
    }
  }
  if (!verdict.layout.names.empty()) addField(fields, std::move(verdict));
}

/// Whether `target` is a system call's exit (`syscall:NAME`, `tracepoint:syscalls:sys_exit_*`).
bool isSyscallExit(const sema::ResolvedTarget& target) {
  if (std::holds_alternative<ast::SyscallTarget>(target.target->kind)) return true;
  if (!std::holds_alternative<ast::TracepointTarget>(target.target->kind)) return false;
  auto exit = [](const std::string& event) { return event.rfind("sys_exit_", 0) == 0; };
  if (target.events.empty()) return target.category == "syscalls" && exit(target.event);
  return std::all_of(target.events.begin(), target.events.end(), [&](const std::string& e) {
    return e.rfind("syscalls:", 0) == 0 && exit(e.substr(9));
  });
}

/// A column or key of a system call's return value (`return`; `ret` of a sys_exit
/// tracepoint) says its errno: `-2 ENOENT`. `e` is the expression, or null for argument
/// `arg` shown as a capture.
void markSyscallReturn(FieldLayout& f, const sema::ResolvedProbe& probe, const ast::Expr* e,
                       const sema::ProbeArg* arg) {
  if (f.kind != FieldKind::Signed || probe.chain.empty() || !isSyscallExit(probe.chain.back())) return;
  const sema::ResolvedTarget& target = probe.chain.back();
  bool tracepoint = std::holds_alternative<ast::TracepointTarget>(target.target->kind);
  bool is_return = false;
  if (arg) {
    is_return = tracepoint && arg->name == "ret";
  } else if (auto it = probe.exprs.find(e); it != probe.exprs.end()) {
    const sema::ExprInfo& info = it->second;
    is_return = info.ref == sema::Ref::Return;
    if (info.ref == sema::Ref::Arg && tracepoint) {
      is_return = std::any_of(target.args.begin(), target.args.end(), [&](const sema::ProbeArg& a) {
        return a.index == info.index && a.name == "ret";
      });
    }
  }
  if (is_return) f.kind = FieldKind::SyscallReturn;
}

bool isFunc(const sema::ExprTable& exprs, const ast::Expr& e) {
  auto it = exprs.find(&e);
  return it != exprs.end() && it->second.ref != sema::Ref::Joined && it->second.variable &&
         it->second.variable->id == sema::BuiltinVar::Func;
}

/// The Format field of `use`, printed as `name`; its arguments become hidden fields
/// appended to `args`, named by index from `first_index`.
Field formatField(const sema::FormatUse& use, std::string name, size_t first_index,
                  std::vector<Field>& args, const LayoutOptions& options) {
  const ast::Call& call = *use.call;
  Field format;
  format.layout.name = std::move(name);
  format.layout.kind = FieldKind::Format;
  format.layout.format = ast::as<ast::StringLiteral>(*call.args[0]).value;
  for (size_t i = 1; i < call.args.size(); ++i) {
    const ast::Expr& arg = *call.args[i];
    const sema::Type* arg_type = use.exprs->at(&arg).type;
    std::string arg_name = i - 1 < use.arg_names.size() ? use.arg_names[i - 1] : std::to_string(i);
    Field f{fieldFor(*use.exprs, &arg, arg_type, arg_name, options), &arg, 0, arg_type};
    f.layout.hidden = true;
    f.within = use.within;
    if (f.layout.kind == FieldKind::Record) f.layout.kind = FieldKind::Pointer, f.layout.size = 8;
    format.layout.args.push_back(static_cast<int32_t>(first_index + args.size()));
    args.push_back(std::move(f));
  }
  return format;
}

/// Adds `f` to `fields`; a struct's dump is preceded by the address it was read from.
void addField(std::vector<Field>& fields, Field f) {
  if (f.layout.kind == FieldKind::Record) {
    Field address;
    address.layout.name = f.layout.name;
    address.layout.kind = FieldKind::Pointer;
    address.layout.size = 8;
    address.layout.hidden = true;
    f.layout.address_field = static_cast<int32_t>(fields.size());
    fields.push_back(address);
  }
  fields.push_back(std::move(f));
}

void addCaptures(std::vector<Field>& fields, const sema::ResolvedProbe& probe, bool& all,
                 const LayoutOptions& options) {
  const sema::ResolvedTarget& target = probe.chain.back();
  const std::optional<ast::CaptureList>* captures = target.target->captures();
  if (captures && *captures) {
    for (const ast::Capture& c : (*captures)->items) {
      if (!c.expr) {
        all = true;
        continue;
      }
      const sema::Type* type = probe.exprs.at(c.expr.get()).type;
      Field f{fieldFor(probe.exprs, c.expr.get(), type, "", options), c.expr.get(), 0, type};
      markSyscallReturn(f.layout, probe, c.expr.get(), nullptr);
      auto name = probe.capture_names.find(c.expr.get());
      if (name != probe.capture_names.end()) f.layout.name = name->second;
      f.layout.is_capture = true;
      addField(fields, std::move(f));
    }
  }
  if (!all) return;
  for (const sema::ProbeArg& a : target.args) {
    std::string name = a.name.empty() ? fmt::format("arg{}", a.index) : a.name;
    Field f{fieldFor(probe.exprs, nullptr, a.type, name, options), nullptr, a.index, a.type};
    markSyscallReturn(f.layout, probe, nullptr, &a);
    f.layout.is_capture = true;
    addField(fields, std::move(f));
  }
}

}  // namespace

std::vector<Field> recordFields(const sema::ResolvedQuery& query, const sema::ResolvedProbe& probe,
                                const LayoutOptions& options) {
  std::vector<Field> fields;
  const sema::ResolvedTarget& target = probe.chain.back();
  const std::optional<ast::CaptureList>* captures = target.target->captures();
  bool has_list = captures && *captures;
  // Hidden columns (`--packet-bytes`) change nothing of what is shown.
  bool shows_columns = std::any_of(query.shape.columns.begin(), query.shape.columns.end(),
                                   [](const sema::Column& c) { return !c.hidden; });
  bool all = !has_list && !shows_columns;
  bool packet = std::holds_alternative<ast::PacketTarget>(target.target->kind);
  // A packet's function and address are shown by the per-packet view (hidden fields).
  if (packet) all = false;
  // With `select`, a capture list only names the arguments (`trace tcp_sendmsg(sk, size)
  // select comm, size`): the columns are what `select` says.
  if (!shows_columns) addCaptures(fields, probe, all, options);
  for (const sema::Column& column : query.shape.columns) {
    const ast::Expr& e = *column.expr;
    if (auto use = probe.formats.find(&e); use != probe.formats.end()) {
      // Each argument is a hidden field; the format is applied when the event is printed.
      std::vector<Field> args;
      Field format = formatField(use->second, column.name, fields.size(), args, options);
      for (Field& f : args) fields.push_back(std::move(f));
      fields.push_back(std::move(format));
      continue;
    }
    if (options.func_is_address && isFunc(probe.exprs, e)) {
      addField(fields, funcField(column.name, options));
      continue;
    }
    const sema::Type* type = probe.exprs.at(&e).type;
    FieldLayout f = fieldFor(probe.exprs, &e, type, column.name, options);
    markSyscallReturn(f, probe, &e, nullptr);
    f.hidden = f.hidden || column.hidden;
    addField(fields, Field{std::move(f), &e, 0, type});
  }
  if (packet) addPacketFields(fields, target, options);
  if (target.probeNames() && !query.aggregates) {
    // Which of a glob's matches the record is of: a call's number or the match's
    // position, named by the glob's table.
    Field name;
    name.layout.name = "probe";
    name.layout.kind = FieldKind::Table;
    name.layout.size = 8;
    name.layout.hidden = true;
    name.layout.names = target.probeNames()->names;
    name.probe_name = true;
    fields.push_back(std::move(name));
  }
  uint32_t offset = kHeaderBytes;
  for (Field& f : fields) {
    f.layout.offset = offset;
    offset += round8(f.layout.size);
  }
  return fields;
}

uint32_t recordBytes(const std::vector<Field>& fields) {
  if (fields.empty()) return kHeaderBytes;
  return fields.back().layout.offset + round8(fields.back().layout.size);
}

namespace {

plan::AggregateSlot slotFor(const sema::ExprInfo& info, std::string name) {
  plan::AggregateSlot s;
  s.name = std::move(name);
  s.kind = *info.function->aggregate;
  if (s.kind == AggregateKind::Hist) s.buckets = plan::kHistBuckets;
  if (s.kind == AggregateKind::Lhist) {
    s.lo = info.operands[0];
    s.hi = info.operands[1];
    s.step = info.operands[2];
    s.buckets = static_cast<uint32_t>((s.hi - s.lo + s.step - 1) / s.step) + 2;
  }
  if (s.kind == AggregateKind::Top) s.limit = static_cast<uint32_t>(info.operands[0]);
  return s;
}

void addKeys(Aggregation& agg, const sema::ResolvedQuery& query, const sema::ResolvedProbe& probe,
             const LayoutOptions& options) {
  // The key: the `group by` expressions, laid out like record fields, but a struct by its
  // address; a string keeps all the bytes a record would (two paths that differ late stay
  // two groups; one longer than that is marked as cut when printed).
  plan::AggregateLayout& layout = agg.layout;
  // With `every`, the interval an event counts in leads the key (written by the program).
  layout.interval_bytes = query.shape.every_ns ? 8 : 0;
  uint32_t offset = layout.interval_bytes;
  auto place = [&](Field f) {
    if (f.layout.kind == FieldKind::Record) f.layout.kind = FieldKind::Pointer, f.layout.size = 8;

    f.layout.offset = offset;
    offset += round8(f.layout.size);
    layout.keys.push_back(f.layout);
    agg.keys.push_back(std::move(f));
  };
  const ast::Clauses& clauses = query.query->clauses;
  std::vector<int32_t> key_field(clauses.group_by.size(), -1);
  for (size_t k = 0; k < clauses.group_by.size(); ++k) {
    const ast::Expr& key = *clauses.group_by[k];
    const std::string& name = query.shape.key_names[k];
    if (auto use = probe.formats.find(&key); use != probe.formats.end()) {
      // Grouped by a `fmt`: by its arguments, formatted when the table prints.
      std::vector<Field> args;
      Field format = formatField(use->second, name, layout.keys.size(), args, options);
      for (Field& f : args) place(std::move(f));
      key_field[k] = static_cast<int32_t>(layout.keys.size());
      place(std::move(format));  // no bytes of its own
      continue;
    }
    const sema::Type* type = probe.exprs.at(&key).type;
    key_field[k] = static_cast<int32_t>(layout.keys.size());
    if (options.func_is_address && isFunc(probe.exprs, key)) {
      place(funcField(name, options));
      continue;
    }
    FieldLayout f = fieldFor(probe.exprs, &key, type, name, options);
    markSyscallReturn(f, probe, &key, nullptr);
    if (f.kind == FieldKind::String && type->kind == TypeKind::Array && type->size) {
      f.size = std::min(f.size, type->size + 1);  // a char array and its NUL, not a whole key's bytes
    }
    place(Field{std::move(f), &key, 0, type});
  }
  layout.key_size = std::max<uint32_t>(offset, 8);
  // Columns: every key first unless selected, then `select` order (sema's shape).
  for (const sema::Column& column : query.shape.columns) {
    if (column.key >= 0) {
      layout.columns.emplace_back(true, static_cast<uint32_t>(key_field[column.key]));
    } else {
      layout.columns.emplace_back(false, 0);  // the slot index is filled by addSlots
    }
  }
}

void addSlots(Aggregation& agg, const sema::ResolvedQuery& query, const sema::ResolvedProbe& probe) {
  plan::AggregateLayout& layout = agg.layout;
  uint32_t value = 0;
  size_t column = 0;
  for (const sema::Column& c : query.shape.columns) {
    size_t at = column++;
    if (c.key >= 0) continue;
    const sema::ExprInfo& info = probe.exprs.at(c.expr);
    plan::AggregateSlot s = slotFor(info, c.name);
    bool counts = s.kind == AggregateKind::Count || s.kind == AggregateKind::Top;
    if (!counts) {
      // Compared (min, max) and bucketed (hist's first bucket) as the argument's type says:
      // a u64 above 2^63 is large, not negative.
      const ast::Expr& arg = *ast::as<ast::Call>(*c.expr).args[0];
      auto it = probe.exprs.find(&arg);
      s.is_signed = it == probe.exprs.end() || !it->second.type->isInteger() || it->second.type->is_signed;
      if (sema::countsNanoseconds(arg)) s.unit = "ns";
    }
    s.offset = value;
    value += static_cast<uint32_t>(plan::slotBytes(s));
    layout.columns[at] = {false, static_cast<uint32_t>(layout.slots.size())};
    layout.slots.push_back(s);
    const auto& call = ast::as<ast::Call>(*c.expr);
    agg.arguments.push_back(counts ? nullptr : call.args[0].get());
  }
  // The one group of a keyless table exists before any event: something must say whether
  // one came. Every slot but a sum does (a count, a histogram's buckets, min's and max's
  // own mark); a table of sums only gets a count no column shows.
  layout.single = layout.keys.empty() && !layout.interval_bytes;
  bool says_seen = std::any_of(layout.slots.begin(), layout.slots.end(),
                               [](const plan::AggregateSlot& s) { return s.kind != AggregateKind::Sum; });
  if (layout.single && !says_seen) {
    plan::AggregateSlot seen;
    seen.kind = AggregateKind::Count;
    seen.name = "events";
    seen.offset = value;
    value += static_cast<uint32_t>(plan::slotBytes(seen));
    layout.slots.push_back(seen);
    agg.arguments.push_back(nullptr);
  }
  layout.value_size = std::max<uint32_t>(value, 8);
  if (layout.single) layout.key_size = 4;
}

}  // namespace

std::unique_ptr<Aggregation> aggregationOf(const sema::ResolvedQuery& query,
                                           const sema::ResolvedProbe& probe, uint32_t query_number,
                                           const LayoutOptions& options) {
  auto agg = std::make_unique<Aggregation>();
  agg->layout.query = query_number;
  agg->layout.map = fmt::format("agg_{}", query_number);
  agg->layout.every_ns = query.shape.every_ns;
  addKeys(*agg, query, probe, options);
  addSlots(*agg, query, probe);
  return agg;
}

}  // namespace kq::lower

namespace kq::lower {

JoinValue joinValue(const sema::ResolvedJoin& join, const LayoutOptions& query_options) {
  // Laid out with the options of the join's own source (a glob keeps `func` as an address).
  LayoutOptions options = query_options;
  options.joins = nullptr;
  options.func_is_address = !join.probe.chain.empty() && join.probe.chain.back().functions.size() > 1;
  JoinValue kept;
  uint32_t offset = 0;
  auto add = [&](Field f) {
    f.layout.offset = offset;
    f.layout.hidden = true;
    offset += (f.layout.size + 7) / 8 * 8;
    kept.fields.push_back(std::move(f));
  };
  for (const ast::Expr* e : join.stored) {
    const sema::Type* type = join.probe.exprs.at(e).type;
    if (options.func_is_address && isFunc(join.probe.exprs, *e)) {
      Field f = funcAddressField("");
      f.expr = e;
      add(std::move(f));
      continue;
    }
    add(Field{fieldFor(join.probe.exprs, e, type, "", options), e, 0, type});
  }
  if (join.within_ns) {
    Field time;
    time.layout.kind = FieldKind::Unsigned;
    time.layout.size = 8;
    kept.time_field = static_cast<int32_t>(kept.fields.size());
    add(std::move(time));
  }
  kept.bytes = std::max<uint32_t>(offset, 8);
  return kept;
}

}  // namespace kq::lower
