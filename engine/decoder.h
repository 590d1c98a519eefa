// Records to typed values (engine/decoded_event.h). Everything it reads of the machine
// comes through the PrintContext, so recorded bytes decode the same under a test's context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/decoded_event.h"
#include "engine/print_context.h"
#include "plan/event_layout.h"
#include "runtime/printed.h"

namespace kq::engine {

using runtime::ClockPrecision;
using runtime::clockText;
using runtime::readSigned;
using runtime::readU64;
using runtime::stringText;

class RecordDecoder {
 public:
  RecordDecoder(const plan::ProgramLayout& layout, PrintContext& context);

  /// The event in `data`, or null when it is none of the layout's (too short, an unknown
  /// probe). The event is the decoder's own, valid until the next call.
  const DecodedEvent* decode(const uint8_t* data, size_t size);

  /// Field `f` of `record` (`fields` and `record` are the whole record or table key, which a
  /// `fmt` draws its arguments from); `pid` names user addresses.
  void value(const plan::FieldLayout& f, const std::vector<plan::FieldLayout>& fields,
             const uint8_t* record, uint32_t pid, Value& out);
  /// Key `f` of a table's `key`: as value(), but a stack's frames are their functions
  /// unless PrintContext::key_stack_offsets.
  void keyValue(const plan::FieldLayout& f, const std::vector<plan::FieldLayout>& keys,
                const uint8_t* key, Value& out);

  PrintContext& context() { return context_; }
  const plan::ProgramLayout& layout() const { return layout_; }

 private:
  std::string scalarText(const plan::FieldLayout& f, const uint8_t* p, uint32_t pid);
  std::string formatText(const plan::FieldLayout& f, const std::vector<plan::FieldLayout>& fields,
                         const uint8_t* record, uint32_t pid);
  std::string convert(std::string spec, char conversion, const plan::FieldLayout& arg,
                      const uint8_t* p, uint32_t pid);
  void stack(const plan::FieldLayout& f, const uint8_t* p, uint32_t pid, Value& out);
  /// `caller`: the function of the first frame past the tracing machinery's and the traced
  /// function's own; `?` where the stack has none.
  std::string callerText(const plan::FieldLayout& f, const uint8_t* p);

  const plan::ProgramLayout& layout_;
  PrintContext& context_;
  DecodedEvent event_;
  /// By probe, by field: whether it is decoded. Hidden fields are read by others only,
  /// but a packet's capture (`--packet-bytes`) is for the pcap-ng sink; decided once here.
  std::vector<std::vector<bool>> decoded_;
};

}  // namespace kq::engine
