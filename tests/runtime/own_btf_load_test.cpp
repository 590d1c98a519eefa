// Loading objects compiled against the running kernel's BTF without libbpf's parse of it
// (runtime/own_btf_load.h), on the running kernel (as root with its BTF; skipped otherwise):
// - each CO-RE relocation kind kq emits (member offsets through pointers and anonymous
//   members, bitfields, enumerators, record sizes) changes nothing against the kernel kq
//   compiled for: libbpf's relocated instructions are the ones the object already had;
// - such an object's tp_btf programs load and attach with the attach ids kq gives, and
//   libbpf never loads vmlinux BTF.
#include "runtime/own_btf_load.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cstdarg>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/lower/lower.h"
#include "compiler/parse/parse.h"
#include "compiler/sema/sema.h"
#include "driver/environment.h"
#include "runtime/loader.h"

namespace kq::runtime {
namespace {

class OwnBtfLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "loading BPF programs needs root";
    auto env = driver::loadKernelEnvironment("");
    if (!env) GTEST_SKIP() << "no BTF of the running kernel: " << env.error().message;
    env_ = env.take();
  }

  /// `text` compiled against the running kernel, or nullopt (with a test failure).
  std::optional<lower::CompiledProgram> compile(const std::string& text) {
    Diagnostics diags;
    SourceManager sources;
    FileId file = sources.add("<input>", text);
    auto script = parse::parseScript(sources, file, diags);
    std::optional<sema::CheckedProgram> checked;
    if (script) checked = sema::analyze(*script, sources, *env_.btf, *env_.kernel, diags);
    std::string error;
    std::optional<lower::CompiledProgram> compiled;
    if (checked) compiled = lower::lowerProgram(*checked, *env_.btf, sources, file, {}, diags, &error);
    EXPECT_TRUE(compiled) << text << ": " << error << (diags.hasErrors() ? " (does not check)" : "");
    return compiled;
  }

  /// The instructions of `elf`'s tp_btf programs once libbpf has made them ready to load
  /// (relocated), by program; a map's descriptor in an instruction reads as 0.
  std::map<std::string, std::vector<bpf_insn>> loadedInstructions(const std::vector<char>& elf) {
    std::map<std::string, std::vector<bpf_insn>> out;
    ownTracingSections();
    bpf_object* object = bpf_object__open_mem(elf.data(), elf.size(), nullptr);
    if (!object) {
      ADD_FAILURE() << "libbpf cannot open the object: " << std::strerror(errno);
      return out;
    }
    auto attach_id = driver::vmlinuxAttachIds(*env_.btf);
    AttachIds ids;
    bpf_program* prog;
    bpf_object__for_each_program(prog, object) {
      bool tp_btf = std::strncmp(bpf_program__section_name(prog), "tp_btf/", 7) == 0;
      bpf_program__set_autoload(prog, tp_btf);
      if (tp_btf) ids.give(prog, attach_id(plan::Attach::TpBtf, bpf_program__section_name(prog) + 7));
    }
    if (int err = bpf_object__load(object)) {
      ADD_FAILURE() << "the kernel did not load the object: " << std::strerror(-err);
    } else {
      bpf_object__for_each_program(prog, object) {
        if (!bpf_program__autoload(prog)) continue;
        std::vector<bpf_insn> insns(bpf_program__insns(prog), bpf_program__insns(prog) + bpf_program__insn_cnt(prog));
        for (size_t i = 0; i + 1 < insns.size(); ++i) {
          bool map_load = insns[i].code == (BPF_LD | BPF_IMM | BPF_DW) &&
                          (insns[i].src_reg == BPF_PSEUDO_MAP_FD || insns[i].src_reg == BPF_PSEUDO_MAP_VALUE);
          if (map_load) insns[i].imm = 0;
        }
        out[bpf_program__name(prog)] = std::move(insns);
      }
    }
    bpf_object__close(object);
    return out;
  }

  driver::KernelEnvironment env_;
};

bool sameInstruction(const bpf_insn& a, const bpf_insn& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST_F(OwnBtfLoadTest, RelocationsChangeNothingAgainstTheKernelCompiledFor) {
  const char* queries[] = {
      // Bitfields (byte offset, size and shifts), a member through two pointers.
      "trace tracepoint:net:net_dev_xmit select skb->pkt_type, skb->len, skb->dev->name",
      // An enumerator, and a record's size (a typed dump reads as much as the kernel has).
      "trace tracepoint:skb:kfree_skb where reason == SKB_DROP_REASON_NO_SOCKET select skb",
      // Members of embedded structs and of anonymous unions; builtins' task_struct paths.
      "trace tracepoint:sched:sched_switch select prev->se.vruntime, next->pid, ppid, netns, cgroup",
      // Packet headers the stdlib reads.
      "use net\ntrace tracepoint:net:netif_receive_skb select saddr, daddr, ifname, mark",
  };
  for (const char* text : queries) {
    std::optional<lower::CompiledProgram> compiled = compile(text);
    if (!compiled) continue;
    const std::vector<char>& elf = compiled->object.elf;
    std::vector<char> without = withoutCoreRelocations(elf);
    EXPECT_NE(without, elf) << text << ": the object has no CO-RE relocations to leave out";
    auto relocated = loadedInstructions(elf);
    auto unrelocated = loadedInstructions(without);
    ASSERT_FALSE(relocated.empty()) << text;
    ASSERT_EQ(relocated.size(), unrelocated.size()) << text;
    for (const auto& [program, insns] : relocated) {
      const std::vector<bpf_insn>& other = unrelocated[program];
      ASSERT_EQ(insns.size(), other.size()) << text << ": " << program;
      for (size_t i = 0; i < insns.size(); ++i) {
        EXPECT_TRUE(sameInstruction(insns[i], other[i]))
            << text << ": " << program << " instruction " << i << " was relocated to another value";
      }
    }
  }
}

std::string* g_said = nullptr;

int keepMessage(enum libbpf_print_level, const char* format, va_list args) {
  char line[1024];
  std::vsnprintf(line, sizeof line, format, args);
  if (g_said) *g_said += line;
  return 0;
}

/// What libbpf says (at every level) while loading `compiled` with `options`; whether it loaded.
bool loadSaying(const lower::CompiledProgram& compiled, const LoadOptions& options, std::string& said) {
  g_said = &said;
  libbpf_print_fn_t before = libbpf_set_print(keepMessage);
  LoadResult loaded = loadAndAttach(compiled.object.elf, compiled.plan, options);
  libbpf_set_print(before);
  g_said = nullptr;
  EXPECT_TRUE(loaded.object) << (loaded.failure ? loaded.failure->message : "") << "\n" << said;
  return loaded.object && loaded.object->attachedLinks() > 0;
}

TEST_F(OwnBtfLoadTest, TracingProgramsLoadWithKqsAttachIdsAndNoVmlinuxParse) {
  std::optional<lower::CompiledProgram> compiled =
      compile("trace tracepoint:sched:sched_process_exec select comm, ppid");
  ASSERT_TRUE(compiled);
  bool tp_btf = false;
  for (const plan::PlannedProgram& p : compiled->plan.programs) tp_btf |= p.attach == plan::Attach::TpBtf;
  if (!tp_btf) GTEST_SKIP() << "this kernel's plan has no tp_btf program";

  LoadOptions options;
  options.vmlinux = env_.btf->vmlinux().btf;
  options.vmlinux_attach_id = driver::vmlinuxAttachIds(*env_.btf);
  std::string said;
  EXPECT_TRUE(loadSaying(*compiled, options, said));
  EXPECT_EQ(said.find("loading kernel BTF"), std::string::npos) << said;

  // Without the ids (an object for another kernel), libbpf parses vmlinux BTF as before.
  options.vmlinux_attach_id = nullptr;
  said.clear();
  EXPECT_TRUE(loadSaying(*compiled, options, said));
  EXPECT_NE(said.find("loading kernel BTF"), std::string::npos) << said;
}

}  // namespace
}  // namespace kq::runtime
