#include "record/recorded_types.h"

#include <bpf/btf.h>

#include <unordered_map>

#include <fmt/format.h>

#include "host/btf_file.h"
#include "host/btf_validate.h"
#include "record/bytes.h"
#include "runtime/btf_subset.h"

namespace kq::record {
namespace {

template <class Fn>
void eachTypedField(const plan::ProgramLayout& layout, Fn&& fn) {
  auto visit = [&](const plan::FieldLayout& f) {
    if (f.kind == plan::FieldKind::Record || f.kind == plan::FieldKind::Enum) fn(f);
  };
  for (const plan::ProbeLayout& p : layout.probes) {
    for (const plan::FieldLayout& f : p.fields) visit(f);
  }
  for (const plan::AggregateLayout& a : layout.aggregates) {
    for (const plan::FieldLayout& f : a.keys) visit(f);
  }
}

}  // namespace

Result<std::string> encodeRecordedTypes(const plan::ProgramLayout& layout, runtime::TypeDumper& dumper) {
  std::vector<const plan::FieldLayout*> fields;
  std::vector<runtime::KernelType> roots;
  eachTypedField(layout, [&](const plan::FieldLayout& f) {
    fields.push_back(&f);
    roots.push_back(dumper.typeOf(f));
  });
  Result<runtime::BtfSubset> subset = runtime::btfSubset(roots);
  if (!subset) return subset.error();
  ByteWriter out;
  out.bytes(subset->raw.data(), subset->raw.size());
  out.varint(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    out.string(fields[i]->type_name);
    out.varint(fields[i]->btf_id);
    out.varint(subset->ids[i]);
  }
  return out.data();
}

Result<std::unique_ptr<runtime::KernelTypes>> decodeRecordedTypes(const std::string& block) {
  ByteReader in(reinterpret_cast<const uint8_t*>(block.data()), block.size());
  std::vector<uint8_t> raw = in.bytes();
  std::unordered_map<std::string, uint32_t> by_spelling;
  std::unordered_map<uint32_t, uint32_t> by_id;
  size_t fields = in.count(3);
  for (size_t i = 0; i < fields && in.ok(); ++i) {
    std::string spelling = in.string();
    auto vmlinux_id = static_cast<uint32_t>(in.varint());
    auto id = static_cast<uint32_t>(in.varint());
    if (!spelling.empty()) by_spelling[spelling] = id;
    if (vmlinux_id) by_id[vmlinux_id] = id;
  }
  if (!in.ok() || !in.atEnd()) {
    return Error{fmt::format("its types block is malformed at its byte {}: {}", in.ok() ? in.at() : in.errorAt(),
                             in.ok() ? "bytes left over" : in.error())};
  }
  Result<std::unique_ptr<host::BtfView>> btf =
      raw.empty() ? Result<std::unique_ptr<host::BtfView>>(host::BtfView::empty()) : host::BtfView::copyOf(std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size()));
  if (!btf) return Error{"its types block holds no valid BTF: " + btf.error().message};
  if (std::string problem = host::findMalformedType(btf->get()); !problem.empty()) {
    return Error{"its types block holds malformed BTF: " + problem};
  }
  uint32_t count = (*btf)->typeCount();
  bool in_range = true;
  for (const auto& [_, id] : by_spelling) in_range = in_range && id < count;
  for (const auto& [_, id] : by_id) in_range = in_range && id < count;
  if (!in_range) return Error{"its types block names a type its BTF does not have"};
  return std::make_unique<runtime::KernelTypes>(btf.take(), std::move(by_spelling), std::move(by_id));
}

}  // namespace kq::record
