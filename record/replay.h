// `kq replay FILE [QUERY]`: a recording of `kq record` printed again as the live run printed
// it (or in another format), or asked a new query over its events in user space. It needs
// no root, no BTF and none of the recorded processes: everything it prints is in the file.
#pragma once

#include <optional>
#include <string>

#include <ostream>

namespace kq::record {

struct ReplayRequest {
  std::string path;
  std::string query;  // empty: print it as recorded
  std::string query_name = "<query>";  // what diagnostics call it (a .kq file's path)
  bool info = false;  // --info: describe the recording
  std::string output_path;  // -o FILE
  // As the live run printed, unless given.
  std::optional<std::string> format, prefix, structs, packet_view;
  std::optional<bool> stack_offsets;
  std::string color = "auto";
};

/// 0 when it was all read and printed; 1 when the recording is unreadable, cut short or
/// corrupted (what was read before is printed), or the query is wrong.
int runReplay(const ReplayRequest& request, std::ostream& out, std::ostream& err);

}  // namespace kq::record
