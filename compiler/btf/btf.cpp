#include "compiler/btf/btf.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <tuple>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "host/btf_validate.h"
#include "host/c_declaration.h"
#include "host/btf_file.h"

namespace kq::btf {

namespace {

constexpr const char* kSysfsBtf = "/sys/kernel/btf";

using Entry = std::pair<const BtfFile*, TypeId>;

std::string errnoText(int err) { return std::strerror(err < 0 ? -err : err); }

/// Names to BTF types (or an enum's enumerators), the first of each name kept: one flat
/// array, open addressing, no allocation per name, each name read from its BTF when
/// compared. vmlinux names some 100,000 functions and types: a table of a node per name
/// took 30 ms here to build and free, most of it in malloc and the pages it wrote.
class NameTable {
 public:
  static constexpr uint16_t kType = 0xffff;  // not an enumerator (vlen is 16 bits: never a position)

  struct Found {
    Entry entry;
    uint16_t member;  // an enumerator's position in its enum, or kType
  };

  void add(std::string_view name, const BtfFile* file, TypeId id, uint16_t member = kType) {
    if ((count_ + 1) * 10 > slots_.size() * 7) grow();
    uint32_t hash = hashOf(name);
    for (size_t i = hash & mask();; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.hash == 0) {
        s = Slot{hash, id, fileIndex(file), member};
        ++count_;
        return;
      }
      if (s.hash == hash && nameOf(s) == name) return;  // the first is kept
    }
  }

  std::optional<Found> find(std::string_view name) const {
    if (count_ == 0) return std::nullopt;
    uint32_t hash = hashOf(name);
    for (size_t i = hash & mask();; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.hash == 0) return std::nullopt;
      if (s.hash == hash && nameOf(s) == name) return Found{{files_[s.file], s.id}, s.member};
    }
  }

  /// Calls `f(name, entry)` for each name, in no particular order.
  template <typename F>
  void forEach(F f) const {
    for (const Slot& s : slots_) {
      if (s.hash != 0) f(nameOf(s), Entry{files_[s.file], s.id});
    }
  }

  size_t size() const { return count_; }

 private:
  struct Slot {
    uint32_t hash = 0;  // 0: empty
    TypeId id = 0;
    uint16_t file = 0;
    uint16_t member = kType;
  };

  static uint32_t hashOf(std::string_view name) {
    auto hash = static_cast<uint32_t>(std::hash<std::string_view>{}(name));
    return hash ? hash : 1;
  }
  size_t mask() const { return slots_.size() - 1; }

  uint16_t fileIndex(const BtfFile* file) {
    for (size_t i = 0; i < files_.size(); ++i) {
      if (files_[i] == file) return static_cast<uint16_t>(i);
    }
    files_.push_back(file);
    return static_cast<uint16_t>(files_.size() - 1);
  }

  std::string_view nameOf(const Slot& s) const {
    const host::BtfView* btf = files_[s.file]->btf;
    const ::btf_type* t = btf->type(s.id);
    if (s.member == kType) return btf->name(t->name_off);
    return btf->name(btf_is_enum64(t) ? btf_enum64(t)[s.member].name_off : btf_enum(t)[s.member].name_off);
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
    for (const Slot& s : old) {
      if (s.hash == 0) continue;
      size_t i = s.hash & mask();
      while (slots_[i].hash != 0) i = (i + 1) & mask();
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::vector<const BtfFile*> files_;
  size_t count_ = 0;
};

}  // namespace

struct Btf::Index {
  uint8_t built = 0;  // which Parts are indexed
  NameTable functions;
  NameTable structs;
  NameTable unions;
  NameTable enums;
  NameTable typedefs;
  NameTable enumerators;  // each enumerator's enum and position in it
};

// ---------------------------------------------------------------------------------------
// BtfType

// Every type id kq reads comes from a validated file (`findMalformedType`); an id past the
// end still reads as `void` rather than as a null pointer.
const ::btf_type* BtfType::get() const {
  static const ::btf_type kVoid{};
  const ::btf_type* t = id < file->btf->typeCount() ? file->btf->type(id) : nullptr;
  return t ? t : &kVoid;
}

std::string_view BtfType::name() const {
  if (id == 0) return "void";
  const char* n = file->btf->name(get()->name_off);
  return n ? n : "";
}

BtfType BtfType::resolved() const {
  BtfType t = *this;
  // A chain of typedefs and qualifiers longer than any C declaration is a loop.
  for (int depth = 0; t.id != 0 && depth < 64; ++depth) {
    const ::btf_type* raw = t.get();
    if (!(btf_is_typedef(raw) || btf_is_mod(raw) || btf_is_type_tag(raw))) break;
    t.id = raw->type;
  }
  return t;
}

uint64_t BtfType::size() const {
  if (id == 0) return 0;
  int64_t size = file->btf->resolveSize(id);
  return size < 0 ? 0 : static_cast<uint64_t>(size);
}

std::string BtfType::declaration() const { return declaration(""); }

std::string BtfType::declaration(std::string_view var_name) const {
  if (id == 0) return var_name.empty() ? "void" : fmt::format("void {}", var_name);
  return host::cDeclaration(file->btf, id, var_name);
}

// ---------------------------------------------------------------------------------------
// Function

std::string Function::prototype() const {
  std::string out = return_type.declaration();
  if (!out.empty() && out.back() != '*') out += ' ';
  out += name + "(";
  for (size_t i = 0; i < params.size(); ++i) {
    if (i > 0) out += ", ";
    out += params[i].type.declaration(params[i].name);
  }
  if (variadic) out += params.empty() ? "..." : ", ...";
  if (params.empty() && !variadic) out += "void";
  return out + ")";
}

Function Btf::functionOf(BtfType func, const std::string& module) const {
  Function f;
  f.name = std::string(func.name());
  f.func = func;
  f.module = module;
  BtfType proto{func.file, func.get()->type};
  const ::btf_type* raw = proto.get();
  f.return_type = BtfType{func.file, raw->type};
  const btf_param* params = btf_params(raw);
  for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
    if (params[i].type == 0) {  // a trailing `...`
      f.variadic = true;
      continue;
    }
    const char* name = func.file->btf->name(params[i].name_off);
    f.params.push_back({name ? name : "", BtfType{func.file, params[i].type}});
  }
  return f;
}

// ---------------------------------------------------------------------------------------
// Loading

Result<std::unique_ptr<Btf>> Btf::loadRunningKernel() {
  std::string path = std::string(kSysfsBtf) + "/vmlinux";
  Result<std::unique_ptr<host::BtfView>> view = host::BtfView::readFile(path);
  if (!view) return Error{fmt::format("cannot read the kernel's BTF: {}", view.error().message)};
  std::unique_ptr<Btf> out = adopt(view.take(), "vmlinux");
  out->origin_ = path;
  out->can_load_modules_ = true;
  return out;
}

Result<std::unique_ptr<Btf>> Btf::loadFile(const std::string& path) {
  // btf__parse reads raw BTF and ELF files alike (and checks much of what it reads); kq
  // keeps a copy of what it parsed.
  ::btf* raw = btf__parse(path.c_str(), nullptr);
  if (!raw) {
    int err = errno;
    // libbpf's own codes (4000 and up) and EPROTO/EINVAL mean the content is not BTF.
    bool not_btf = err >= 4000 || err == EPROTO || err == EINVAL ||
                   (err == ENOENT && access(path.c_str(), R_OK) == 0);
    std::string why = not_btf ? "it is neither raw BTF nor an ELF file with a .BTF section"
                              : errnoText(err);
    return Error{fmt::format("cannot read BTF from `{}`: {}", path, why)};
  }
  Result<std::unique_ptr<host::BtfView>> view = host::BtfView::copyOf(raw);
  btf__free(raw);
  if (!view) return Error{fmt::format("cannot read BTF from `{}`: {}", path, view.error().message)};
  if (std::string problem = host::findMalformedType(view->get()); !problem.empty()) {
    return Error{fmt::format("cannot read BTF from `{}`: it is malformed: {}", path, problem)};
  }
  std::unique_ptr<Btf> out = adopt(view.take(), path);
  return out;
}

std::unique_ptr<Btf> Btf::adopt(::btf* raw, std::string name) {
  Result<std::unique_ptr<host::BtfView>> view = host::BtfView::copyOf(raw);
  btf__free(raw);
  return adopt(view ? view.take() : host::BtfView::empty(), std::move(name));
}

std::unique_ptr<Btf> Btf::adopt(std::unique_ptr<host::BtfView> view, std::string name) {
  std::unique_ptr<Btf> out(new Btf());
  out->origin_ = name;
  std::shared_ptr<const host::BtfView> owned = std::move(view);
  out->files_.push_back({std::move(name), owned.get(), false, owned});
  return out;
}

Btf::~Btf() {
  // Modules are split BTF on top of vmlinux: they go first.
  while (!files_.empty()) files_.pop_back();
}

void Btf::loadModules() const {
  if (modules_loaded_ || !can_load_modules_) return;
  modules_loaded_ = true;
  DIR* dir = opendir(kSysfsBtf);
  if (!dir) return;
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != ".." && name != "vmlinux") names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    std::string path = std::string(kSysfsBtf) + "/" + name;
    Result<std::unique_ptr<host::BtfView>> view = host::BtfView::readFile(path, files_.front().btf);
    // An unreadable or malformed module hides only its own functions.
    if (!view || !host::findMalformedType(view->get()).empty()) continue;
    std::shared_ptr<const host::BtfView> owned = view.take();
    files_.push_back({name, owned.get(), false, owned});
    if (index_) buildIndex(files_.back(), index_->built);
  }
}

// ---------------------------------------------------------------------------------------
// Indexes

void Btf::buildIndex(const BtfFile& file, uint8_t parts) const {
  Index& index = *index_;
  const host::BtfView* base = file.btf->base();
  TypeId first = base ? base->typeCount() : 1;
  TypeId count = file.btf->typeCount();
  bool functions = parts & kFunctions, types = parts & kTypes, enumerators = parts & kEnumerators;
  for (TypeId id = first; id < count; ++id) {
    const ::btf_type* t = file.btf->type(id);
    uint16_t kind = btf_kind(t);
    if (enumerators && (kind == BTF_KIND_ENUM || kind == BTF_KIND_ENUM64)) {
      bool is64 = kind == BTF_KIND_ENUM64;
      for (uint16_t i = 0; i < btf_vlen(t); ++i) {
        uint32_t off = is64 ? btf_enum64(t)[i].name_off : btf_enum(t)[i].name_off;
        index.enumerators.add(file.btf->name(off), &file, id, i);
      }
    }
    if (t->name_off == 0) continue;
    if (kind == BTF_KIND_FUNC) {
      if (functions) index.functions.add(file.btf->name(t->name_off), &file, id);
      continue;
    }
    if (!types) continue;
    switch (kind) {
      case BTF_KIND_STRUCT: index.structs.add(file.btf->name(t->name_off), &file, id); break;
      case BTF_KIND_UNION: index.unions.add(file.btf->name(t->name_off), &file, id); break;
      case BTF_KIND_ENUM:
      case BTF_KIND_ENUM64: index.enums.add(file.btf->name(t->name_off), &file, id); break;
      case BTF_KIND_TYPEDEF: index.typedefs.add(file.btf->name(t->name_off), &file, id); break;
      default: break;
    }
  }
}

namespace {

std::optional<BtfType> lookup(const NameTable& table, std::string_view name) {
  auto found = table.find(name);
  if (!found) return std::nullopt;
  return BtfType{found->entry.first, found->entry.second};
}

}  // namespace

// Each part of the index is one pass over every type, made only when a lookup needs it:
// checking a one-liner rarely needs the enumerators, say.
const Btf::Index& Btf::index(uint8_t part) const {
  if (!index_) {
    index_ = std::make_unique<Index>();
  }
  if (uint8_t missing = part & ~index_->built) {
    for (const BtfFile& f : files_) buildIndex(f, missing);
    index_->built |= missing;
  }
  return *index_;
}

std::optional<BtfType> Btf::find(std::string_view name, uint8_t part, uint16_t kind,
                                 bool with_modules) const {
  // A few lookups scan the types (libbpf's linear search is cheap); many build an index.
  constexpr int kScansBeforeIndexing = 8;
  bool indexed = index_ && (index_->built & part);
  if (!indexed && ++scans_ <= kScansBeforeIndexing) {
    std::string key(name);
    for (const BtfFile& file : files_) {
      if (&file != &files_.front() && !with_modules) break;
      int id = file.btf->findByNameKind(key.c_str(), kind);
      if (id > 0) return BtfType{&file, static_cast<TypeId>(id)};
    }
    return std::nullopt;
  }
  const Index& idx = index(part);
  const NameTable& map = kind == BTF_KIND_FUNC      ? idx.functions
                       : kind == BTF_KIND_STRUCT  ? idx.structs
                       : kind == BTF_KIND_UNION   ? idx.unions
                       : kind == BTF_KIND_TYPEDEF ? idx.typedefs
                                                  : idx.enums;
  return lookup(map, name);
}

std::optional<Function> Btf::findFunction(std::string_view name) const {
  auto found = find(name, kFunctions, BTF_KIND_FUNC, true);
  if (!found && !modules_loaded_ && can_load_modules_) {
    loadModules();
    found = find(name, kFunctions, BTF_KIND_FUNC, true);
  }
  if (!found) return std::nullopt;
  const std::string& module = found->file == &files_.front() ? std::string() : found->file->name;
  return functionOf(*found, module);
}

std::vector<std::string_view> Btf::functionNames(bool with_modules) const {
  index(kFunctions);
  if (with_modules) loadModules();
  std::vector<std::string_view> names;
  names.reserve(index_->functions.size());
  index_->functions.forEach([&](std::string_view name, const Entry& entry) {
    if (with_modules || entry.first == &files_.front()) names.push_back(name);
  });
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string_view> Btf::matchFunctionNames(std::string_view glob,
                                                     bool with_modules) const {
  std::vector<std::string_view> out;
  for (std::string_view name : functionNames(with_modules)) {
    if (globMatch(glob, name)) out.push_back(name);
  }
  return out;
}

std::vector<Function> Btf::matchFunctions(std::string_view glob, bool with_modules) const {
  std::vector<Function> out;
  for (std::string_view name : functionNames(with_modules)) {
    if (!globMatch(glob, name)) continue;
    const Entry entry = index_->functions.find(name)->entry;
    out.push_back(functionOf(BtfType{entry.first, entry.second},
                             entry.first == &files_.front() ? "" : entry.first->name));
  }
  return out;
}

/// The first parameter of `f` below `max_position` that points to struct `name`.
namespace {

bool findMemberIn(BtfType record, std::string_view name, MemberSteps& path) {
  const ::btf_type* raw = record.get();
  if (!btf_is_composite(raw)) return false;
  const btf_member* members = btf_members(raw);
  for (uint16_t i = 0; i < btf_vlen(raw); ++i) {
    const char* member_name = record.file->btf->name(members[i].name_off);
    BtfType type = BtfType{record.file, members[i].type}.resolved();
    path.steps.emplace_back(record, i);
    if (member_name && name == member_name) {
      path.type = type;
      return true;
    }
    if ((!member_name || !*member_name) && findMemberIn(type, name, path)) return true;
    path.steps.pop_back();
  }
  return false;
}

}  // namespace

std::optional<MemberSteps> findMemberSteps(BtfType record, std::string_view name) {
  MemberSteps path;
  if (record.id == 0 || !findMemberIn(record.resolved(), name, path)) return std::nullopt;
  return path;
}

bool sameRecord(BtfType a, BtfType b) {
  if (a == b) return true;
  if (!a.file || !b.file || a.id == 0 || b.id == 0 || a.file->user_space != b.file->user_space) return false;
  return btf_kind(a.get()) == btf_kind(b.get()) && !a.name().empty() && a.name() == b.name() && a.size() == b.size();
}

std::optional<uint32_t> parameterPointingTo(const Function& f, std::string_view name,
                                            uint32_t first, uint32_t max_position) {
  for (uint32_t i = first; i < f.params.size() && i < max_position; ++i) {
    BtfType t = f.params[i].type.resolved();
    if (t.id == 0 || !btf_is_ptr(t.get())) continue;
    BtfType pointee = BtfType{t.file, t.get()->type}.resolved();
    if (pointee.id != 0 && btf_is_struct(pointee.get()) && pointee.name() == name) return i;
  }
  return std::nullopt;
}

std::vector<std::pair<Function, uint32_t>> Btf::functionsTaking(std::string_view name,
                                                                 uint32_t max_position) const {
  // Tens of thousands of functions: their prototypes are read in place, and a Function (with
  // its parameters' names) is made only for those that match.
  index(kFunctions);
  loadModules();
  std::vector<std::tuple<std::string_view, BtfType, uint32_t>> matched;
  index_->functions.forEach([&](std::string_view function, const Entry& entry) {
    if (function.rfind("__bpf_trace_", 0) == 0) return;  // tracepoint handlers: not traced
    BtfType func{entry.first, entry.second};
    BtfType proto{func.file, func.get()->type};
    if (proto.id == 0 || !btf_is_func_proto(proto.get())) return;
    const btf_param* params = btf_params(proto.get());
    for (uint32_t i = 0; i < btf_vlen(proto.get()) && i < max_position; ++i) {
      BtfType t = BtfType{proto.file, params[i].type}.resolved();
      if (t.id == 0 || !btf_is_ptr(t.get())) continue;
      BtfType pointee = BtfType{t.file, t.get()->type}.resolved();
      if (pointee.id != 0 && btf_is_struct(pointee.get()) && pointee.name() == name) {
        matched.emplace_back(function, func, i);
        break;
      }
    }
  });
  std::sort(matched.begin(), matched.end(),
            [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  std::vector<std::pair<Function, uint32_t>> out;
  for (const auto& [function, func, i] : matched) {
    out.emplace_back(functionOf(func, func.file == &files_.front() ? "" : func.file->name), i);
  }
  return out;
}

std::optional<BtfType> Btf::findStruct(std::string_view name) const {
  return find(name, kTypes, BTF_KIND_STRUCT, false);
}

std::optional<BtfType> Btf::findUnion(std::string_view name) const {
  return find(name, kTypes, BTF_KIND_UNION, false);
}

std::optional<BtfType> Btf::findEnum(std::string_view name) const {
  if (auto e = find(name, kTypes, BTF_KIND_ENUM, false)) return e;
  return find(name, kTypes, BTF_KIND_ENUM64, false);
}

std::optional<BtfType> Btf::findTypedef(std::string_view name) const {
  return find(name, kTypes, BTF_KIND_TYPEDEF, false);
}

std::optional<Enumerator> Btf::findEnumerator(std::string_view name) const {
  index(kEnumerators);
  auto found = index_->enumerators.find(name);
  if (!found) return std::nullopt;
  BtfType type{found->entry.first, found->entry.second};
  const ::btf_type* t = type.get();
  uint32_t i = found->member;
  int64_t value = btf_is_enum64(t) ? static_cast<int64_t>(btf_enum64_value(&btf_enum64(t)[i]))
                                   : btf_enum(t)[i].val;
  return Enumerator{type, std::string(name), value};
}

namespace {

/// The enums of `file` (its own types, not its base's) with enumerators named `prefix...`.
void collectEnumerators(const BtfFile& file, std::string_view prefix,
                        std::vector<EnumeratorGroup>& out) {
  const host::BtfView* base = file.btf->base();
  TypeId first = base ? base->typeCount() : 1;
  TypeId count = file.btf->typeCount();
  for (TypeId id = first; id < count; ++id) {
    const ::btf_type* t = file.btf->type(id);
    if (!btf_is_enum(t) && !btf_is_enum64(t)) continue;
    EnumeratorGroup group{BtfType{&file, id}, {}};
    bool is64 = btf_is_enum64(t);
    for (uint16_t i = 0; i < btf_vlen(t); ++i) {
      std::string_view name =
          file.btf->name(is64 ? btf_enum64(t)[i].name_off : btf_enum(t)[i].name_off);
      if (name.substr(0, prefix.size()) != prefix) continue;
      // An unsigned enum's values (BTF's kind flag clear) as the kernel's u32 holds them.
      int64_t value = is64           ? static_cast<int64_t>(btf_enum64_value(&btf_enum64(t)[i]))
                      : btf_kflag(t) ? btf_enum(t)[i].val
                                     : static_cast<uint32_t>(btf_enum(t)[i].val);
      group.enumerators.push_back({group.enum_type, std::string(name), value});
    }
    if (!group.enumerators.empty()) out.push_back(std::move(group));
  }
}

}  // namespace

std::vector<EnumeratorGroup> Btf::enumeratorsWithPrefix(std::string_view prefix) const {
  std::vector<EnumeratorGroup> out;
  collectEnumerators(files_.front(), prefix, out);
  if (!out.empty()) return out;
  loadModules();
  for (size_t i = 1; i < files_.size(); ++i) collectEnumerators(files_[i], prefix, out);
  return out;
}

std::vector<std::string_view> Btf::enumeratorNames() const {
  index(kEnumerators);
  std::vector<std::string_view> names;
  index_->enumerators.forEach([&](std::string_view name, const Entry&) { names.push_back(name); });
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string_view> Btf::structNames() const {
  index(kTypes);
  std::vector<std::string_view> names;
  index_->structs.forEach([&](std::string_view name, const Entry&) { names.push_back(name); });
  std::sort(names.begin(), names.end());
  return names;
}

// ---------------------------------------------------------------------------------------

bool globMatch(std::string_view pattern, std::string_view text) {
  // Iterative matching with backtracking to the last `*`.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace kq::btf
