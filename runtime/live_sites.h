// Whoever keeps a front end's live sites (plan/live_site.h), as a load sees them: the REPL
// keeps them in its own process, beyond any one job, so that a job on a place another
// job attached to only puts its program in a free slot of that site. A load without one
// attaches every program itself, as always.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "plan/program_plan.h"

namespace kq::runtime {

class LiveSites {
 public:
  virtual ~LiveSites() = default;

  struct FreeSlot {
    int slots_fd = -1;  // the site's PROG_ARRAY, open in this process
    uint32_t slot = 0;
  };
  /// A site attached at `place` with a free slot, if there is one.
  virtual std::optional<FreeSlot> find(const std::string& place) = 0;
  /// This job is about to put its program in `slot` of the site at `place`: said first, so
  /// that the slot is emptied when the job ends, however it ends.
  virtual void joining(const std::string& place, uint32_t slot) = 0;
  /// This job attached the site at `place` (`link_fd`, its dispatcher's attachment) with the
  /// slots `slots_fd`, its own program in slot 0: the keeper keeps both open, so the site
  /// outlives the job while other jobs hold slots.
  virtual void made(const std::string& place, int link_fd, int slots_fd) = 0;
  /// This job emptied `slot` of the site whose slots are `slots_fd` (its program can no
  /// longer run): the slot is free again.
  virtual void leaving(int slots_fd, uint32_t slot) = 0;
};

/// Sites kept in the process that loads the objects (kq serve's scripts): each site is held
/// while some object holds a slot of it, and detached when the last one leaves.
class LocalSites : public LiveSites {
 public:
  LocalSites() = default;
  ~LocalSites() override;
  LocalSites(const LocalSites&) = delete;
  LocalSites& operator=(const LocalSites&) = delete;

  std::optional<FreeSlot> find(const std::string& place) override;
  void joining(const std::string& place, uint32_t slot) override;
  void made(const std::string& place, int link_fd, int slots_fd) override;
  void leaving(int slots_fd, uint32_t slot) override;
  size_t sites() const;

 private:
  struct Site {
    std::string place;
    int link_fd = -1;
    int slots_fd = -1;
    uint32_t map_id = 0;  // the slots map's, whatever descriptor a loader has of it
    std::vector<bool> held;
  };
  mutable std::mutex mutex_;
  std::vector<Site> sites_;
};

/// The kernel's id of the map `fd` (0 if it cannot say).
uint32_t mapId(int fd);

/// Where and how `program` attaches, as one string: two programs with the same place can be
/// slots of one site.
std::string livePlace(const plan::PlannedProgram& program);

}  // namespace kq::runtime
