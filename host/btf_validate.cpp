#include "host/btf_validate.h"
#include "host/btf_file.h"

#include <bpf/btf.h>

#include <fmt/format.h>

#include <cstdint>
#include <vector>

namespace kq::host {

namespace {

/// The ids of the types one BTF type refers to, and problems of its own shape.
class TypeChecker {
 public:
  explicit TypeChecker(const host::BtfView* btf) : btf_(btf), count_(btf->typeCount()) {}

  std::string check(uint32_t id) {
    const ::btf_type* t = btf_->type(id);
    if (!t) return fmt::format("type {} cannot be read", id);
    if (!btf_->hasString(t->name_off)) return fmt::format("type {} has no name string", id);
    switch (btf_kind(t)) {
      case BTF_KIND_PTR: case BTF_KIND_TYPEDEF: case BTF_KIND_VOLATILE: case BTF_KIND_CONST:
      case BTF_KIND_RESTRICT: case BTF_KIND_TYPE_TAG: case BTF_KIND_VAR: case BTF_KIND_DECL_TAG:
        return refers(id, t->type);
      case BTF_KIND_FUNC: return checkFunc(id, t);
      case BTF_KIND_FUNC_PROTO: return checkProto(id, t);
      case BTF_KIND_ARRAY: {
        const struct btf_array* a = ::btf_array(t);
        if (std::string e = refers(id, a->type); !e.empty()) return e;
        return refers(id, a->index_type);
      }
      case BTF_KIND_STRUCT: case BTF_KIND_UNION: return checkMembers(id, t);
      case BTF_KIND_DATASEC: return checkSection(id, t);
      case BTF_KIND_ENUM: case BTF_KIND_ENUM64: return checkEnumerators(id, t);
      default: return "";
    }
  }

 private:
  std::string refers(uint32_t id, uint32_t target) const {
    if (target < count_) return "";
    return fmt::format("type {} refers to type {}, but the last type is {}", id, target, count_ - 1);
  }

  std::string checkFunc(uint32_t id, const ::btf_type* t) const {
    if (std::string e = refers(id, t->type); !e.empty()) return e;
    const ::btf_type* proto = btf_->type(t->type);
    if (t->type == 0 || !proto || !btf_is_func_proto(proto)) {
      return fmt::format("function {} has type {}, which is not a function prototype", id, t->type);
    }
    return "";
  }

  std::string checkProto(uint32_t id, const ::btf_type* t) const {
    if (std::string e = refers(id, t->type); !e.empty()) return e;
    const btf_param* params = btf_params(t);
    for (uint16_t i = 0; i < btf_vlen(t); ++i) {
      if (std::string e = refers(id, params[i].type); !e.empty()) return e;
      if (!btf_->hasString(params[i].name_off)) {
        return fmt::format("parameter {} of type {} has no name string", i, id);
      }
    }
    return "";
  }

  std::string checkMembers(uint32_t id, const ::btf_type* t) const {
    const btf_member* members = btf_members(t);
    for (uint16_t i = 0; i < btf_vlen(t); ++i) {
      if (std::string e = refers(id, members[i].type); !e.empty()) return e;
      if (!btf_->hasString(members[i].name_off)) {
        return fmt::format("member {} of type {} has no name string", i, id);
      }
    }
    return "";
  }

  std::string checkEnumerators(uint32_t id, const ::btf_type* t) const {
    bool is64 = btf_is_enum64(t);
    for (uint16_t i = 0; i < btf_vlen(t); ++i) {
      uint32_t name = is64 ? btf_enum64(t)[i].name_off : btf_enum(t)[i].name_off;
      if (!btf_->hasString(name)) {
        return fmt::format("enumerator {} of type {} has no name string", i, id);
      }
    }
    return "";
  }

  std::string checkSection(uint32_t id, const ::btf_type* t) const {
    const btf_var_secinfo* vars = btf_var_secinfos(t);
    for (uint16_t i = 0; i < btf_vlen(t); ++i) {
      if (std::string e = refers(id, vars[i].type); !e.empty()) return e;
    }
    return "";
  }

  const host::BtfView* btf_;
  uint32_t count_;
};

/// The types a declaration of `t` spells out: C lets a type contain itself only through
/// a named struct or union, which a declaration names instead of spelling out.
std::vector<uint32_t> spelledOut(const ::btf_type* t) {
  std::vector<uint32_t> out;
  bool named_record = (btf_is_struct(t) || btf_is_union(t)) && t->name_off != 0;
  if (named_record) return out;
  if (btf_is_array(t)) return {btf_array(t)->type, btf_array(t)->index_type};
  if (btf_is_composite(t)) {
    for (uint16_t i = 0; i < btf_vlen(t); ++i) out.push_back(btf_members(t)[i].type);
  } else if (btf_is_func_proto(t)) {
    out.push_back(t->type);
    for (uint16_t i = 0; i < btf_vlen(t); ++i) out.push_back(btf_params(t)[i].type);
  } else if (btf_is_datasec(t)) {
    for (uint16_t i = 0; i < btf_vlen(t); ++i) out.push_back(btf_var_secinfos(t)[i].type);
  } else if (btf_is_ptr(t) || btf_is_typedef(t) || btf_is_mod(t) || btf_is_type_tag(t) ||
             btf_is_func(t) || btf_is_var(t) || btf_is_decl_tag(t)) {
    out.push_back(t->type);
  }
  return out;
}

/// A type that contains itself other than through a named struct or union (libbpf's
/// btf_dump and kq's own walks would recurse forever), or nests deeper than any C type.
std::string findLoop(const host::BtfView* btf, uint32_t first) {
  constexpr size_t kMaxNesting = 512;
  uint32_t count = btf->typeCount();
  enum : uint8_t { kNew, kOpen, kDone };
  std::vector<uint8_t> state(count, kNew);
  for (uint32_t root = first; root < count; ++root) {
    if (state[root] != kNew) continue;
    // Depth-first, iteratively: each frame is a type and its references left to visit.
    std::vector<std::pair<uint32_t, std::vector<uint32_t>>> stack;
    stack.emplace_back(root, spelledOut(btf->type(root)));
    state[root] = kOpen;
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      if (next.empty()) {
        state[id] = kDone;
        stack.pop_back();
        continue;
      }
      uint32_t ref = next.back();
      next.pop_back();
      if (ref < first || state[ref] == kDone) continue;  // base BTF was checked on its own
      if (state[ref] == kOpen) return fmt::format("type {} contains itself", ref);
      if (stack.size() >= kMaxNesting) return fmt::format("type {} nests too deeply", root);
      state[ref] = kOpen;
      stack.emplace_back(ref, spelledOut(btf->type(ref)));
    }
  }
  return "";
}

}  // namespace

std::string findMalformedType(const host::BtfView* btf) {
  // Every type record is a multiple of 4 bytes, so aligned types start aligned: a file whose
  // type section does not is read through misaligned pointers, in libbpf and here.
  const host::BtfView* base = btf->base();
  uint32_t first = base ? base->typeCount() : 1;
  if (first < btf->typeCount() &&
      reinterpret_cast<uintptr_t>(btf->type(first)) % 4 != 0) {
    return "its types do not start on a 4-byte boundary";
  }
  TypeChecker checker(btf);
  for (uint32_t id = first; id < btf->typeCount(); ++id) {
    if (std::string problem = checker.check(id); !problem.empty()) return problem;
  }
  // Every reference is in range now: the loop search can follow them.
  return findLoop(btf, first);
}

}  // namespace kq::host
