#include "runtime/kernel_types.h"

#include "host/btf_file.h"

#include <bpf/btf.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>
#include <string_view>

namespace kq::runtime {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

/// `id` with const, volatile, restrict and type tags stepped over (never typedefs: a
/// typedef is part of how the compiler spells a type).
uint32_t withoutModifiers(const host::BtfView* btf, uint32_t id) {
  const ::btf_type* t = btf->type(id);
  while (t && (btf_is_mod(t) || btf_is_type_tag(t))) {
    id = t->type;
    t = btf->type(id);
  }
  return id;
}

/// The first type of `kind` that refers to `target`, matched by `fits` (BTF has one array
/// or pointer type per use, all anonymous, so they are found by what they point at).
template <typename Fits>
std::optional<uint32_t> findReferring(const host::BtfView* btf, uint32_t kind, Fits fits) {
  uint32_t count = btf->typeCount();
  for (uint32_t id = 1; id < count; ++id) {
    const ::btf_type* t = btf->type(id);
    if (btf_kind(t) == kind && fits(t)) return id;
  }
  return std::nullopt;
}

std::optional<uint32_t> findNamed(const host::BtfView* btf, std::string_view name,
                                  std::initializer_list<uint32_t> kinds) {
  std::string text(name);
  for (uint32_t kind : kinds) {
    int id = btf->findByNameKind(text.c_str(), kind);
    if (id > 0) return static_cast<uint32_t>(id);
  }
  return std::nullopt;
}

/// The id of the type spelled `s`; 0 is `void`.
std::optional<uint32_t> lookup(const host::BtfView* btf, std::string_view s) {
  s = trimmed(s);
  // `T[3][2]` is two `T[3]`: the last bound is the outermost array's.
  if (!s.empty() && s.back() == ']') {
    size_t open = s.rfind('[');
    if (open == std::string_view::npos) return std::nullopt;
    uint32_t count = 0;
    std::string_view digits = s.substr(open + 1, s.size() - open - 2);
    auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), count);
    if (parsed.ec != std::errc() || parsed.ptr != digits.data() + digits.size()) return std::nullopt;
    auto element = lookup(btf, s.substr(0, open));
    if (!element) return std::nullopt;
    return findReferring(btf, BTF_KIND_ARRAY, [&](const ::btf_type* t) {
      const struct btf_array* a = btf_array(t);
      return a->nelems == count && withoutModifiers(btf, a->type) == *element;
    });
  }
  if (!s.empty() && s.back() == '*') {
    auto pointee = lookup(btf, s.substr(0, s.size() - 1));
    if (!pointee) return std::nullopt;
    return findReferring(btf, BTF_KIND_PTR, [&](const ::btf_type* t) {
      return withoutModifiers(btf, t->type) == *pointee;
    });
  }
  for (std::string_view modifier : {"const ", "volatile "}) {
    if (startsWith(s, modifier)) return lookup(btf, s.substr(modifier.size()));
  }
  if (s == "void") return 0;
  if (startsWith(s, "struct ")) return findNamed(btf, s.substr(7), {BTF_KIND_STRUCT});
  if (startsWith(s, "union ")) return findNamed(btf, s.substr(6), {BTF_KIND_UNION});
  if (startsWith(s, "enum ")) return findNamed(btf, s.substr(5), {BTF_KIND_ENUM, BTF_KIND_ENUM64});
  return findNamed(btf, s, {BTF_KIND_TYPEDEF, BTF_KIND_INT, BTF_KIND_FLOAT});
}

}  // namespace

uint32_t findTypeIn(const host::BtfView* btf, const std::string& spelling) {
  if (!btf || spelling.empty()) return 0;
  auto id = lookup(btf, spelling);
  if (!id || *id == 0) return 0;
  // Dumps and enumerator names want the type itself: step over typedefs too.
  int resolved = btf->resolveType(*id);
  return resolved > 0 ? static_cast<uint32_t>(resolved) : *id;
}

KernelTypes::KernelTypes(std::string dir, const host::BtfView* compiled_against, bool ids_are_this_kernels)
    : dir_(std::move(dir)),
      vmlinux_(compiled_against),
      ids_trusted_(compiled_against != nullptr || ids_are_this_kernels),
      vmlinux_loaded_(compiled_against != nullptr) {}

KernelTypes::KernelTypes(std::unique_ptr<host::BtfView> recorded, std::unordered_map<std::string, uint32_t> by_spelling,
                         std::unordered_map<uint32_t, uint32_t> by_id)
    : vmlinux_(recorded.get()), owned_vmlinux_(std::move(recorded)), vmlinux_loaded_(true), modules_loaded_(true),
      recorded_(true), recorded_ids_(std::move(by_id)) {
  for (auto& [spelling, id] : by_spelling) found_[spelling] = {vmlinux_, id};
}

KernelTypes::~KernelTypes() {
  // Modules first: each is split on top of vmlinux.
  modules_.clear();
}

const host::BtfView* KernelTypes::vmlinux() {
  if (!vmlinux_loaded_) {
    vmlinux_loaded_ = true;
    if (auto loaded = host::BtfView::readFile(dir_ + "/vmlinux")) {
      owned_vmlinux_ = loaded.take();
      vmlinux_ = owned_vmlinux_.get();
    }
  }
  return vmlinux_;
}

const std::vector<std::unique_ptr<host::BtfView>>& KernelTypes::modules() {
  if (modules_loaded_ || !vmlinux()) return modules_;
  modules_loaded_ = true;
  std::vector<std::string> paths;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, error)) {
    if (entry.path().filename() != "vmlinux") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());  // the same order, so the same answers, every run
  for (const std::string& path : paths) {
    if (auto module = host::BtfView::readFile(path, vmlinux_)) modules_.push_back(module.take());
  }
  return modules_;
}

KernelType KernelTypes::find(const std::string& spelling) {
  if (spelling.empty()) return {};
  if (auto it = found_.find(spelling); it != found_.end()) return it->second;
  KernelType type;
  if (uint32_t id = findTypeIn(vmlinux(), spelling)) {
    type = {vmlinux_, id};
  } else {
    for (const std::unique_ptr<host::BtfView>& module : modules()) {
      if (uint32_t in_module = findTypeIn(module.get(), spelling)) {
        type = {module.get(), in_module};
        break;
      }
    }
  }
  found_[spelling] = type;
  return type;
}

KernelType KernelTypes::byVmlinuxId(uint32_t id) {
  if (recorded_) {
    auto it = recorded_ids_.find(id);
    return it == recorded_ids_.end() || !vmlinux_ ? KernelType{} : KernelType{vmlinux_, it->second};
  }
  if (!ids_trusted_ || !id || !vmlinux() || id >= vmlinux_->typeCount()) return {};
  return {vmlinux_, id};
}

}  // namespace kq::runtime
