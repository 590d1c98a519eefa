// Values of kernel types in records, shown with the running kernel's BTF: structs and unions
// dumped as C (ksnoop-style) or as JSON objects, enumerators by name.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/event_layout.h"
#include "runtime/kernel_types.h"

struct btf_dump;

namespace kq::runtime {

class TypeDumper {
 public:
  /// `types` may be null (no BTF): records are then not shown, enumerators print as numbers.
  explicit TypeDumper(KernelTypes* types);
  ~TypeDumper();
  TypeDumper(const TypeDumper&) = delete;
  TypeDumper& operator=(const TypeDumper&) = delete;

  /// Finds the type of every field of `layout` now, so that no event waits for a lookup.
  void prepare(const plan::ProgramLayout& layout);

  /// An Enum field's value: its enumerator's name, or the number.
  std::string enumText(const plan::FieldLayout& f, int64_t value);
  /// A Record field's bytes as C; bytes past what was captured read as zero.
  std::string recordText(const plan::FieldLayout& f, const uint8_t* bytes);
  /// A Record field's bytes as a JSON object (null without BTF).
  nlohmann::ordered_json recordJson(const plan::FieldLayout& f, const uint8_t* bytes);

 private:
  /// The kernel's type for `f`: by its name, else (when the ids are this kernel's) its id.
  KernelType typeOf(const plan::FieldLayout& f);
  ::btf_dump* dumperFor(const ::btf* btf);

  KernelTypes* types_;
  std::unordered_map<const plan::FieldLayout*, KernelType> fields_;
  std::unordered_map<const ::btf*, ::btf_dump*> dumpers_;
  std::string dumped_;  // where every btf_dump prints
  std::vector<uint8_t> padded_;  // the record being dumped, zero-filled to its type's size
};

}  // namespace kq::runtime
