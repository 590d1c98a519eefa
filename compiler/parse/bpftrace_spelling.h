// bpftrace's one-liners typed into kq (`tracepoint:syscalls:sys_enter_openat { @[comm] =
// count(); }`): recognised before parsing, and said once, with the query kq reads for it,
// rather than as kq's syntax errors at each bpftrace mark.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kq::parse {

struct BpftraceSpelling {
  size_t brace = 0;    // where the action's `{` is
  std::string query;   // the kq query for it, or empty when it cannot be said in one
};

/// `text` as a bpftrace program, if it is one: `PROBE [/FILTER/] { ACTION }` with a probe
/// bpftrace names (kprobe:, kretprobe:, tracepoint:, uprobe:, ...). The query is given
/// for the common actions: `@[keys] = count()` (and sum, avg, min, max, hist, lhist),
/// `printf("...", args)`, and a filter.
std::optional<BpftraceSpelling> bpftraceSpelling(std::string_view text);

}  // namespace kq::parse
