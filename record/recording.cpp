#include "record/recording.h"

#include <fmt/format.h>

#include "record/bytes.h"
#include "record/recorded_types.h"
#include "record/recorder.h"
#include "record/session_codec.h"

namespace kq::record {

Result<std::unique_ptr<Recording>> Recording::open(const std::string& path) {
  Result<std::unique_ptr<RecordingReader>> reader = RecordingReader::open(path);
  if (!reader) return reader.error();
  std::unique_ptr<Recording> r(new Recording(reader.take()));
  Block block;
  // The first three blocks, in their order: what every later one is read with.
  for (BlockKind want : {BlockKind::Meta, BlockKind::Plan, BlockKind::Types}) {
    uint64_t at = r->reader_->offset();
    if (!r->reader_->next(block)) {
      if (!r->reader_->error().empty()) return Error{r->reader_->error()};
      return Error{fmt::format("`{}` is cut short at byte {}, before its {} block", path, at, blockKindName(want))};
    }
    if (block.kind != want) {
      return Error{fmt::format("`{}` is corrupted at byte {}: the block there is of kind {}, where its {} block should be", path,
                               block.offset, blockKindName(block.kind), blockKindName(want))};
    }
    std::string error;
    if (want == BlockKind::Meta) {
      std::optional<RecordingMeta> meta = decodeMeta(block.payload, &error);
      if (!meta) return Error{fmt::format("`{}` is corrupted at byte {}: {}", path, block.offset, error)};
      r->meta_ = std::move(*meta);
    } else if (want == BlockKind::Plan) {
      std::optional<plan::PortablePlan> plan = plan::decodePlan(block.payload, &error);
      if (!plan) return Error{fmt::format("`{}` is corrupted at byte {}: its plan: {}", path, block.offset, error)};
      r->plan_ = std::move(*plan);
    } else {
      Result<std::unique_ptr<runtime::KernelTypes>> types = decodeRecordedTypes(block.payload);
      if (!types) return Error{fmt::format("`{}` is corrupted at byte {}: {}", path, block.offset, types.error().message)};
      r->types_ = types.take();
    }
  }
  return r;
}

bool Recording::corrupted(const Block& block, size_t at, const std::string& why) {
  error_ = fmt::format("`{}` is corrupted at byte {}: in its calls block there, {} (at byte {} of the block's {} "
                       "once decompressed)",
                       reader_->path(), block.offset, why, at, block.payload.size());
  return false;
}

bool Recording::play(engine::Sink& sink) {
  Block block;
  bool ended = false;
  while (reader_->next(block)) {
    if (ended) {
      error_ = fmt::format("`{}` is corrupted at byte {}: a block (of kind {}) after its end block", reader_->path(),
                           block.offset, blockKindName(block.kind));
      return false;
    }
    if (block.kind == BlockKind::End) {
      ByteReader in(reinterpret_cast<const uint8_t*>(block.payload.data()), block.payload.size());
      recorded_events_ = in.varint();
      if (!in.ok()) return corrupted(block, in.errorAt(), in.error());
      ended = true;
      continue;
    }
    if (block.kind != BlockKind::Calls) {
      error_ = fmt::format("`{}` is corrupted at byte {}: a second {} block", reader_->path(), block.offset,
                           blockKindName(block.kind));
      return false;
    }
    if (!playBlock(block, sink)) return false;
  }
  if (!reader_->error().empty()) {
    error_ = reader_->error();
    return false;
  }
  if (!ended) {
    error_ = fmt::format("`{}` is cut short at byte {}: it has no end block (was kq record killed, or its "
                         "disk full?); the events before it were shown",
                         reader_->path(), reader_->offset());
    return false;
  }
  return true;
}

bool Recording::playBlock(const Block& block, engine::Sink& sink) {
  const plan::ProgramLayout& layout = plan_.plan.layout;
  ByteReader in(reinterpret_cast<const uint8_t*>(block.payload.data()), block.payload.size());
  engine::DecodedEvent event;
  engine::Table table;
  engine::QueryStats stats;
  engine::SessionResult result;
  auto query = [&]() -> uint32_t {
    uint64_t q = in.varint();
    if (in.ok() && q >= std::max<uint32_t>(layout.queries, 1)) in.fail(fmt::format("query {}, which the plan does not have", q + 1));
    return static_cast<uint32_t>(q);
  };
  while (!in.atEnd()) {
    uint8_t c = in.u8();
    switch (static_cast<Call>(c)) {
      case Call::Begin: sink.onBegin(); break;
      case Call::Event:
        decodeEvent(in, layout, event);
        if (in.ok()) sink.onEvent(event);
        break;
      case Call::Table:
        decodeTable(in, layout, table);
        if (in.ok()) sink.onTable(table);
        break;
      case Call::QueryEnd:
      case Call::Loss: {
        uint32_t q = query();
        decodeStats(in, stats);
        if (!in.ok()) break;
        if (static_cast<Call>(c) == Call::QueryEnd) sink.onQueryEnd(q, stats);
        else sink.onLoss(q, stats);
        break;
      }
      case Call::End: sink.onEnd(); break;
      case Call::Summary:
        decodeResult(in, result);
        // Whether this replay's output could be written, not the recording's.
        result.output_failure = sink.failure();
        result.reader_gone = sink.readerGone();
        if (in.ok()) sink.onSummary(result);
        break;
      case Call::Error: {
        std::string message = in.string();
        if (in.ok()) sink.onError(message);
        break;
      }
      case Call::LostSoFar: {
        LostSample sample;
        sample.wall_ns = in.svarint();
        sample.query = query();
        for (uint64_t& n : sample.lost) n = in.varint();
        if (in.ok()) lost_samples_.push_back(sample);
        break;
      }
      default: in.fail(fmt::format("an unknown call {}", c)); break;
    }
    if (!in.ok()) return corrupted(block, in.errorAt(), in.error());
    if (sink.failed()) break;
  }
  sink.flush();
  return true;
}

}  // namespace kq::record
