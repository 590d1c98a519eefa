// A recording's file: a 16-byte header (the magic `KQRECORD`, the format version, 0), then
// blocks, each a 32-byte block header and its payload:
//
//   u32 kind  u32 flags  u64 stored bytes  u64 bytes  u32 crc32 of what is stored  u32 0
//
// little-endian; flag 1: the payload is stored zstd-compressed (`bytes` once
// decompressed). docs/record.md describes the blocks (record/recording.h writes them).
// The reader checks every header, size and checksum, and says at which byte of the file
// a recording is cut short or corrupted.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "compiler/diag/result.h"

namespace kq::record {

inline constexpr char kMagic[8] = {'K', 'Q', 'R', 'E', 'C', 'O', 'R', 'D'};
/// The version of the format below and of the blocks' contents; replay reads only its own.
inline constexpr uint32_t kRecordingFormat = 1;
inline constexpr size_t kFileHeaderBytes = 16;
inline constexpr size_t kBlockHeaderBytes = 32;
/// No block is larger than this, stored or not: a size beyond it is corruption.
inline constexpr uint64_t kMaxBlockBytes = 256ull << 20;

enum class BlockKind : uint32_t {
  Meta = 1,   // JSON: the host, the command, how the session printed
  Plan = 2,   // JSON: the program's plan (plan/portable_plan.h), its layouts
  Types = 3,  // the kernel's types its typed dumps need, as raw BTF, and which field has which
  Calls = 4,  // what the session handed its sink: events, tables, losses, its end (session_codec.h)
  End = 5,    // the last block: what was recorded in all (a file without it was cut short)
};
inline constexpr uint32_t kLastBlockKind = 5;
const char* blockKindName(BlockKind kind);

class RecordingWriter {
 public:
  /// Creates (or empties) `path` and writes its header.
  static Result<std::unique_ptr<RecordingWriter>> create(const std::string& path);
  ~RecordingWriter();
  RecordingWriter(const RecordingWriter&) = delete;
  RecordingWriter& operator=(const RecordingWriter&) = delete;

  /// Appends a block; `compress`: stored with zstd when that makes it smaller. False (and
  /// error() says why) when the file cannot be written.
  bool write(BlockKind kind, const std::string& payload, bool compress);
  /// Bytes written so far, headers included.
  uint64_t bytes() const { return bytes_; }
  /// What the payloads asked to be compressed came to, stored over given (1 before any).
  double compression() const { return given_ ? static_cast<double>(stored_) / static_cast<double>(given_) : 1.0; }
  const std::string& error() const { return error_; }

 private:
  RecordingWriter(FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  FILE* file_;
  std::string path_;
  uint64_t bytes_ = 0;
  uint64_t given_ = 0, stored_ = 0;  // of the payloads asked to be compressed
  std::string error_;
  std::string scratch_;
};

struct Block {
  BlockKind kind = BlockKind::Meta;
  uint64_t offset = 0;  // of its header in the file
  std::string payload;  // decompressed
};

class RecordingReader {
 public:
  /// Opens `path` and checks its header; an error names the file and what is wrong.
  static Result<std::unique_ptr<RecordingReader>> open(const std::string& path);
  ~RecordingReader();
  RecordingReader(const RecordingReader&) = delete;
  RecordingReader& operator=(const RecordingReader&) = delete;

  /// The next block: false at the end of the file or on an error (then error() is set:
  /// "cut short at byte 4160 ..." or "corrupted at byte 96 ...").
  bool next(Block& block);
  const std::string& error() const { return error_; }
  /// Where the next block begins.
  uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  RecordingReader(FILE* file, std::string path, uint64_t size)
      : file_(file), path_(std::move(path)), size_(size) {}
  bool fail(std::string message);
  FILE* file_;
  std::string path_;
  uint64_t size_;
  uint64_t offset_ = kFileHeaderBytes;
  std::string error_;
};

}  // namespace kq::record
