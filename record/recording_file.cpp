#include "record/recording_file.h"

#include <sys/stat.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace kq::record {
namespace {

/// zstd's fastest levels: a recording is written while events arrive.
constexpr int kZstdLevel = 1;

struct BlockHeader {
  uint32_t kind;
  uint32_t flags;
  uint64_t stored;
  uint64_t bytes;
  uint32_t crc;
  uint32_t zero;
};
static_assert(sizeof(BlockHeader) == kBlockHeaderBytes);
constexpr uint32_t kCompressed = 1;

uint32_t crcOf(const void* data, size_t size) {
  return static_cast<uint32_t>(crc32(0, static_cast<const Bytef*>(data), static_cast<uInt>(size)));
}

}  // namespace

const char* blockKindName(BlockKind kind) {
  switch (kind) {
    case BlockKind::Meta: return "meta";
    case BlockKind::Plan: return "plan";
    case BlockKind::Types: return "types";
    case BlockKind::Calls: return "calls";
    case BlockKind::End: return "end";
  }
  return "?";
}

Result<std::unique_ptr<RecordingWriter>> RecordingWriter::create(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "wbe");
  if (!file) return Error{fmt::format("cannot write `{}`: {}", path, std::strerror(errno))};
  std::unique_ptr<RecordingWriter> writer(new RecordingWriter(file, path));
  char header[kFileHeaderBytes] = {};
  std::memcpy(header, kMagic, sizeof kMagic);
  uint32_t version = kRecordingFormat;
  std::memcpy(header + 8, &version, sizeof version);
  if (std::fwrite(header, 1, sizeof header, file) != sizeof header) {
    return Error{fmt::format("cannot write `{}`: {}", path, std::strerror(errno))};
  }
  writer->bytes_ = sizeof header;
  return writer;
}

RecordingWriter::~RecordingWriter() {
  if (file_) std::fclose(file_);
}

bool RecordingWriter::write(BlockKind kind, const std::string& payload, bool compress) {
  if (!error_.empty()) return false;
  const std::string* stored = &payload;
  uint32_t flags = 0;
  if (compress && payload.size() > 64) {
    scratch_.resize(ZSTD_compressBound(payload.size()));
    size_t n = ZSTD_compress(scratch_.data(), scratch_.size(), payload.data(), payload.size(), kZstdLevel);
    if (!ZSTD_isError(n) && n < payload.size()) {
      scratch_.resize(n);
      stored = &scratch_;
      flags |= kCompressed;
    }
  }
  BlockHeader header{static_cast<uint32_t>(kind), flags, stored->size(), payload.size(),
                     crcOf(stored->data(), stored->size()), 0};
  if (std::fwrite(&header, 1, sizeof header, file_) != sizeof header ||
      std::fwrite(stored->data(), 1, stored->size(), file_) != stored->size() || std::fflush(file_) != 0) {
    error_ = fmt::format("cannot write `{}`: {}", path_, std::strerror(errno));
    return false;
  }
  bytes_ += sizeof header + stored->size();
  if (compress) {
    given_ += payload.size();
    stored_ += stored->size();
  }
  return true;
}

Result<std::unique_ptr<RecordingReader>> RecordingReader::open(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rbe");
  if (!file) return Error{fmt::format("cannot read `{}`: {}", path, std::strerror(errno))};
  struct stat st {};
  fstat(fileno(file), &st);
  std::unique_ptr<RecordingReader> reader(new RecordingReader(file, path, static_cast<uint64_t>(st.st_size)));
  char header[kFileHeaderBytes];
  size_t n = std::fread(header, 1, sizeof header, file);
  if (n < sizeof kMagic || std::memcmp(header, kMagic, sizeof kMagic) != 0) {
    return Error{fmt::format("`{}` is not a recording of kq's (it does not begin with `KQRECORD`)", path)};
  }
  if (n < sizeof header) {
    return Error{fmt::format("`{}` is cut short at byte {}, in its 16-byte header", path, n)};
  }
  uint32_t version, reserved;
  std::memcpy(&version, header + 8, sizeof version);
  std::memcpy(&reserved, header + 12, sizeof reserved);
  if (version != kRecordingFormat) {
    return Error{fmt::format("`{}` is a recording of format {}; this kq reads format {} (record it again "
                             "with this kq, or replay it with the kq that recorded it)",
                             path, version, kRecordingFormat)};
  }
  if (reserved != 0) {
    return Error{fmt::format("`{}` is corrupted at byte 12: its header's last 4 bytes are not 0", path)};
  }
  return reader;
}

RecordingReader::~RecordingReader() { std::fclose(file_); }

bool RecordingReader::fail(std::string message) {
  error_ = fmt::format("`{}` {}", path_, message);
  return false;
}

bool RecordingReader::next(Block& block) {
  if (!error_.empty() || offset_ >= size_) return false;
  uint64_t at = offset_;
  BlockHeader header;
  if (size_ - at < sizeof header) {
    return fail(fmt::format("is cut short at byte {}, in the header of a block (at byte {})", size_, at));
  }
  if (std::fseek(file_, static_cast<long>(at), SEEK_SET) != 0 || std::fread(&header, 1, sizeof header, file_) != sizeof header) {
    return fail(fmt::format("cannot be read at byte {}: {}", at, std::strerror(errno)));
  }
  if (header.kind == 0 || header.kind > kLastBlockKind || (header.flags & ~kCompressed) || header.zero) {
    return fail(fmt::format("is corrupted at byte {}: no block of kq's begins there (kind {}, flags {:#x})", at,
                            header.kind, header.flags));
  }
  if (header.stored > kMaxBlockBytes || header.bytes > kMaxBlockBytes ||
      (!(header.flags & kCompressed) && header.stored != header.bytes)) {
    return fail(fmt::format("is corrupted at byte {}: its {} block says it holds {} bytes", at,
                            blockKindName(static_cast<BlockKind>(header.kind)), header.stored));
  }
  uint64_t payload_at = at + sizeof header;
  if (size_ - payload_at < header.stored) {
    return fail(fmt::format("is cut short at byte {}, in the {} block of {} bytes that begins at byte {}", size_,
                            blockKindName(static_cast<BlockKind>(header.kind)), header.stored, at));
  }
  std::string stored(header.stored, '\0');
  if (std::fread(stored.data(), 1, stored.size(), file_) != stored.size()) {
    return fail(fmt::format("cannot be read at byte {}: {}", payload_at, std::strerror(errno)));
  }
  if (crcOf(stored.data(), stored.size()) != header.crc) {
    return fail(fmt::format("is corrupted at byte {}: the {} block there does not match its checksum", at,
                            blockKindName(static_cast<BlockKind>(header.kind))));
  }
  block.kind = static_cast<BlockKind>(header.kind);
  block.offset = at;
  if (header.flags & kCompressed) {
    block.payload.assign(header.bytes, '\0');
    size_t n = ZSTD_decompress(block.payload.data(), block.payload.size(), stored.data(), stored.size());
    if (ZSTD_isError(n) || n != header.bytes) {
      return fail(fmt::format("is corrupted at byte {}: its {} block does not decompress", at,
                              blockKindName(block.kind)));
    }
  } else {
    block.payload = std::move(stored);
  }
  offset_ = payload_at + header.stored;
  return true;
}

}  // namespace kq::record
