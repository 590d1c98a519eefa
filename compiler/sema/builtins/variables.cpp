// Builtin variables about the current task, CPU and time.
#include "compiler/sema/builtins/builtins.h"

namespace kq::sema {

void addProcessVariables(std::vector<BuiltinVariable>& out) {
  auto u32 = [](TypeTable& t) { return t.u32(); };
  auto u64 = [](TypeTable& t) { return t.u64(); };
  auto text = [](TypeTable& t) { return t.string(); };
  out.insert(out.end(), {
      {"pid", u32, Needs::Nothing, "process id (the thread group id)"},
      {"tid", u32, Needs::Nothing, "thread id"},
      {"comm", text, Needs::Nothing, "the task's command name, up to 16 bytes"},
      {"cpu", u32, Needs::Nothing, "the CPU the event happened on"},
      {"time", u64, Needs::Nothing, "nanoseconds since boot"},
      {"uid", u32, Needs::Nothing, "user id"},
      {"gid", u32, Needs::Nothing, "group id"},
      {"cgroup", u64, Needs::Nothing, "cgroup v2 id"},
      {"netns", u32, Needs::Nothing, "network namespace inode number"},
      {"func", text, Needs::Function, "the traced function's name (useful with globs)"},
      {"probe", text, Needs::Nothing, "the probe's full name"},
      {"kstack", text, Needs::Nothing, "the kernel stack"},
      {"ustack", text, Needs::Nothing, "the user stack"},
      {"duration", u64, Needs::Exit, "nanoseconds from entry to return of this call"},
  });
}

}  // namespace kq::sema
