// The text sink's event lines: a prefix the query did not select (TIME, then PID and COMM
// unless it selects them, then QUERY when events come from several queries and PROBE when
// one query's come from several probes; or the columns
// `--prefix` names, or none), then the selected columns, lined up under their header:
// numbers to the right, text to the left, each column as wide as its values usually are
// (a pid's 7 digits, a comm's 15 characters) or as its widest cell so far, the last one
// left open. Probes whose columns differ print `name=value` pairs instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/decoded_event.h"
#include "plan/event_layout.h"

namespace kq::engine {

enum class PrefixColumn : uint8_t { Time, Cpu, Pid, Tid, Comm, Query, Probe };

/// How `trace packet` prints in text: each event as it comes (as pwru does), the
/// per-packet view when the session ends (as ipftrace2 does), or both.
enum class PacketView : uint8_t { Both, Live, End };

/// How the text sink prints events.
struct TextOptions {
  /// The columns before the selected ones (empty: none); unset: chosen by defaultPrefix.
  std::optional<std::vector<PrefixColumn>> prefix;
  PacketView packets = PacketView::Both;
  /// A struct beneath its event: on one line, its own non-zero members (`compact`), or
  /// every member, nested ones too, a line each (`full`, ksnoop's).
  bool full_structs = false;
};

/// `both`, `live` or `end` (--packet-view); nullopt for anything else.
std::optional<PacketView> parsePacketView(const std::string& text);

/// TIME; PID and COMM unless every probe that prints events selects a column of that name;
/// QUERY (its name or number) when more than one query prints events; PROBE when one
/// query's events come from more than one probe.
std::vector<PrefixColumn> defaultPrefix(const plan::ProgramLayout& layout);

/// `time,pid,comm` (of time, cpu, pid, tid, comm, query, probe), or `none`; nullopt with `error`.
std::optional<std::vector<PrefixColumn>> parsePrefix(const std::string& text, std::string* error);

/// Whether `f` is a column of its probe's line (not hidden, captured, or a stack, which
/// are shown beneath the line).
bool visibleColumn(const plan::FieldLayout& f);

class EventLines {
 public:
  EventLines(const plan::ProgramLayout& layout, const TextOptions& options);

  /// Whether any probe prints events (else there is no header to print).
  bool hasEvents() const { return has_events_; }
  /// The header line.
  std::string header();
  /// `event`'s line: its prefix (`time` and `probe` as shown), then `cells`, the names and
  /// texts of the probe's columns (visibleColumn) in order.
  std::string line(const DecodedEvent& event, const std::string& time, const std::string& probe,
                   const std::vector<std::pair<std::string, std::string>>& cells);
  /// Whether the probes share their columns (one header), or print `name=value` pairs.
  bool sharedColumns() const { return shared_; }

 private:
  std::string prefix(const DecodedEvent* event, const std::string& time, const std::string& probe);
  std::string queryLabel(uint32_t query) const;

  std::vector<PrefixColumn> prefix_;
  std::vector<std::string> query_labels_;  // by query: plan::queryLabel
  std::vector<std::string> names_;     // the selected columns' headers
  std::vector<bool> numeric_;          // right-aligned
  std::vector<size_t> widths_;         // as wide as the widest cell so far
  bool shared_ = true;
  bool formatted_only_ = true;  // every column is a `fmt(...)`
  bool has_events_ = false;
  size_t probe_width_ = 5;
  size_t query_width_ = 5;
};

/// `trace packet`'s events as they come, one line each: TIME, SKB (which packet), CPU, COMM,
/// FUNCTION (`-> ip_rcv` and `<- ip_rcv` with `graph`), the selected values, a drop's reason.
class PacketLines {
 public:
  explicit PacketLines(const plan::ProgramLayout& layout);

  /// Whether any probe is a packet probe.
  bool hasPackets() const { return probe_ != nullptr; }
  std::string header() const;
  /// `values` are the event's visible fields as text.
  std::string line(const DecodedEvent& event, const std::string& time, const std::vector<std::string>& values);

 private:
  const plan::ProbeLayout* probe_ = nullptr;  // the first packet probe: the header's
  size_t function_width_ = 8;
  std::vector<size_t> widths_;
};

}  // namespace kq::engine
