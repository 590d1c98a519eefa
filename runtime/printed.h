// Text made when an event prints, for the builtins that are only text (bpftrace's): `cat`'s
// file, `join`'s strings, `buf`'s bytes and `strftime`'s wall-clock time. The formatter shows
// each the same in text and JSON (a string).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "plan/event_layout.h"

namespace kq::runtime {

/// An 8-byte record slot (records are 8-byte aligned only by layout, so copied out).
uint64_t readU64(const uint8_t* p);
int64_t readSigned(const uint8_t* p);

/// Printable text of a NUL-terminated string in `size` bytes (`\x01` escapes); with
/// `mark_cut`, a string that fills them ends in `…`.
std::string stringText(const uint8_t* p, size_t size, bool mark_cut = false);
/// The bytes a string's text (stringText) stands for: its `\\` and `\xNN` undone, for
/// formats with escapes of their own (JSON, Prometheus labels).
std::string stringBytes(std::string_view text);

enum class ClockPrecision { Seconds, Milliseconds, Microseconds };
/// Local wall-clock time of day: `14:03:07`, `14:03:07.125`, `14:03:07.125042`.
std::string clockText(int64_t wall_ns, ClockPrecision precision);
/// UTC as RFC 3339 with nanoseconds: `2026-12-02T14:03:07.125042311Z`.
std::string rfc3339Text(int64_t wall_ns);

/// The contents of the file at `path` (at most kCatBytes; a longer file ends in `…`)
/// without its last newline; control characters but newlines and tabs as `\xNN`. A file
/// that cannot be read shows why: `<cannot read /x: No such file or directory>`.
std::string fileText(const std::string& path);

/// A StringList field's strings, each cut one marked `…`, joined by `separator`; a list
/// that went on past the strings kept ends in `separator…`.
std::string stringListText(const uint8_t* p, uint32_t size, const std::string& separator);

/// `size` bytes as bpftrace's `buf` shows them: printable ASCII as is, others as `\xNN`.
std::string bufferText(const uint8_t* p, uint32_t size);

/// The local time of `wall_ns` (nanoseconds since the epoch) by C's strftime, with `%f` as
/// the microseconds (six digits), as bpftrace has it.
std::string wallTimeText(const std::string& format, int64_t wall_ns);

/// `-ENOENT` for -2, `ENOENT` for 2, or the number.
std::string errnoName(int64_t value);
/// A system call's return value: `-2 ENOENT` for an errno (-4095 to -1), else the number.
std::string syscallReturnText(int64_t value);

}  // namespace kq::runtime
