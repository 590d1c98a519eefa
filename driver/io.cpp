#include "driver/io.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "compiler/parse/literals.h"
#include "compiler/parse/parse.h"

namespace kq::driver {

namespace {

/// `8M`, `1G`, `256k` (`8m` is 8 MiB here: in a query, `m` is minutes), or a bare number of KiB.
std::optional<uint64_t> sizeInBytes(const std::string& size) {
  std::string text = size;
  if (!text.empty() && (text.back() == 'm' || text.back() == 'g')) text.back() = static_cast<char>(std::toupper(text.back()));
  auto decoded = parse::decodeNumber(text);
  auto* n = std::get_if<parse::DecodedNumber>(&decoded);
  if (!n) return std::nullopt;
  if (n->unit == ast::NumberUnit::None) {
    if (n->value > (1ull << 40)) return std::nullopt;
    return n->value << 10;  // a bare number is KiB
  }
  if (n->unit != ast::NumberUnit::Bytes) return std::nullopt;
  return n->value;
}

}  // namespace

std::optional<uint64_t> byteSize(const std::string& size) {
  std::optional<uint64_t> bytes = sizeInBytes(size);
  if (!bytes || *bytes < 4096) return std::nullopt;
  return bytes;
}

std::optional<uint32_t> ringBufferBytes(const std::string& size) {
  std::optional<uint64_t> parsed = sizeInBytes(size);
  if (!parsed) return std::nullopt;
  uint64_t bytes = *parsed;
  if (bytes < 4096 || bytes > (1ull << 30) || (bytes & (bytes - 1)) != 0) return std::nullopt;
  return static_cast<uint32_t>(bytes);
}

// Reads one byte more than the parser accepts, so that a larger file (or /dev/zero) is
// refused as InputTooLarge without being read whole.
std::optional<std::string> readFileFromDisk(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  std::string text(parse::kMaxInputBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

}  // namespace kq::driver
