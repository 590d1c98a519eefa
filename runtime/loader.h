// Loading and attaching a compiled object with libbpf: open -> configure (autoload only the
// chosen attach method of each group) -> load -> attach, falling back from one method to
// the next (fentry -> kprobe) and saying why each failed. Everything is detached and closed
// when the LoadedObject goes away, on every path.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/program_plan.h"

struct bpf_object;
struct bpf_link;

namespace kq::runtime {

/// Why a load failed in the verifier: which program, which instruction, and its words.
struct VerifierRejection {
  std::string program;     // the BPF program's name
  std::string section;     // its ELF section
  int instruction = -1;    // the rejected instruction's index, when the log names it
  std::string message;     // the verifier's last words ("R1 invalid mem access 'scalar'")
  std::string log;         // the whole log (for -v)
};

struct LoadFailure {
  std::string message;  // what failed and why, for people
  std::optional<VerifierRejection> verifier;
};

class LoadedObject {
 public:
  ~LoadedObject();
  LoadedObject(const LoadedObject&) = delete;
  LoadedObject& operator=(const LoadedObject&) = delete;

  int mapFd(const std::string& name) const;
  /// One line per group, saying which method attached it ("ip_send_skb: kprobe, after fentry
  /// failed: ...").
  const std::vector<std::string>& notes() const { return notes_; }
  size_t attachedLinks() const { return links_.size(); }
  /// With LoadOptions::verifier_log: each loaded program's name and verifier log.
  const std::vector<std::pair<std::string, std::string>>& verifierLogs() const { return logs_; }

 private:
  friend class Loader;
  LoadedObject() = default;
  bpf_object* object_ = nullptr;
  std::vector<bpf_link*> links_;
  std::vector<std::string> notes_;  // from the last, successful attempt
  std::vector<std::pair<std::string, std::string>> logs_;
  std::vector<std::unique_ptr<char[]>> log_buffers_;
};

struct LoadResult {
  std::unique_ptr<LoadedObject> object;
  std::optional<LoadFailure> failure;
};

struct LoadOptions {
  /// Keep the verifier's log of every program (`--dump verifier`).
  bool verifier_log = false;
  /// Attach kernel functions only this way: "fentry" or "kprobe" (`--attach`); "" tries
  /// fentry, then kprobe.
  std::string method;
};

/// Loads `elf` and attaches its programs as `plan` says.
LoadResult loadAndAttach(const std::vector<char>& elf, const ProgramPlan& plan,
                         const LoadOptions& options = {});

}  // namespace kq::runtime
