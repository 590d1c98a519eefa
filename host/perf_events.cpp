#include "host/perf_events.h"

#include <linux/perf_event.h>

namespace kq::host {

const std::vector<PerfEventKind>& perfEventKinds() {
  static const std::vector<PerfEventKind> kinds = {
      {"cpu-clock", "cpu", false, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 1'000'000,
       "nanoseconds of CPU time, by the CPU's clock"},
      {"task-clock", "", false, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 1'000'000,
       "nanoseconds of CPU time, by the running task's clock"},
      {"page-faults", "faults", false, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 100,
       "page faults, minor and major"},
      {"context-switches", "cs", false, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1'000,
       "context switches"},
      {"cpu-migrations", "", false, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 1,
       "tasks moved to another CPU"},
      {"minor-faults", "", false, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, 100,
       "page faults served without I/O"},
      {"major-faults", "", false, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1,
       "page faults that waited for I/O"},
      {"alignment-faults", "", false, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, 1,
       "unaligned accesses the kernel fixed up"},
      {"emulation-faults", "", false, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, 1,
       "instructions the kernel emulated"},
      {"dummy", "", false, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 1, "nothing (a placeholder event)"},
      {"cpu-cycles", "cycles", true, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1'000'000, "CPU cycles"},
      {"instructions", "", true, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1'000'000,
       "instructions retired"},
      {"cache-references", "", true, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, 1'000'000,
       "last-level cache accesses"},
      {"cache-misses", "", true, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 1'000'000,
       "last-level cache misses"},
      {"branch-instructions", "branches", true, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
       100'000, "branch instructions retired"},
      {"branch-misses", "", true, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 100'000,
       "mispredicted branches"},
      {"bus-cycles", "", true, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, 100'000, "bus cycles"},
      {"frontend-stalls", "", true, PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, 1'000'000,
       "cycles the front end stalled"},
      {"backend-stalls", "", true, PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, 1'000'000,
       "cycles the back end stalled"},
      {"ref-cycles", "", true, PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, 1'000'000,
       "reference cycles (unscaled by frequency changes)"},
  };
  return kinds;
}

const PerfEventKind* findPerfEvent(bool hardware, std::string_view name) {
  for (const PerfEventKind& k : perfEventKinds()) {
    if (k.hardware == hardware && (k.name == name || (!k.alias.empty() && k.alias == name))) return &k;
  }
  return nullptr;
}

}  // namespace kq::host
