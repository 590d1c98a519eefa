// Fuzz target: bytes read as kq reads BTF (vmlinux, a `--btf FILE`'s copy): malformed BTF
// must be refused by BtfView's parse or findMalformedType, or walk without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compiler/btf/btf.h"
#include "host/btf_file.h"
#include "host/btf_validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto view = kq::host::BtfView::copyOf(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!view || !kq::host::findMalformedType(view->get()).empty()) return 0;
  auto btf = kq::btf::Btf::adopt(view.take(), "fuzz");
  for (const kq::btf::Function& f : btf->matchFunctions("*")) (void)f.prototype();
  for (std::string_view name : btf->structNames()) {
    if (auto s = btf->findStruct(name)) (void)s->declaration("x"), (void)s->size();
  }
  (void)btf->findEnumerator("x");
  (void)btf->findTracepointHandler("x");
  return 0;
}
