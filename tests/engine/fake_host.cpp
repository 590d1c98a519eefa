#include "tests/engine/fake_host.h"

#include <bpf/btf.h>

#include "host/btf_file.h"

#include <cstdlib>
#include <ctime>
#include <stdexcept>

#include <fmt/format.h>

namespace kq::engine::testing {
namespace {

int added(int id, const char* what) {
  if (id < 0) throw std::runtime_error(fmt::format("btf__add failed for {}", what));
  return id;
}

/// The small kernel's BTF (see fake_host.h).
std::unique_ptr<host::BtfView> smallKernelBtf() {
  ::btf* btf = btf__new_empty();
  int int_t = added(btf__add_int(btf, "int", 4, BTF_INT_SIGNED), "int");
  int uint_t = added(btf__add_int(btf, "unsigned int", 4, 0), "unsigned int");
  int ushort_t = added(btf__add_int(btf, "short unsigned int", 2, 0), "short unsigned int");
  int char_t = added(btf__add_int(btf, "char", 1, BTF_INT_SIGNED | BTF_INT_CHAR), "char");
  int long_t = added(btf__add_int(btf, "long int", 8, BTF_INT_SIGNED), "long int");

  int state = added(btf__add_enum(btf, "conn_state", 4), "enum conn_state");
  btf__add_enum_value(btf, "CONN_IDLE", 0);
  btf__add_enum_value(btf, "CONN_OPEN", 1);
  btf__add_enum_value(btf, "CONN_CLOSED", 2);
  added(btf__add_enum(btf, "skb_drop_reason", 4), "enum skb_drop_reason");
  btf__add_enum_value(btf, "SKB_NOT_DROPPED_YET", 0);
  btf__add_enum_value(btf, "SKB_DROP_REASON_NOT_SPECIFIED", 2);
  btf__add_enum_value(btf, "SKB_DROP_REASON_NO_SOCKET", 3);

  int endpoint = added(btf__add_struct(btf, "endpoint", 8), "struct endpoint");
  btf__add_field(btf, "addr", uint_t, 0, 0);
  btf__add_field(btf, "port", ushort_t, 32, 0);
  int endpoint_ptr = added(btf__add_ptr(btf, endpoint), "struct endpoint *");
  int name = added(btf__add_array(btf, int_t, char_t, 8), "char[8]");

  int bool_t = added(btf__add_int(btf, "_Bool", 1, BTF_INT_BOOL), "_Bool");
  added(btf__add_struct(btf, "bits", 8), "struct bits");
  btf__add_field(btf, "kind", uint_t, 0, 3);
  btf__add_field(btf, "credit", int_t, 3, 12);
  btf__add_field(btf, "on", bool_t, 15, 1);
  btf__add_field(btf, "st", state, 16, 2);

  added(btf__add_struct(btf, "conn", 48), "struct conn");
  btf__add_field(btf, "id", int_t, 0, 0);
  btf__add_field(btf, "flags", uint_t, 32, 0);
  btf__add_field(btf, "name", name, 64, 0);
  btf__add_field(btf, "local", endpoint, 128, 0);
  btf__add_field(btf, "state", state, 192, 0);
  btf__add_field(btf, "peer", endpoint_ptr, 256, 0);
  btf__add_field(btf, "delta", long_t, 320, 0);
  auto view = host::BtfView::copyOf(btf);
  btf__free(btf);
  if (!view) throw std::runtime_error(view.error().message);
  return view.take();
}

}  // namespace

FakeHost::FakeHost()
    : btf_(smallKernelBtf()),
      // No directory of module BTF: only the small kernel's types, its ids trusted.
      kernel_types_(std::make_unique<runtime::KernelTypes>("/nonexistent/btf", btf_.get(), true)) {
  setenv("TZ", "UTC", 1);
  tzset();
  beginSession();
}

void FakeHost::beginSession() {
  context_.reset();
  dumper_ = std::make_unique<runtime::TypeDumper>(kernel_types_.get());
  context_ = std::make_unique<PrintContext>(PrintContext{*this, *dumper_, *this, kBootOffsetNs});
}

FakeHost::~FakeHost() {
  // The dumper and the type finder read the BTF: they go first.
  context_.reset();
  dumper_.reset();
  kernel_types_.reset();
}

uint32_t FakeHost::typeId(const std::string& spelling) const {
  return runtime::findTypeIn(btf_.get(), spelling);
}

std::string FakeHost::kernel(uint64_t address) {
  auto it = kernel_symbols.find(address);
  return it == kernel_symbols.end() ? fmt::format("0x{:x}", address) : it->second;
}

std::string FakeHost::user(uint32_t, uint64_t address) {
  auto it = user_symbols.find(address);
  return it == user_symbols.end() ? fmt::format("0x{:x}", address) : it->second;
}

std::string FakeHost::text(const std::string& path) {
  auto it = files.find(path);
  return it == files.end() ? fmt::format("<cannot read {}: No such file or directory>", path) : it->second;
}

}  // namespace kq::engine::testing
