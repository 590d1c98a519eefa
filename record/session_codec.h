// A session's typed results (engine/decoded_event.h, table.h, session_result.h) as bytes and
// back: what `kq record` keeps of each call its sink receives, so that `kq replay` can make
// the same calls. Decoding checks what it reads against the recording's plan (a probe or
// an aggregate it does not have is an error, not an index out of range).
#pragma once

#include "engine/decoded_event.h"
#include "engine/session_result.h"
#include "engine/table.h"
#include "plan/event_layout.h"
#include "record/bytes.h"

namespace kq::record {

void encodeValue(ByteWriter& out, const engine::Value& v);
void decodeValue(ByteReader& in, engine::Value& v);

/// The event's probe is `event.header.probe_id` of the layout.
void encodeEvent(ByteWriter& out, const engine::DecodedEvent& event);
void decodeEvent(ByteReader& in, const plan::ProgramLayout& layout, engine::DecodedEvent& event);

/// `aggregate`: the table's index in the layout's aggregates.
void encodeTable(ByteWriter& out, const engine::Table& table, uint32_t aggregate);
void decodeTable(ByteReader& in, const plan::ProgramLayout& layout, engine::Table& table);

void encodeStats(ByteWriter& out, const engine::QueryStats& stats);
void decodeStats(ByteReader& in, engine::QueryStats& stats);

void encodeResult(ByteWriter& out, const engine::SessionResult& result);
void decodeResult(ByteReader& in, engine::SessionResult& result);

}  // namespace kq::record
