// Turns event records into output for people (columns like the bcc tools, ksnoop-style
// typed dumps of captured structs) or for machines (one JSON object per line). Everything
// it knows about a record comes from its ProbeLayout.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

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

// Values as the output shows them; aggregate tables (aggregates.cpp) use them too.

/// An 8-byte record slot (records are 8-byte aligned only by layout, so copied out).
uint64_t readU64(const uint8_t* p);
int64_t readSigned(const uint8_t* p);

enum class ClockPrecision { Seconds, Milliseconds, Microseconds };
/// Local wall-clock time of day: `14:03:07`, `14:03:07.125`, `14:03:07.125042`.
std::string clockText(int64_t wall_ns, ClockPrecision precision);

/// A field's value as text; `fields` and `record` are the whole record (or key), which a
/// `fmt` draws its arguments from.
std::string fieldText(const FieldLayout& f, const std::vector<FieldLayout>& fields,
                      const uint8_t* record, const ::btf* btf);

}  // namespace kq::runtime
