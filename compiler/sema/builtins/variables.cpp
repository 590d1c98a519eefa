// Builtin variables about the current task, CPU and time.
#include "compiler/sema/builtins/builtins.h"

namespace kq::sema {

void addProcessVariables(std::vector<BuiltinVariable>& out) {
  using runtime::FieldKind;
  auto u32 = [](TypeTable& t) { return t.u32(); };
  auto u64 = [](TypeTable& t) { return t.u64(); };
  auto text = [](TypeTable& t) { return t.string(); };
  constexpr uint32_t kStackBytes = 8 * 32;  // 32 return addresses
  out.insert(out.end(), {
      {"pid", BuiltinVar::Pid, u32, Needs::Nothing, "process id (the thread group id)"},
      {"tid", BuiltinVar::Tid, u32, Needs::Nothing, "thread id"},
      {"comm", BuiltinVar::Comm, text, Needs::Nothing, "the task's command name, up to 16 bytes",
       FieldShape{FieldKind::String, 16}},
      {"cpu", BuiltinVar::Cpu, u32, Needs::Nothing, "the CPU the event happened on"},
      {"time", BuiltinVar::Time, u64, Needs::Nothing, "nanoseconds since boot"},
      {"uid", BuiltinVar::Uid, u32, Needs::Nothing, "user id"},
      {"gid", BuiltinVar::Gid, u32, Needs::Nothing, "group id"},
      {"cgroup", BuiltinVar::Cgroup, u64, Needs::Nothing, "cgroup v2 id"},
      {"netns", BuiltinVar::Netns, u32, Needs::Nothing, "network namespace inode number"},
      {"func", BuiltinVar::Func, text, Needs::Function,
       "the traced function's name (useful with globs)"},
      {"probe", BuiltinVar::Probe, text, Needs::Nothing, "the probe's full name"},
      {"kstack", BuiltinVar::Kstack, text, Needs::Nothing, "the kernel stack",
       FieldShape{FieldKind::KernelStack, kStackBytes}},
      {"ustack", BuiltinVar::Ustack, text, Needs::Nothing, "the user stack",
       FieldShape{FieldKind::UserStack, kStackBytes}},
      {"duration", BuiltinVar::Duration, u64, Needs::Exit,
       "nanoseconds from entry to return of this call"},
  });
}

}  // namespace kq::sema
