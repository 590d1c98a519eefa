// Turns event records into output for people (columns like the bcc tools, ksnoop-style
// typed dumps of captured structs) or for machines (one JSON object per line). Everything
// it knows about a record comes from its ProbeLayout.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "runtime/event_layout.h"

struct btf;

namespace kq::runtime {

enum class OutputFormat { Text, Json };

class Formatter {
 public:
  virtual ~Formatter() = default;
  /// Called once before the first event.
  virtual void begin() = 0;
  virtual void event(const EventHeader& header, const ProbeLayout& probe, const uint8_t* record,
                     size_t size) = 0;
};

/// `kernel_btf` (may be null) gives struct dumps and enumerator names; `boot_offset_ns`
/// turns bpf_ktime_get_ns() into wall-clock time.
std::unique_ptr<Formatter> makeFormatter(OutputFormat format, const ProgramLayout& layout,
                                         const ::btf* kernel_btf, int64_t boot_offset_ns,
                                         std::ostream& out);

}  // namespace kq::runtime
