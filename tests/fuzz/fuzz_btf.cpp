// Fuzz target: bytes loaded as `--btf FILE` would be. Malformed BTF must be refused by
// findMalformedType or walk without crashing.
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <cstddef>
#include <cstdint>

#include "compiler/btf/btf.h"
#include "host/btf_validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool quiet = (libbpf_set_print(nullptr), true);  // libbpf complains of most inputs
  (void)quiet;
  ::btf* raw = btf__new(data, size);
  if (!raw) return 0;
  if (!kq::host::findMalformedType(raw).empty()) {
    btf__free(raw);
    return 0;
  }
  auto btf = kq::btf::Btf::adopt(raw, "fuzz");
  for (const kq::btf::Function& f : btf->matchFunctions("*")) (void)f.prototype();
  for (std::string_view name : btf->structNames()) {
    if (auto s = btf->findStruct(name)) (void)s->declaration("x"), (void)s->size();
  }
  (void)btf->findEnumerator("x");
  (void)btf->findTracepointHandler("x");
  return 0;
}
