#include "engine/pcapng.h"

#include <cstring>

namespace kq::engine::pcapng {
namespace {

constexpr uint32_t kSectionHeader = 0x0A0D0D0A;
constexpr uint32_t kInterfaceDescription = 1;
constexpr uint32_t kEnhancedPacket = 6;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;

constexpr uint16_t kOptEnd = 0;
constexpr uint16_t kOptComment = 1;
constexpr uint16_t kShbHardware = 2, kShbOs = 3, kShbApplication = 4;
constexpr uint16_t kIfName = 2, kIfDescription = 3, kIfTsResolution = 9;

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void pad(std::string& out) { out.append((4 - out.size() % 4) % 4, '\0'); }

void option(std::string& out, uint16_t code, const void* value, size_t size) {
  // An option's value is at most 65535 bytes: longer text is cut.
  size = std::min<size_t>(size, 0xFFFC);
  put(out, code);
  put(out, static_cast<uint16_t>(size));
  out.append(static_cast<const char*>(value), size);
  pad(out);
}

void option(std::string& out, uint16_t code, const std::string& text) {
  if (!text.empty()) option(out, code, text.data(), text.size());
}

void endOptions(std::string& out) {
  put(out, kOptEnd);
  put(out, uint16_t{0});
}

}  // namespace

void Writer::block(uint32_t type, const std::string& body) {
  uint32_t total = static_cast<uint32_t>(12 + body.size());
  std::string b;
  put(b, type);
  put(b, total);
  b += body;
  put(b, total);
  out_.write(b.data(), static_cast<std::streamsize>(b.size()));
}

void Writer::section(const std::string& hardware, const std::string& os, const std::string& application) {
  std::string body;
  put(body, kByteOrderMagic);
  put(body, uint16_t{1});
  put(body, uint16_t{0});
  put(body, int64_t{-1});  // the section's length: not known
  option(body, kShbHardware, hardware);
  option(body, kShbOs, os);
  option(body, kShbApplication, application);
  endOptions(body);
  block(kSectionHeader, body);
}

uint32_t Writer::addInterface(const std::string& name, const std::string& description, uint16_t link_type,
                              uint32_t snap_length) {
  std::string body;
  put(body, link_type);
  put(body, uint16_t{0});
  put(body, snap_length);
  option(body, kIfName, name);
  option(body, kIfDescription, description);
  uint8_t nanoseconds = 9;  // 10^-9 s
  option(body, kIfTsResolution, &nanoseconds, 1);
  endOptions(body);
  block(kInterfaceDescription, body);
  return interfaces_++;
}

void Writer::packet(uint32_t interface, uint64_t time_ns, const uint8_t* data, uint32_t captured, uint32_t length,
                    const std::vector<std::string>& comments) {
  std::string body;
  put(body, interface);
  put(body, static_cast<uint32_t>(time_ns >> 32));
  put(body, static_cast<uint32_t>(time_ns));
  put(body, captured);
  put(body, length);
  body.append(reinterpret_cast<const char*>(data), captured);
  pad(body);
  for (const std::string& c : comments) option(body, kOptComment, c);
  if (!comments.empty()) endOptions(body);
  block(kEnhancedPacket, body);
}

}  // namespace kq::engine::pcapng
