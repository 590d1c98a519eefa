// Everything the command line asked for, parsed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kq::driver {

struct Request {
  std::optional<std::string> expression;  // -e
  std::string input;                      // a query or a script file
  std::string dump;                       // --dump ast|types|ir|bpf|verifier
  std::string color = "auto";
  std::string btf;   // --btf
  std::string what;  // info, list
  // Running
  std::string format = "text";  // -f text|json
  std::string output_path;      // -o FILE: events there, not on standard output
  std::string prefix;           // --prefix time,pid,...|none; "": chosen for the query
  std::string packet_view = "both";  // --packet-view live|end|both
  bool stack_offsets = false;        // --stack-offsets: a stack key's frames keep their offsets
  std::string structs = "compact";   // --structs compact|full
  uint32_t pid = 0;             // -p
  std::string command;          // -c
  std::string duration;         // -d, as written (`10s`)
  bool verbose = false;         // -v
  std::string buffer;           // --buffer-size, as written (`256k`, `8M`, or KiB); "": from the query
  std::string attach;           // --attach fentry|kprobe
  bool repl = false;            // --repl
  bool dry_run = false;         // --dry-run: load and attach, say how, detach, exit
  // Recording (`kq record`)
  std::string record_path;   // -o FILE
  std::string max_size;      // --max-size, as written (`1G`); "": no limit
  bool quiet = false;        // -q: record without printing
  uint32_t packet_bytes = 0; // --packet-bytes N: each skb probe keeps N bytes of its packet
  // Building (`kq build`)
  bool build = false;
  std::string object_path;  // -o FILE
  bool ipft = false;        // --ipft: an ipftrace2 extension
};

}  // namespace kq::driver
