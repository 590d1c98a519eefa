#include "runtime/own_btf_load.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "runtime/object_file.h"

namespace kq::runtime {
namespace {

// The .BTF.ext header (linux/btf.h has no struct for it): magic, version, flags and the
// header's length, then offset and length of func_info, line_info and CO-RE relocations.
constexpr size_t kCoreReloLenAt = 28;
constexpr size_t kHeaderWithCoreRelos = 32;
constexpr uint16_t kBtfMagic = 0xeB9F;

struct Section {
  const char* prefix;
  bpf_attach_type attach;
};
constexpr Section kSections[] = {
    {"tp_btf/", BPF_TRACE_RAW_TP},
    {"fentry/", BPF_TRACE_FENTRY},
    {"fexit/", BPF_TRACE_FEXIT},
};

std::once_flag registered;
std::mutex ids_mutex;
std::unordered_map<const bpf_program*, uint32_t> given_ids;

uint32_t givenId(const bpf_program* prog) {
  std::lock_guard<std::mutex> lock(ids_mutex);
  auto it = given_ids.find(prog);
  return it == given_ids.end() ? 0 : it->second;
}

/// Just before the kernel load: the program becomes the tracing program it is, with the id
/// given to it (or found by bpf_program__set_attach_target, already in `opts`).
int prepareLoad(bpf_program* prog, bpf_prog_load_opts* opts, long cookie) {
  auto attach = static_cast<bpf_attach_type>(cookie);
  if (int err = bpf_program__set_type(prog, BPF_PROG_TYPE_TRACING)) return err;
  if (int err = bpf_program__set_expected_attach_type(prog, attach)) return err;
  opts->expected_attach_type = attach;
  if (opts->attach_btf_id == 0) {
    uint32_t id = givenId(prog);
    if (id == 0) return -ESRCH;  // what libbpf says of a target its BTF lacks
    opts->attach_btf_id = id;
    opts->attach_btf_obj_fd = 0;
  }
  return 0;
}

int attachTrace(const bpf_program* prog, long /*cookie*/, bpf_link** link) {
  *link = bpf_program__attach_trace(prog);
  return *link ? 0 : -errno;
}

}  // namespace

std::vector<char> withoutCoreRelocations(const std::vector<char>& elf) {
  std::vector<char> out = elf;
  std::string error;
  std::optional<SectionSpan> ext = findSection(elf, ".BTF.ext", &error);
  if (!ext || ext->size < kHeaderWithCoreRelos) return out;
  uint16_t magic = 0;
  uint32_t header_len = 0;
  std::memcpy(&magic, elf.data() + ext->offset, sizeof magic);
  std::memcpy(&header_len, elf.data() + ext->offset + 4, sizeof header_len);
  if (magic != kBtfMagic || header_len < kHeaderWithCoreRelos) return out;
  std::memset(out.data() + ext->offset + kCoreReloLenAt, 0, sizeof(uint32_t));
  return out;
}

void ownTracingSections() {
  std::call_once(registered, [] {
    for (const Section& s : kSections) {
      LIBBPF_OPTS(libbpf_prog_handler_opts, handler, .cookie = s.attach,
                  .prog_prepare_load_fn = prepareLoad, .prog_attach_fn = attachTrace);
      std::string prefix = std::string(s.prefix, std::strlen(s.prefix) - 1) + "+";
      libbpf_register_prog_handler(prefix.c_str(), BPF_PROG_TYPE_RAW_TRACEPOINT, s.attach, &handler);
    }
  });
}

bool ownedTracingProgram(const bpf_program* prog) {
  // libbpf's own handlers open these sections as tracing programs.
  if (bpf_program__type(prog) != BPF_PROG_TYPE_RAW_TRACEPOINT) return false;
  const char* section = bpf_program__section_name(prog);
  for (const Section& s : kSections) {
    if (std::strncmp(section, s.prefix, std::strlen(s.prefix)) == 0) return true;
  }
  return false;
}

AttachIds::~AttachIds() {
  std::lock_guard<std::mutex> lock(ids_mutex);
  for (const bpf_program* prog : given_) given_ids.erase(prog);
}

void AttachIds::give(const bpf_program* prog, uint32_t vmlinux_id) {
  std::lock_guard<std::mutex> lock(ids_mutex);
  given_ids[prog] = vmlinux_id;
  given_.push_back(prog);
}

}  // namespace kq::runtime
