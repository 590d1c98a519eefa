// The byte-level encoding of a recording's blocks: little-endian fixed-width numbers,
// LEB128 varints (lengths, counts, most numbers) and length-prefixed strings. The reader
// checks every read against what is left and, on the first that does not fit, stops with
// the offset where it failed; every later read gives zero, so a decoder reads on and asks
// `ok()` once at the end of what it decodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kq::record {

class ByteWriter {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { fixed(&v, sizeof v); }
  void u64(uint64_t v) { fixed(&v, sizeof v); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      u8(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    u8(static_cast<uint8_t>(v));
  }
  /// Signed, zig-zagged: small negative numbers stay small.
  void svarint(int64_t v) { varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void string(const std::string& s) {
    varint(s.size());
    out_.append(s);
  }
  void bytes(const void* data, size_t size) {
    varint(size);
    fixed(data, size);
  }
  void fixed(const void* data, size_t size) { out_.append(static_cast<const char*>(data), size); }

  std::string& data() { return out_; }
  size_t size() const { return out_.size(); }
  void clear() { out_.clear(); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t u8() {
    uint8_t v = 0;
    fixed(&v, 1);
    return v;
  }
  uint32_t u32() {
    uint32_t v = 0;
    fixed(&v, sizeof v);
    return v;
  }
  uint64_t u64() {
    uint64_t v = 0;
    fixed(&v, sizeof v);
    return v;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b = u8();
      if (!ok()) return 0;
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    fail("a number runs on past 10 bytes");
    return 0;
  }
  int64_t svarint() {
    uint64_t v = varint();
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  /// A count of things each at least `min_bytes` long: more than what is left cannot be.
  size_t count(size_t min_bytes = 1) {
    uint64_t n = varint();
    if (ok() && n > left() / (min_bytes ? min_bytes : 1)) {
      fail("a count of " + std::to_string(n) + " is more than the block holds");
      return 0;
    }
    return ok() ? static_cast<size_t>(n) : 0;
  }
  std::string string() {
    size_t n = count();
    std::string s;
    if (!ok()) return s;
    s.assign(reinterpret_cast<const char*>(data_ + at_), n);
    at_ += n;
    return s;
  }
  std::vector<uint8_t> bytes() {
    size_t n = count();
    std::vector<uint8_t> b;
    if (!ok()) return b;
    b.assign(data_ + at_, data_ + at_ + n);
    at_ += n;
    return b;
  }
  void fixed(void* out, size_t n) {
    if (!ok()) return;
    if (n > left()) {
      fail("it ends in the middle of a value");
      return;
    }
    std::memcpy(out, data_ + at_, n);
    at_ += n;
  }

  void fail(const std::string& why) {
    if (!ok()) return;
    error_ = why;
    error_at_ = at_;
    at_ = size_;
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  size_t errorAt() const { return error_at_; }
  size_t at() const { return at_; }
  size_t left() const { return size_ - at_; }
  bool atEnd() const { return at_ == size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
  std::string error_;
  size_t error_at_ = 0;
};

}  // namespace kq::record
