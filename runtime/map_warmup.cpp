#include "runtime/map_warmup.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sched.h>

#include <thread>

namespace kq::runtime {

void warmMapAllocators(const std::vector<WarmedMap>& maps) {
  if (maps.empty()) return;
  std::thread warm([&] {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    int cpus = libbpf_num_possible_cpus();
    if (cpus <= 0) return;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &allowed)) continue;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      if (sched_setaffinity(0, sizeof one, &one) != 0) continue;
      for (const WarmedMap& m : maps) {
        // A key no program can have made yet (none is attached): all ones.
        std::vector<uint8_t> key(m.key_size, 0xff);
        size_t value_bytes = m.per_cpu ? ((m.value_size + 7) / 8 * 8) * static_cast<size_t>(cpus) : m.value_size;
        std::vector<uint8_t> value(value_bytes, 0);
        if (bpf_map_update_elem(m.fd, key.data(), value.data(), BPF_NOEXIST) == 0) {
          bpf_map_delete_elem(m.fd, key.data());
        }
      }
    }
  });
  warm.join();
}

}  // namespace kq::runtime
