#include "runtime/btf_subset.h"

#include <bpf/btf.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

namespace kq::runtime {
namespace {

/// A type of one source BTF, whole or (a struct or union behind a pointer) by name only.
struct Wanted {
  const ::btf* btf;
  uint32_t id;
  bool declared_only;
  bool operator<(const Wanted& o) const {
    return std::tie(btf, id, declared_only) < std::tie(o.btf, o.id, o.declared_only);
  }
};

bool isComposite(const ::btf_type* t) { return btf_is_struct(t) || btf_is_union(t); }

class Collector {
 public:
  /// What `id` (reached through a pointer, or not) becomes in the subset.
  Wanted want(const ::btf* btf, uint32_t id, bool behind_pointer) {
    const ::btf_type* t = btf__type_by_id(btf, id);
    // A named struct behind a pointer is only declared, unless it is wanted whole anyway.
    bool declared = behind_pointer && t && isComposite(t) && t->name_off != 0;
    return {btf, id, declared};
  }

  void visit(const ::btf* btf, uint32_t id, bool behind_pointer) {
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
    const ::btf_type* t = btf__type_by_id(btf, id);
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

  bool wholeHas(const ::btf* btf, uint32_t id) const { return whole_.count({btf, id}) != 0; }

 private:
  std::set<std::pair<const ::btf*, uint32_t>> whole_;
  std::set<std::pair<const ::btf*, uint32_t>> declared_;
  std::set<std::tuple<const ::btf*, uint32_t, bool>> visited_;
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
  auto remap = [&](const ::btf* btf, uint32_t id, bool behind_pointer) -> uint32_t {
    if (id == 0) return 0;
    Wanted w = collector.want(btf, id, behind_pointer);
    if (w.declared_only && collector.wholeHas(btf, id)) w.declared_only = false;
    auto it = new_ids.find(w);
    return it == new_ids.end() ? 0 : it->second;
  };

  ::btf* out = btf__new_empty();
  if (!out) return Error{fmt::format("cannot make a BTF: {}", std::strerror(errno))};
  for (const Wanted& w : types) {
    const ::btf_type* src = btf__type_by_id(w.btf, w.id);
    int id;
    if (w.declared_only) {
      id = btf__add_fwd(out, btf__name_by_offset(w.btf, src->name_off),
                        btf_is_union(src) ? BTF_FWD_UNION : BTF_FWD_STRUCT);
    } else {
      id = btf__add_type(out, w.btf, src);
    }
    if (id < 0) {
      btf__free(out);
      return Error{fmt::format("cannot copy type {} into a BTF: {}", w.id, std::strerror(-id))};
    }
    if (w.declared_only) continue;
    // The copy refers to the source's ids: each becomes its id here.
    auto* t = const_cast<::btf_type*>(btf__type_by_id(out, static_cast<uint32_t>(id)));
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
  uint32_t size = 0;
  const void* raw = btf__raw_data(out, &size);
  BtfSubset subset;
  if (raw) subset.raw.assign(static_cast<const char*>(raw), size);
  btf__free(out);
  if (!raw) return Error{"cannot lay out the recorded types as BTF"};
  for (const KernelType& root : roots) subset.ids.push_back(root ? remap(root.btf, root.id, false) : 0);
  return subset;
}

}  // namespace kq::runtime
