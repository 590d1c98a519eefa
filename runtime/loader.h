// Loading and attaching a compiled object with libbpf: open -> configure (autoload only the
// attach method each group chose from the kernel's features, attach_methods.h) -> load ->
// attach, saying why methods were passed over. Everything is detached and closed
// when the LoadedObject goes away, on every path.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/kernel_features.h"
#include "runtime/live_sites.h"
#include "runtime/stop_words.h"
#include "plan/program_plan.h"
#include "runtime/verifier_log.h"

struct bpf_object;
struct bpf_link;
struct btf;
namespace kq::host {
class BtfView;
}

namespace kq::runtime {

struct LoadFailure {
  std::string message;  // what failed and why, for people
  std::optional<VerifierRejection> verifier;
  /// A group no attach method was left for: which (plan::ProgramPlan::group_names), and
  /// why each method was passed over (`fentry: ...`), for a diagnostic at its probe.
  std::optional<uint32_t> group = std::nullopt;
  std::vector<std::string> reasons = {};
};

class LoadedObject {
 public:
  ~LoadedObject();
  LoadedObject(const LoadedObject&) = delete;
  LoadedObject& operator=(const LoadedObject&) = delete;

  int mapFd(const std::string& name) const;
  /// The loaded programs' file descriptors (for their run counts, `kq serve`'s self metrics).
  std::vector<int> programFds() const;
  /// One line per group, saying which method attached it and why the methods before it
  /// were passed over ("ip_send_skb: kprobe (passed over fentry: ...)").
  const std::vector<std::string>& notes() const { return notes_; }
  size_t attachedLinks() const { return links_.size(); }
  /// Where a group's programs attached: `2,390 functions through kprobe.multi`, `30
  /// tracepoints through tp_btf` (returns not counted twice).
  std::string attachedText(uint32_t group) const;
  /// For each packet group: `packet (2,395 functions): ready, 2,390 functions through
  /// kprobe.multi`, so a user (or a script) knows when to send the packet.
  std::vector<std::string> readyLines(const plan::ProgramPlan& plan) const;
  /// The links of programs that run `query`'s parts (shared ones included).
  size_t attachedLinks(uint32_t query) const;
  /// Ends one query (its `for` or `limit` ended it): its word in the stops map is set, so
  /// programs it shares with other queries skip its parts, and the programs whose queries
  /// have all ended are detached.
  void detach(uint32_t query);
  /// Detaches every program: nothing more is counted or written (the session is ending).
  /// With LoadOptions::defer_detach, those whose detach waits are stopped by their words
  /// and detached after the output instead.
  void detachAll();
  /// Runs the programs of `trace begin` (or `trace end`, or the iterators of `iter:`:
  /// `which` is Attach::Begin, End or Iter) in kq's own process, but not those of queries
  /// that ended; the first call for each runs them, later ones do nothing. What failed, in
  /// words, or nothing.
  std::optional<std::string> runOnce(plan::Attach which);
  /// Whether the object has `begin` programs and iterators and nothing else: once they ran,
  /// nothing more can happen.
  bool onlyRunsAtStart() const;
  /// With LoadOptions::verifier_log: each loaded program's name and verifier log.
  const std::vector<std::pair<std::string, std::string>>& verifierLogs() const { return logs_; }

 private:
  friend class Loader;
  LoadedObject() = default;
  bpf_object* object_ = nullptr;
  struct Link {
    bpf_link* link;                 // null for a slot of a site another job attached
    std::vector<uint32_t> queries;  // empty: serves the whole session
    /// A slot of a live site (plan/live_site.h): the site's slots and the one held. Its
    /// program stops when taken out of the slot; a site this job made stays attached
    /// while its keeper holds it.
    int slots_fd = -1;
    uint32_t slot = 0;
    /// Its program checks its queries' words (plan::PlannedProgram::checks_stops).
    bool stoppable = false;
    bool serves(uint32_t query) const;
  };
  /// Ends `links`: empties their slots (then waits until no program can still be running
  /// from one), then detaches the rest.
  void release(std::vector<Link> links) const;
  std::vector<Link> links_;
  struct RunOnce {
    int fd;  // the program's; an iterator's link's
    plan::Attach attach;
    std::vector<uint32_t> queries;
    bpf_link* link = nullptr;  // an iterator's, destroyed with the object
  };
  std::vector<RunOnce> run_once_;  // `begin` and `end` programs, attached to nothing
  std::set<plan::Attach> ran_;     // which of them ran
  LiveSites* sites_ = nullptr;  // the keeper of the sites its slots are in
  std::set<uint32_t> ended_;
  StopWords stops_;
  /// LoadOptions::defer_detach.
  bool defer_detach_ = false;
  struct Places {
    plan::Attach attach;
    size_t count = 0;
    std::vector<std::string> tracepoints;  // `net:net_dev_xmit`, where it attached to tracepoints
  };
  std::map<uint32_t, Places> places_;  // by group
  std::vector<std::string> notes_;
  /// The optional groups (plan.optional_groups) that attached nothing: why, by group.
  std::map<uint32_t, std::string> left_out_;
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
  /// What the kernel offers (the engine's Host's); null: the running kernel, probed now.
  KernelFeatures* features = nullptr;
  /// The running kernel's vmlinux BTF, if the caller has parsed it (the compiler has): the
  /// running kernel's feature probes read it rather than parsing their own copy.
  const host::BtfView* vmlinux = nullptr;
  /// Called once the attach methods are chosen (the probes are done with `vmlinux`), before
  /// libbpf loads the object (and, for an object without `vmlinux_attach_id`, parses vmlinux
  /// BTF itself for its relocations): a caller that needs `vmlinux` no more frees it here,
  /// so two copies never take memory at once.
  std::function<void()> vmlinux_done;
  /// Given for an object compiled against the running kernel's BTF, by this process or by
  /// this kq for this kernel (the object cache): the vmlinux BTF id a tp_btf, fentry or
  /// fexit program attaches to (its tracepoint's `btf_trace_` typedef, its function), or 0
  /// where vmlinux has none (a module's function: libbpf finds it). The object's CO-RE
  /// relocations are then left out, since against that BTF they change nothing
  /// (own_btf_load.h): with neither relocations nor attach ids to find, libbpf never
  /// parses vmlinux BTF. Called before `vmlinux_done`.
  std::function<uint32_t(plan::Attach attach, const std::string& target)> vmlinux_attach_id;
  /// The traced process (-p, or -c's command, started and waiting): where a watchpoint on a
  /// user-space address is opened.
  pid_t process = 0;
  /// The front end's live sites, for an object compiled with LowerOptions::live_sites: a
  /// program whose place has a site with a free slot takes it, and attaches nothing; one
  /// whose place has none attaches a site and hands it to `sites`.
  LiveSites* sites = nullptr;
  /// A process that ends with its session (a one-shot command, a REPL job): the links whose
  /// detach waits for the kernel, their programs stopped by their words, are left to be
  /// detached after the output (runtime/link_reaper.h), and the process calls
  /// `reapAfterExit` as it ends. Not for a process that runs on (`kq serve`).
  bool defer_detach = false;
};

/// Which of `plan`'s programs a load with `options` could ever use, by index: each group's
/// chosen method and the ones after it. A live run compiles only these (for a glob of 400
/// functions at exit, on a kernel that refuses fentry, that halves the compile); when some
/// group has no usable method, every program, so the load says why as it would.
std::vector<bool> programsThisKernelMayLoad(const plan::ProgramPlan& plan, const LoadOptions& options);

/// Loads `elf` and attaches its programs as `plan` says.
LoadResult loadAndAttach(const std::vector<char>& elf, const plan::ProgramPlan& plan,
                         const LoadOptions& options = {});

}  // namespace kq::runtime
