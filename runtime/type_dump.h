// Values of kernel types in records, shown with the running kernel's BTF: structs and unions
// dumped as C (ksnoop-style) or as JSON objects, both printed from one walk of the bytes
// (runtime/type_walk.h), and enumerators by name.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "plan/event_layout.h"
#include "runtime/kernel_types.h"

namespace kq::runtime {

class TypeDumper {
 public:
  /// `types` may be null (no BTF): records are then not shown, enumerators print as numbers.
  explicit TypeDumper(KernelTypes* types);
  TypeDumper(const TypeDumper&) = delete;
  TypeDumper& operator=(const TypeDumper&) = delete;

  /// Finds the type of every field of `layout` now, so that no event waits for a lookup.
  void prepare(const plan::ProgramLayout& layout);

  /// An Enum field's value: its enumerator's name, or the number.
  std::string enumText(const plan::FieldLayout& f, int64_t value);
  /// A Record field's `f.size` bytes as C, zeroes left out, ending where the capture ends
  /// with `/* N more bytes not captured */`.
  std::string recordText(const plan::FieldLayout& f, const uint8_t* bytes);
  /// The same on one line: the record's own non-zero members, nested blocks as `{…}`.
  std::string recordLine(const plan::FieldLayout& f, const uint8_t* bytes);
  /// A Record field's bytes as a JSON object, zeroes included, members not captured left
  /// out (null without BTF).
  nlohmann::ordered_json recordJson(const plan::FieldLayout& f, const uint8_t* bytes);

  /// The kernel's type for `f` (an Enum or Record field): by its name, else (when the ids
  /// are this kernel's) its id; empty when there is none.
  KernelType typeOf(const plan::FieldLayout& f);

  /// The casts of a text dump (`struct sk_buff *`), made once per type.
  class Casts {
   public:
    const std::string& of(const host::BtfView* btf, uint32_t id);

   private:
    std::unordered_map<const host::BtfView*, std::unordered_map<uint32_t, std::string>> names_;
  };

 private:
  KernelTypes* types_;
  std::unordered_map<const plan::FieldLayout*, KernelType> fields_;
  Casts casts_;
};

}  // namespace kq::runtime
