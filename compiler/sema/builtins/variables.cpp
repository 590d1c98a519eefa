// Builtin variables about the current task, CPU and time. Most are `Computed` from a
// recipe (a helper's result, or members of the current task): adding one such is adding a
// line here (docs/hacking.md shows `ppid`).
#include "compiler/sema/builtins/builtins.h"

namespace kq::sema {
namespace {

// BPF helper ids (include/uapi/linux/bpf.h).
constexpr int kKtimeGetNs = 5;
constexpr int kGetSmpProcessorId = 8;
constexpr int kGetCurrentPidTgid = 14;
constexpr int kGetCurrentUidGid = 15;
constexpr int kGetCurrentCgroupId = 80;

ValueRecipe helper(int id, uint8_t shift = 0, uint64_t mask = ~0ull) { return {id, shift, mask, {}}; }
ValueRecipe task(std::vector<std::string> path) { return {0, 0, ~0ull, std::move(path)}; }

/// `struct task_struct *`, from the kernel's BTF.
const Type* taskPointer(TypeTable& types, const btf::Btf& btf) {
  std::optional<btf::BtfType> task = btf.findStruct("task_struct");
  return task ? types.pointerTo(types.fromBtf(*task)) : types.error();
}

}  // namespace

void addProcessVariables(std::vector<BuiltinVariable>& out) {
  using plan::FieldKind;
  auto u32 = [](TypeTable& t, const btf::Btf&) { return t.u32(); };
  auto u64 = [](TypeTable& t, const btf::Btf&) { return t.u64(); };
  auto text = [](TypeTable& t, const btf::Btf&) { return t.string(); };
  constexpr uint32_t kStackBytes = 8 * 32;  // 32 return addresses
  // Enough for the tracing machinery's frames above the traced function's (a tp_btf
  // program's and its trampoline's, perf's), the function's own and its caller's.
  constexpr uint32_t kCallerBytes = 8 * 12;
  constexpr uint64_t kLow32 = 0xffffffff;
  const auto computed = BuiltinVar::Computed;
  out.insert(out.end(), {
      {"pid", computed, u32, Needs::Nothing, "process id (the thread group id)", std::nullopt,
       helper(kGetCurrentPidTgid, 32)},
      {"tid", computed, u32, Needs::Nothing, "thread id", std::nullopt,
       helper(kGetCurrentPidTgid, 0, kLow32)},
      {"ppid", computed, u32, Needs::Nothing, "the parent's process id", std::nullopt,
       task({"real_parent", "tgid"})},
      {"comm", BuiltinVar::Comm, text, Needs::Nothing, "the task's command name, up to 16 bytes",
       FieldShape{FieldKind::String, 16}},
      {"cpu", computed, u32, Needs::Nothing, "the CPU the event happened on", std::nullopt,
       helper(kGetSmpProcessorId)},
      {"time", computed, u64, Needs::Nothing, "nanoseconds since boot", std::nullopt,
       helper(kKtimeGetNs)},
      {"elapsed", BuiltinVar::Elapsed, u64, Needs::Nothing,
       "nanoseconds since the session started (its programs loaded), as bpftrace's `elapsed`"},
      {"uid", computed, u32, Needs::Nothing, "user id", std::nullopt,
       helper(kGetCurrentUidGid, 0, kLow32)},
      {"gid", computed, u32, Needs::Nothing, "group id", std::nullopt, helper(kGetCurrentUidGid, 32)},
      {"cgroup", computed, u64, Needs::Nothing, "cgroup v2 id", std::nullopt,
       helper(kGetCurrentCgroupId)},
      {"netns", computed, u32, Needs::Nothing, "network namespace inode number", std::nullopt,
       task({"nsproxy", "net_ns", "ns", "inum"})},
      {"func", BuiltinVar::Func, text, Needs::Function,
       "the traced function's name (useful with globs)"},
      {"probe", BuiltinVar::Probe, text, Needs::Nothing, "the probe's full name"},
      {"kstack", BuiltinVar::Kstack, text, Needs::Nothing, "the kernel stack",
       FieldShape{FieldKind::KernelStack, kStackBytes}},
      {"caller", BuiltinVar::Caller, text, Needs::Nothing,
       "the kernel function that called the traced one (at a tracepoint, the one that hit it)",
       FieldShape{FieldKind::Caller, 8 + kCallerBytes}},
      {"ustack", BuiltinVar::Ustack, text, Needs::Nothing, "the user stack",
       FieldShape{FieldKind::UserStack, kStackBytes}},
      {"duration", BuiltinVar::Duration, u64, Needs::Exit,
       "nanoseconds from entry to return of this call"},
      {"task", BuiltinVar::Task, taskPointer, Needs::Nothing,
       "the current task, a `struct task_struct *` (bpftrace's `curtask`)"},
  });
}

}  // namespace kq::sema
