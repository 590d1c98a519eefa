// Loading an object compiled against the running kernel's BTF without libbpf parsing that
// BTF again (8 ms of a 30 ms start, in a REPL job's fresh process).
//
// libbpf parses vmlinux BTF at load for two things: CO-RE relocations, and the attach id
// of each tp_btf, fentry and fexit program. kq's compiler lays every struct out as the BTF
// it checked against says (compiler/lower/core_types.cpp), so against that same kernel the
// relocations change nothing and can be left out; and kq has parsed the BTF already, so it
// can say each attach id itself. An object built for another kernel (`kq build`, `--btf`)
// keeps its relocations and lets libbpf find its ids.
#pragma once

#include <cstdint>
#include <vector>

struct bpf_program;

namespace kq::runtime {

/// `elf` with its CO-RE relocations left out (its .BTF.ext header says there are none); as
/// it was if it has none.
std::vector<char> withoutCoreRelocations(const std::vector<char>& elf);

/// From now on in this process, libbpf opens tp_btf/, fentry/ and fexit/ programs through
/// kq's section handler: typed as raw tracepoints until their load, so that opening an
/// object never makes libbpf parse vmlinux BTF for them. Each then loads as the tracing
/// program it is, with the attach id an AttachIds gave it or, for one given none, what
/// bpf_program__set_attach_target found before the load. Idempotent.
void ownTracingSections();

/// Whether `prog` is a program of those sections, opened through kq's handler.
bool ownedTracingProgram(const bpf_program* prog);

/// The attach ids (in vmlinux BTF) that programs of one object load with, until destroyed.
class AttachIds {
 public:
  AttachIds() = default;
  ~AttachIds();
  AttachIds(const AttachIds&) = delete;
  AttachIds& operator=(const AttachIds&) = delete;

  void give(const bpf_program* prog, uint32_t vmlinux_id);

 private:
  std::vector<const bpf_program*> given_;
};

}  // namespace kq::runtime
