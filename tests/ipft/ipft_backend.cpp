// Runs an ipftrace2 extension the way ipftrace2 does, without ipftrace2: links a backend
// object (backend.bpf.c) with the extension through libbpf's static linker, loads and
// attaches the result, runs a workload, and prints each event's `data` decoded through the
// extension's BTF description exactly as ipftrace2's script_bpf.c decodes it:
//   ( len: 242 mark: 0xdeadbeef )
// then `marked: N dropped: M` (packets with the mark, and those module() refused).
// Usage: ipft_backend BACKEND.o EXTENSION.o LINKED.o COMMAND...
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Event {
  uint64_t packet_id;
  uint32_t backend_len;
  uint32_t pad;
  uint8_t data[64];
};

/// How ipftrace2 prints one member (script_bpf.c: init_decoder and its printers).
struct Printer {
  std::string name;
  uint32_t offset = 0;
  const btf_type* type = nullptr;  // resolved
  enum { Default, Hex, Enum, EnumFlags } format = Default;
  const btf_type* enum_type = nullptr;
};

const btf* g_btf = nullptr;
std::vector<Printer> g_printers;

bool describe(const btf* b) {
  int var = btf__find_by_name_kind(b, "__ipft_event_struct", BTF_KIND_VAR);
  if (var < 0) return fprintf(stderr, "no __ipft_event_struct\n"), false;
  uint32_t struct_id = btf__type_by_id(b, var)->type;
  const btf_type* st = btf__type_by_id(b, struct_id);
  if (!btf_is_struct(st)) return fprintf(stderr, "event struct is not a struct\n"), false;
  for (uint16_t i = 0; i < btf_vlen(st); ++i) {
    const btf_member* m = btf_members(st) + i;
    Printer p;
    p.name = btf__name_by_offset(b, m->name_off);
    if (m->offset % 8) return fprintf(stderr, "member %s not byte aligned\n", p.name.c_str()), false;
    p.offset = m->offset / 8;
    p.type = btf__type_by_id(b, btf__resolve_type(b, m->type));
    g_printers.push_back(p);
  }
  // ipftrace2 takes every decl tag that starts with `ipft:fmt:`, by its component index.
  for (uint32_t id = 1; id < btf__type_cnt(b); ++id) {
    const btf_type* t = btf__type_by_id(b, id);
    if (!btf_is_decl_tag(t)) continue;
    std::string tag = btf__name_by_offset(b, t->name_off);
    if (tag.rfind("ipft:fmt:", 0) != 0) continue;
    int idx = btf_decl_tag(t)->component_idx;
    if (idx < 0 || idx >= static_cast<int>(g_printers.size())) {
      return fprintf(stderr, "tag %s on no member\n", tag.c_str()), false;
    }
    Printer& p = g_printers[idx];
    std::string rest = tag.substr(9);
    std::string ref;
    if (rest == "hex") {
      p.format = Printer::Hex;
    } else if (rest.rfind("enum_flags:", 0) == 0) {
      p.format = Printer::EnumFlags;
      ref = rest.substr(11);
    } else if (rest.rfind("enum:", 0) == 0) {
      p.format = Printer::Enum;
      ref = rest.substr(5);
    } else {
      return fprintf(stderr, "unknown format %s\n", tag.c_str()), false;
    }
    if (!ref.empty()) {
      int ref_id = btf__find_by_name_kind(b, ref.c_str(), BTF_KIND_VAR);
      if (ref_id < 0) return fprintf(stderr, "no reference %s\n", ref.c_str()), false;
      const btf_type* e = btf__type_by_id(b, btf__type_by_id(b, ref_id)->type);
      if (btf_kind(e) != BTF_KIND_ENUM) return fprintf(stderr, "%s is no enum\n", ref.c_str()), false;
      p.enum_type = e;
    }
  }
  for (const Printer& p : g_printers) {
    bool ok = btf_is_int(p.type) || (btf_is_ptr(p.type) && p.format == Printer::Default);
    if (!ok) return fprintf(stderr, "cannot print member %s\n", p.name.c_str()), false;
  }
  return true;
}

uint64_t readUnsigned(const uint8_t* at, uint32_t bits) {
  switch (bits) {
    case 8: return *at;
    case 16: { uint16_t v; memcpy(&v, at, 2); return v; }
    case 32: { uint32_t v; memcpy(&v, at, 4); return v; }
    default: { uint64_t v; memcpy(&v, at, 8); return v; }
  }
}

std::string print(const Printer& p, const uint8_t* data) {
  char text[64];
  if (btf_is_ptr(p.type)) {
    void* v;
    memcpy(&v, data + p.offset, 8);
    snprintf(text, sizeof text, "%p", v);
    return text;
  }
  uint32_t bits = btf_int_bits(p.type);
  uint8_t encoding = btf_int_encoding(p.type);
  uint64_t u = readUnsigned(data + p.offset, bits);
  if (p.format == Printer::Hex) {
    snprintf(text, sizeof text, "0x%" PRIx64, u);
    return text;
  }
  if (p.format == Printer::Enum) {
    for (uint16_t i = 0; i < btf_vlen(p.enum_type); ++i) {
      const struct btf_enum* e = btf_enum(p.enum_type) + i;
      // `*target == (uintN_t)member_values[i]`, as ipftrace2 compares.
      uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
      if (u == (static_cast<uint64_t>(static_cast<int64_t>(e->val)) & mask)) {
        return btf__name_by_offset(g_btf, e->name_off);
      }
    }
    return "<none>";
  }
  if (encoding & BTF_INT_BOOL) return u ? "true" : "false";
  if (bits == 8 && (encoding & BTF_INT_CHAR)) return std::string(1, static_cast<char>(u));
  if (encoding & BTF_INT_SIGNED) {
    int64_t s = bits == 8 ? static_cast<int8_t>(u) : bits == 16 ? static_cast<int16_t>(u)
              : bits == 32 ? static_cast<int32_t>(u) : static_cast<int64_t>(u);
    snprintf(text, sizeof text, "%" PRId64, s);
  } else {
    snprintf(text, sizeof text, "%" PRIu64, u);
  }
  return text;
}

int onEvent(void*, void* raw, size_t size) {
  if (size < sizeof(Event)) return 0;
  const auto* e = static_cast<const Event*>(raw);
  std::string line = "backend_len: " + std::to_string(e->backend_len) + " (";
  for (const Printer& p : g_printers) line += " " + p.name + ": " + print(p, e->data);
  printf("%s )\n", line.c_str());
  return 0;
}

int fail(const char* what) {
  fprintf(stderr, "ipft_backend: %s failed: %s\n", what, strerror(errno));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: ipft_backend BACKEND.o EXTENSION.o LINKED.o COMMAND...\n");
    return 2;
  }
  // As ipftrace2's do_link: the backend, then the extension.
  bpf_linker_opts lopts = {};
  lopts.sz = sizeof(lopts);
  bpf_linker* linker = bpf_linker__new(argv[3], &lopts);
  if (!linker) return fail("bpf_linker__new");
  bpf_linker_file_opts fopts = {};
  fopts.sz = sizeof(fopts);
  if (bpf_linker__add_file(linker, argv[1], &fopts)) return fail("adding the backend");
  if (bpf_linker__add_file(linker, argv[2], &fopts)) return fail("adding the extension");
  if (bpf_linker__finalize(linker)) return fail("bpf_linker__finalize");
  bpf_linker__free(linker);

  bpf_object* obj = bpf_object__open_file(argv[3], nullptr);
  if (!obj) return fail("opening the linked object");
  g_btf = bpf_object__btf(obj);
  if (!g_btf || !describe(g_btf)) return 1;
  if (bpf_object__load(obj)) return fail("loading");
  bpf_program* prog = bpf_object__find_program_by_name(obj, "xmit");
  if (!prog || !bpf_program__attach(prog)) return fail("attaching");
  ring_buffer* rb = ring_buffer__new(bpf_object__find_map_fd_by_name(obj, "events"), onEvent,
                                     nullptr, nullptr);
  if (!rb) return fail("ring_buffer__new");

  std::string command;
  for (int i = 4; i < argc; ++i) command += std::string(i > 4 ? " " : "") + argv[i];
  if (system(command.c_str()) != 0) return fail("the workload");
  ring_buffer__poll(rb, 200);
  ring_buffer__consume(rb);

  int counts = bpf_object__find_map_fd_by_name(obj, "counts");
  uint64_t marked = 0, dropped = 0;
  uint32_t key = 0;
  bpf_map_lookup_elem(counts, &key, &marked);
  key = 1;
  bpf_map_lookup_elem(counts, &key, &dropped);
  printf("marked: %" PRIu64 " dropped: %" PRIu64 "\n", marked, dropped);
  ring_buffer__free(rb);
  bpf_object__close(obj);
  return 0;
}
