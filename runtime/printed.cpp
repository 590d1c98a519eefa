#include "runtime/printed.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <vector>

#include <fmt/format.h>


namespace kq::runtime {

uint64_t readU64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

int64_t readSigned(const uint8_t* p) { return static_cast<int64_t>(readU64(p)); }

std::string clockText(int64_t wall_ns, ClockPrecision precision) {
  time_t seconds = static_cast<time_t>(wall_ns / 1'000'000'000);
  // Events come by the hundred thousand a second: the local time of the last second is
  // kept (localtime_r consults the time zone's rules on every call).
  thread_local time_t last_seconds = -1;
  thread_local struct tm last_tm {};
  if (seconds != last_seconds) {
    localtime_r(&seconds, &last_tm);
    last_seconds = seconds;
  }
  const struct tm& tm = last_tm;
  int64_t frac = wall_ns % 1'000'000'000;
  switch (precision) {
    case ClockPrecision::Seconds:
      return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
    case ClockPrecision::Milliseconds:
      return fmt::format("{:02}:{:02}:{:02}.{:03}", tm.tm_hour, tm.tm_min, tm.tm_sec, frac / 1'000'000);
    case ClockPrecision::Microseconds:
      return fmt::format("{:02}:{:02}:{:02}.{:06}", tm.tm_hour, tm.tm_min, tm.tm_sec, frac / 1000);
  }
  return "";
}

std::string rfc3339Text(int64_t wall_ns) {
  time_t seconds = static_cast<time_t>(wall_ns / 1'000'000'000);
  struct tm tm {};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, wall_ns % 1'000'000'000);
}

std::string stringText(const uint8_t* p, size_t size, bool mark_cut) {
  std::string out;
  size_t i = 0;
  auto plain = [](unsigned char c) { return c >= 0x20 && c != 0x7f && c != '\\'; };
  for (; i < size && p[i]; ++i) {
    unsigned char c = p[i];
    if (plain(c)) {
      // A run of printable bytes (most strings are one) is appended at once.
      size_t end = i + 1;
      while (end < size && p[end] && plain(p[end])) ++end;
      out.append(reinterpret_cast<const char*>(p + i), end - i);
      i = end - 1;
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out += fmt::format("\\x{:02x}", c);  // a control character
    }
  }
  // A string with no NUL in its field went on past it (a string read keeps its NUL when it
  // ends in the field, ExprLowering::readString): say so (`str(p, n)` keeps more).
  if (mark_cut && size > 0 && i >= size) out += "…";
  return out;
}

std::string stringBytes(std::string_view text) {
  auto hex = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\\') {
      out += '\\';
      ++i;
    } else if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] == 'x' && hex(text[i + 2]) >= 0 &&
               hex(text[i + 3]) >= 0) {
      out += static_cast<char>(hex(text[i + 2]) * 16 + hex(text[i + 3]));
      i += 3;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string fileText(const std::string& path) {
  // Non-blocking: a FIFO without a writer must not stop the output.
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fmt::format("<cannot read {}: {}>", path, std::strerror(errno));
  std::string bytes(plan::kCatBytes + 1, '\0');
  size_t have = 0;
  int error = 0;
  while (have < bytes.size()) {
    ssize_t n = read(fd, bytes.data() + have, bytes.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = errno;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
  }
  close(fd);
  // EAGAIN: a FIFO or a device with nothing to read now, shown as what was read.
  if (error && error != EAGAIN) return fmt::format("<cannot read {}: {}>", path, std::strerror(error));
  bool cut = have > plan::kCatBytes;
  bytes.resize(std::min<size_t>(have, plan::kCatBytes));
  if (!cut && !bytes.empty() && bytes.back() == '\n') bytes.pop_back();
  std::string out;
  for (char c : bytes) {
    auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  if (cut) out += "…";
  return out;
}

std::string stringListText(const uint8_t* p, uint32_t size, const std::string& separator) {
  if (size < 8) return "";
  uint64_t count = readU64(p);
  uint32_t bytes = plan::joinArgBytes(size);
  uint64_t shown = bytes == 0 ? 0 : std::min<uint64_t>(count, plan::kJoinArgs);
  std::string out;
  for (uint64_t i = 0; i < shown; ++i) {
    if (i) out += separator;
    out += stringText(p + 8 + i * bytes, bytes, /*mark_cut=*/true);
  }
  if (count > shown) out += separator + "…";
  return out;
}

std::string bufferText(const uint8_t* p, uint32_t size) {
  std::string out;
  for (uint32_t i = 0; i < size; ++i) {
    if (p[i] >= 32 && p[i] <= 126) {
      out += static_cast<char>(p[i]);
    } else {
      out += fmt::format("\\x{:02x}", p[i]);
    }
  }
  return out;
}

std::string wallTimeText(const std::string& format, int64_t wall_ns) {
  int64_t seconds = wall_ns / 1'000'000'000;
  int64_t frac = wall_ns % 1'000'000'000;
  if (frac < 0) {
    seconds -= 1;
    frac += 1'000'000'000;
  }
  // `%f` first (strftime has none); `%%f` stays a percent sign and an `f`.
  std::string spec;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '%' && i + 1 < format.size()) {
      if (format[i + 1] == 'f') {
        spec += fmt::format("{:06}", frac / 1000);
      } else {
        spec += format.substr(i, 2);
      }
      ++i;
      continue;
    }
    spec += format[i];
  }
  if (spec.empty()) return "";
  time_t t = static_cast<time_t>(seconds);
  struct tm tm;
  localtime_r(&t, &tm);
  // strftime returns 0 when the text does not fit (or is empty): try larger buffers.
  for (size_t room = 128; room <= 65536; room *= 4) {
    std::vector<char> text(room);
    size_t n = strftime(text.data(), text.size(), spec.c_str(), &tm);
    if (n > 0) return std::string(text.data(), n);
  }
  return "";
}

std::string errnoName(int64_t value) {
  int64_t n = value < 0 ? -value : value;
  const char* name = n > 0 && n <= 4095 ? strerrorname_np(static_cast<int>(n)) : nullptr;
  if (!name) return std::to_string(value);
  return value < 0 ? fmt::format("-{}", name) : name;
}

std::string syscallReturnText(int64_t value) {
  if (value < -4095 || value >= 0) return std::to_string(value);
  const char* name = strerrorname_np(static_cast<int>(-value));
  return name ? fmt::format("{} {}", value, name) : std::to_string(value);
}

}  // namespace kq::runtime
