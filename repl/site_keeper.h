// The interactive session's live sites (plan/live_site.h), kept in the session's own process
// beyond any one job: the first job on a place attaches a site and hands it here (its
// attachment and its slots, over the job's channel); a job started later on the same place
// takes a free slot and attaches nothing; a site no job holds a slot of is detached.
//
// Each job gets, when it is forked, a view of the sites (their slots' descriptors, open in
// the child since it is a fork) and its end of a channel, a SOCK_SEQPACKET socket pair whose
// messages say which slot it takes ("J site slot") or which site it made ("M place" with the
// two descriptors, SCM_RIGHTS). Jobs start one at a time (the prompt waits for a background
// job to attach), so a view is never stale about slots taken, only about slots freed since.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/live_sites.h"

namespace kq::repl {

class SiteKeeper {
 public:
  SiteKeeper() = default;
  ~SiteKeeper();
  SiteKeeper(const SiteKeeper&) = delete;
  SiteKeeper& operator=(const SiteKeeper&) = delete;

  /// A site as a job forked now sees it.
  struct View {
    uint64_t id = 0;
    std::string place;
    int slots_fd = -1;
    int link_fd = -1;  // the job closes it: only the keeper holds a site attached
    std::vector<bool> held;
  };
  std::vector<View> view() const;

  /// Reads what job `job` said on `channel` (the keeper's end) so far.
  void read(int channel, uint64_t job);
  /// Job `job` ended: its slots are emptied.
  void ended(uint64_t job);
  /// Detaches the sites no job holds a slot of (not while a job is starting: its view may
  /// name one).
  void closeUnheld();
  size_t sites() const { return sites_.size(); }

 private:
  struct Site {
    uint64_t id = 0;
    std::string place;
    int link_fd = -1;
    int slots_fd = -1;
    std::map<uint32_t, uint64_t> holders;  // slot -> job
  };
  std::vector<Site> sites_;
  uint64_t next_id_ = 1;
};

/// A job's side of the keeper, in its own process: the view it was forked with, and its
/// end of the channel.
class JobSites : public runtime::LiveSites {
 public:
  /// Closes the views' attachments in this process (the keeper holds them).
  JobSites(std::vector<SiteKeeper::View> view, int channel);
  std::optional<FreeSlot> find(const std::string& place) override;
  void joining(const std::string& place, uint32_t slot) override;
  void made(const std::string& place, int link_fd, int slots_fd) override;
  /// Nothing to say: the keeper empties a job's slots when the job ends.
  void leaving(int, uint32_t) override {}

 private:
  std::vector<SiteKeeper::View> view_;
  int channel_;
};

}  // namespace kq::repl
