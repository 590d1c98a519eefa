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

namespace kq::runtime {

class TypeDumper;

enum class OutputFormat { Text, Json };

class Formatter {
 public:
  virtual ~Formatter() = default;
  /// Called once before the first event.
  virtual void begin() = 0;
  virtual void event(const EventHeader& header, const ProbeLayout& probe, const uint8_t* record,
                     size_t size) = 0;
  /// Called once after the last event (the per-packet view prints then).
  virtual void end() {}
};

/// `types` shows struct dumps and enumerator names (its fields prepared for `layout`);
/// `boot_offset_ns` turns bpf_ktime_get_ns() into wall-clock time.
std::unique_ptr<Formatter> makeFormatter(OutputFormat format, const ProgramLayout& layout,
                                         TypeDumper& types, int64_t boot_offset_ns,
                                         std::ostream& out);

// Values as the output shows them; aggregate tables (aggregates.cpp) use them too.

/// An 8-byte record slot (records are 8-byte aligned only by layout, so copied out).
uint64_t readU64(const uint8_t* p);
int64_t readSigned(const uint8_t* p);
/// Printable text of a NUL-terminated string of at most `size` bytes (`\x01` escapes).
/// Printable text of a NUL-terminated string in `size` bytes; with `mark_cut`, a string
/// that fills them ends in `…`.
std::string stringText(const uint8_t* p, size_t size, bool mark_cut = false);

enum class ClockPrecision { Seconds, Milliseconds, Microseconds };
/// Local wall-clock time of day: `14:03:07`, `14:03:07.125`, `14:03:07.125042`.
std::string clockText(int64_t wall_ns, ClockPrecision precision);

/// A Table field's name for the number at `p`; null when its table has none (the number
/// itself then prints).
const std::string* tableName(const FieldLayout& f, const uint8_t* p);

/// A field's value as text; `fields` and `record` are the whole record (or key), which a
/// `fmt` draws its arguments from.
std::string fieldText(const FieldLayout& f, const std::vector<FieldLayout>& fields,
                      const uint8_t* record, TypeDumper& types);

}  // namespace kq::runtime
