// Writes pcap-ng (the IETF draft "PCAP Next Generation Dump File Format"), the format
// Wireshark, tshark and tcpdump read: a section header, an interface description for each
// place packets were seen, and an enhanced packet block for each packet, with comments.
// Little-endian, every block and option padded to 32 bits, times in nanoseconds.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace kq::engine::pcapng {

/// Raw IPv4 or IPv6, no link-layer header (a packet from its network header on).
inline constexpr uint16_t kLinkTypeRaw = 101;

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}

  /// The section header: what wrote the file, on what.
  void section(const std::string& hardware, const std::string& os, const std::string& application);
  /// An interface description; returns its number, which packets name.
  uint32_t addInterface(const std::string& name, const std::string& description, uint16_t link_type,
                        uint32_t snap_length);
  /// An enhanced packet block: `captured` bytes of a packet of `length`, at `time_ns` since
  /// the epoch, with each of `comments` as an opt_comment.
  void packet(uint32_t interface, uint64_t time_ns, const uint8_t* data, uint32_t captured, uint32_t length,
              const std::vector<std::string>& comments);

 private:
  void block(uint32_t type, const std::string& body);
  uint32_t interfaces_ = 0;
  std::ostream& out_;
};

}  // namespace kq::engine::pcapng
