// Fuzz target: `kq replay`'s reader (record/recording.h). Each input is replayed twice: as
// it is (the file's framing: headers, sizes, checksums, decompression), and with its blocks
// decompressed and their checksums made right, so that mutations reach what decodes the
// blocks (meta, plan, types, every recorded call) and the sinks and queries that print
// them. Whatever is read must be refused with a message or printed; nothing may crash.
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>

#include "engine/sinks.h"
#include "record/recording.h"
#include "record/recording_file.h"
#include "record/replay_query.h"
#include "runtime/type_dump.h"

namespace {

using namespace kq;

/// The input with each block stored plainly and its checksum right (what a mutation of a
/// compressed block could never reach otherwise).
std::string withPlainBlocks(const uint8_t* data, size_t size) {
  if (size < record::kFileHeaderBytes) return {};
  std::string out(reinterpret_cast<const char*>(data), record::kFileHeaderBytes);
  size_t at = record::kFileHeaderBytes;
  while (size - at >= record::kBlockHeaderBytes) {
    uint32_t kind, flags, crc, zero = 0;
    uint64_t stored, bytes;
    std::memcpy(&kind, data + at, 4);
    std::memcpy(&flags, data + at + 4, 4);
    std::memcpy(&stored, data + at + 8, 8);
    std::memcpy(&bytes, data + at + 16, 8);
    at += record::kBlockHeaderBytes;
    if (stored > size - at) stored = size - at;
    std::string payload(reinterpret_cast<const char*>(data + at), stored);
    at += stored;
    if ((flags & 1) && bytes <= (1u << 24)) {
      std::string plain(bytes, '\0');
      size_t n = ZSTD_decompress(plain.data(), plain.size(), payload.data(), payload.size());
      if (!ZSTD_isError(n)) payload = plain.substr(0, n);
    }
    flags = 0;
    stored = bytes = payload.size();
    crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size())));
    for (auto [p, n] : {std::pair<const void*, size_t>{&kind, 4}, {&flags, 4}, {&stored, 8}, {&bytes, 8}, {&crc, 4}, {&zero, 4}}) {
      out.append(static_cast<const char*>(p), n);
    }
    out += payload;
  }
  return out;
}

class NoSymbols : public engine::Symbolizer {
 public:
  std::string kernel(uint64_t a) override { return std::to_string(a); }
  std::string user(uint32_t, uint64_t a) override { return std::to_string(a); }
};
class NoFiles : public engine::FileReader {
 public:
  std::string text(const std::string&) override { return ""; }
};

void replay(const std::string& bytes) {
  int fd = memfd_create("recording", MFD_CLOEXEC);
  if (fd < 0) return;
  if (write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
    close(fd);
    return;
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  for (engine::OutputFormat format : {engine::OutputFormat::Text, engine::OutputFormat::Json,
                                      engine::OutputFormat::Pcapng, engine::OutputFormat::Folded,
                                      engine::OutputFormat::Perfetto}) {
    Result<std::unique_ptr<record::Recording>> opened = record::Recording::open(path);
    if (!opened) break;
    record::Recording& recording = **opened;
    NoSymbols symbols;
    NoFiles files;
    runtime::TypeDumper dumper(&recording.types());
    dumper.prepare(recording.plan().plan.layout);
    engine::PrintContext context{symbols, dumper, files, recording.meta().boot_offset_ns};
    std::ostringstream out, err;
    if (format == engine::OutputFormat::Folded) {
      // A new query over the events, and its table folded.
      (void)record::replayQuery(recording, "<query>", "trace * join * as j on tid where pid > 1 and j.time > 0 group by comm select comm, count(), hist(pid)", format,
                                {}, context, out, err, "never");
      continue;
    }
    std::unique_ptr<engine::Sink> sink = engine::makeSink(format, recording.plan().plan, context, out, err);
    (void)recording.play(*sink);
  }
  close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  replay(std::string(reinterpret_cast<const char*>(data), size));
  replay(withPlainBlocks(data, size));
  return 0;
}
