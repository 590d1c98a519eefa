#include "runtime/btf_subset.h"
#include "host/btf_file.h"

#include <bpf/btf.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

namespace kq::runtime {
namespace {

/// A type of one source BTF, whole or (a struct or union behind a pointer) by name only.
struct Wanted {
  const host::BtfView* btf;
  uint32_t id;
  bool declared_only;
  bool operator<(const Wanted& o) const {
    return std::tie(btf, id, declared_only) < std::tie(o.btf, o.id, o.declared_only);
  }
};

bool isComposite(const ::btf_type* t) { return btf_is_struct(t) || btf_is_union(t); }

/// A raw BTF written type by type: each type record copied with its strings.
class BtfWriter {
 public:
  BtfWriter() { strings_.push_back('\0'); }

  /// A copy of `src` (its names from `from`), as type id count(); valid until the next add.
  ::btf_type* copy(const host::BtfView& from, const ::btf_type* src) {
    size_t at = types_.size();
    types_.append(reinterpret_cast<const char*>(src), host::BtfView::recordSize(src));
    auto* t = reinterpret_cast<::btf_type*>(types_.data() + at);
    t->name_off = string(from.name(t->name_off));
    uint16_t vlen = btf_vlen(t);
    if (isComposite(t)) {
      for (uint16_t i = 0; i < vlen; ++i) btf_members(t)[i].name_off = string(from.name(btf_members(t)[i].name_off));
    } else if (btf_is_enum(t)) {
      for (uint16_t i = 0; i < vlen; ++i) btf_enum(t)[i].name_off = string(from.name(btf_enum(t)[i].name_off));
    } else if (btf_is_enum64(t)) {
      for (uint16_t i = 0; i < vlen; ++i) btf_enum64(t)[i].name_off = string(from.name(btf_enum64(t)[i].name_off));
    } else if (btf_is_func_proto(t)) {
      for (uint16_t i = 0; i < vlen; ++i) btf_params(t)[i].name_off = string(from.name(btf_params(t)[i].name_off));
    }
    ++count_;
    return t;
  }

  /// `struct name;` (or `union name;`).
  void forward(const char* name, bool is_union) {
    ::btf_type t{};
    t.name_off = string(name);
    t.info = (BTF_KIND_FWD << 24) | (is_union ? 1u << 31 : 0u);
    types_.append(reinterpret_cast<const char*>(&t), sizeof t);
    ++count_;
  }

  uint32_t count() const { return count_; }

  /// Header, types, strings.
  std::string finish() const {
    btf_header header{};
    header.magic = 0xeB9F;
    header.version = 1;
    header.hdr_len = sizeof header;
    header.type_off = 0;
    header.type_len = static_cast<uint32_t>(types_.size());
    header.str_off = header.type_len;
    header.str_len = static_cast<uint32_t>(strings_.size());
    std::string out(reinterpret_cast<const char*>(&header), sizeof header);
    return out + types_ + strings_;
  }

 private:
  uint32_t string(const char* s) {
    if (!*s) return 0;
    auto [it, added] = offsets_.try_emplace(s, static_cast<uint32_t>(strings_.size()));
    if (added) strings_.append(s, std::strlen(s) + 1);
    return it->second;
  }

  std::string types_;
  std::string strings_;
  std::unordered_map<std::string, uint32_t> offsets_;
  uint32_t count_ = 0;
};

class Collector {
 public:
  /// What `id` (reached through a pointer, or not) becomes in the subset.
  Wanted want(const host::BtfView* btf, uint32_t id, bool behind_pointer) {
    const ::btf_type* t = btf->type(id);
    // A named struct behind a pointer is only declared, unless it is wanted whole anyway.
    bool declared = behind_pointer && t && isComposite(t) && t->name_off != 0;
    return {btf, id, declared};
  }

  void visit(const host::BtfView* btf, uint32_t id, bool behind_pointer) {
    if (id == 0) return;
    Wanted w = want(btf, id, behind_pointer);
    if (w.declared_only) {
      declared_.insert({btf, id});
      return;
    }
    // A typedef or array is gone through again when reached another way: behind a pointer
    // first, its struct was only declared; directly, it is wanted whole.
    if (!visited_.insert({btf, id, behind_pointer}).second) return;
    if (whole_.insert({btf, id}).second) order_.push_back(w);
    const ::btf_type* t = btf->type(id);
    if (!t) return;
    if (btf_is_ptr(t)) return visit(btf, t->type, true);
    if (btf_is_mod(t) || btf_is_typedef(t) || btf_is_type_tag(t)) return visit(btf, t->type, behind_pointer);
    if (btf_is_array(t)) {
      visit(btf, btf_array(t)->type, behind_pointer);
      return visit(btf, btf_array(t)->index_type, false);
    }
    if (isComposite(t)) {
      const ::btf_member* m = btf_members(t);
      for (uint16_t i = 0; i < btf_vlen(t); ++i) visit(btf, m[i].type, false);
      return;
    }
    if (btf_is_func_proto(t)) {
      visit(btf, t->type, true);
      const ::btf_param* p = btf_params(t);
      for (uint16_t i = 0; i < btf_vlen(t); ++i) visit(btf, p[i].type, true);
    }
  }

  /// Every type, in the subset's order: those wanted whole as they were reached, then the
  /// declarations of structs not wanted whole.
  std::vector<Wanted> finish() {
    std::vector<Wanted> all = order_;
    for (const auto& [btf, id] : declared_) {
      if (!whole_.count({btf, id})) all.push_back({btf, id, true});
    }
    return all;
  }

  bool wholeHas(const host::BtfView* btf, uint32_t id) const { return whole_.count({btf, id}) != 0; }

 private:
  std::set<std::pair<const host::BtfView*, uint32_t>> whole_;
  std::set<std::pair<const host::BtfView*, uint32_t>> declared_;
  std::set<std::tuple<const host::BtfView*, uint32_t, bool>> visited_;
  std::vector<Wanted> order_;
};

}  // namespace

Result<BtfSubset> btfSubset(const std::vector<KernelType>& roots) {
  Collector collector;
  for (const KernelType& root : roots) {
    if (root) collector.visit(root.btf, root.id, false);
  }
  std::vector<Wanted> types = collector.finish();
  std::map<Wanted, uint32_t> new_ids;
  for (size_t i = 0; i < types.size(); ++i) new_ids[types[i]] = static_cast<uint32_t>(i + 1);
  auto remap = [&](const host::BtfView* btf, uint32_t id, bool behind_pointer) -> uint32_t {
    if (id == 0) return 0;
    Wanted w = collector.want(btf, id, behind_pointer);
    if (w.declared_only && collector.wholeHas(btf, id)) w.declared_only = false;
    auto it = new_ids.find(w);
    return it == new_ids.end() ? 0 : it->second;
  };

  BtfWriter out;
  for (const Wanted& w : types) {
    const ::btf_type* src = w.btf->type(w.id);
    if (w.declared_only) {
      out.forward(w.btf->name(src->name_off), btf_is_union(src));
      continue;
    }
    ::btf_type* t = out.copy(*w.btf, src);
    // The copy refers to the source's ids: each becomes its id here.
    if (btf_is_ptr(t)) {
      t->type = remap(w.btf, t->type, true);
    } else if (btf_is_mod(t) || btf_is_typedef(t) || btf_is_type_tag(t)) {
      // A typedef's target is behind a pointer when the typedef was (it is wanted once
      // either way: whole if anything wants it whole).
      uint32_t whole = remap(w.btf, t->type, false);
      t->type = whole ? whole : remap(w.btf, t->type, true);
    } else if (btf_is_array(t)) {
      struct btf_array* a = btf_array(t);
      uint32_t whole = remap(w.btf, a->type, false);
      a->type = whole ? whole : remap(w.btf, a->type, true);
      a->index_type = remap(w.btf, a->index_type, false);
    } else if (isComposite(t)) {
      ::btf_member* m = btf_members(t);
      for (uint16_t i = 0; i < btf_vlen(t); ++i) m[i].type = remap(w.btf, m[i].type, false);
    } else if (btf_is_func_proto(t)) {
      t->type = remap(w.btf, t->type, true);
      ::btf_param* p = btf_params(t);
      for (uint16_t i = 0; i < btf_vlen(t); ++i) p[i].type = remap(w.btf, p[i].type, true);
    }
  }
  BtfSubset subset;
  subset.raw = out.finish();
  for (const KernelType& root : roots) subset.ids.push_back(root ? remap(root.btf, root.id, false) : 0);
  return subset;
}

}  // namespace kq::runtime
