// What the compiler needs to know about the kernel besides its types: which tracepoints
// exist and their formats, which functions ftrace can attach to, whether kprobes exist.
// An interface, so tests use an in-memory kernel and `--btf` uses none at all.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/diag/result.h"
#include "host/bpf_programs.h"

namespace kq::host {

/// A three-valued answer: facts about a kernel are sometimes unreadable (EPERM), and
/// "cannot tell" must not read as "no".
enum class Known { Yes, No, Unknown };

/// One field of a classic tracepoint's record, from its `format` file.
struct TracepointField {
  std::string type;  // as tracefs writes it: `const char *`, `unsigned int`, `__data_loc char[]`
  std::string name;
  uint32_t offset = 0;
  uint32_t size = 0;
  bool is_signed = false;
};

struct TracepointFormat {
  uint32_t id = 0;
  /// The event's own fields, without the `common_*` header.
  std::vector<TracepointField> fields;
};

/// Parses a tracefs `format` file.
Result<TracepointFormat> parseTracepointFormat(std::string_view text);

/// A network namespace `ip netns` names.
struct NamedNetns {
  std::string name;
  uint64_t inode = 0;
};

class KernelInfo {
 public:
  virtual ~KernelInfo() = default;

  /// Tracepoint categories (`net`, `sched`, ...), sorted; an error says why they are unknown.
  virtual Result<std::vector<std::string>> tracepointCategories() = 0;
  /// Events of one category, sorted.
  virtual Result<std::vector<std::string>> tracepointEvents(const std::string& category) = 0;
  virtual Result<TracepointFormat> tracepointFormat(const std::string& category,
                                                    const std::string& event) = 0;

  /// Whether ftrace lists `function` in available_filter_functions (fentry and kprobes
  /// both need it). Unknown when the list cannot be read; filterFunctionsProblem() says why.
  virtual Known inFilterFunctions(const std::string& function) = 0;
  virtual std::string filterFunctionsProblem() = 0;
  /// Whether `function` is a text symbol in /proc/kallsyms (not inlined away).
  virtual Known inKallsyms(const std::string& function) = 0;
  /// Whether the kernel can create kprobes (the perf `kprobe` event source).
  virtual Known hasKprobes() = 0;

  /// The address of the kernel symbol `name` (a function or data; the first listed, when
  /// several share the name), from /proc/kallsyms: nothing when there is no such symbol, an
  /// error when kallsyms cannot be read or hides addresses (kptr_restrict).
  virtual Result<std::optional<uint64_t>> symbolAddress(const std::string& name) = 0;
  /// Every kernel symbol's name, for `did you mean` hints; empty when unknown. Valid until
  /// the next call.
  virtual std::vector<std::string_view> symbolNames() = 0;

  /// The BPF programs loaded now (`bpf:PROG`); an error says why they cannot be listed.
  virtual Result<std::vector<BpfProgram>> bpfPrograms() = 0;

  /// The network namespaces `ip netns` names (its files in /run/netns), each by the inode
  /// that `netns` and `dev_netns` hold; none where there are none or they cannot be read.
  virtual std::vector<NamedNetns> netNamespaces() { return {}; }
};

/// The named network namespaces in `directory` (`ip netns`'s /run/netns), sorted by name.
std::vector<NamedNetns> namedNetNamespaces(const std::string& directory = "/run/netns");

/// The running kernel, through tracefs (where it is mounted: it never mounts it),
/// /proc/kallsyms and sysfs.
std::unique_ptr<KernelInfo> systemKernel();

/// Where tracefs is mounted; an error says it is not.
Result<std::string> findTracefs();
/// Mounts tracefs at /sys/kernel/tracing unless it is mounted (needs root). Only running a
/// query does this: `kq check` must change nothing on the machine.
Result<std::string> mountTracefs();

/// A kernel about which nothing is known: for checking against a BTF file from elsewhere.
std::unique_ptr<KernelInfo> unknownKernel(std::string why);

}  // namespace kq::host
