// Whoever keeps a front end's live sites (plan/live_site.h), as a load sees them: the REPL
// keeps them in its own process, beyond any one job, so that a job on a place another
// job attached to only puts its program in a free slot of that site. A load without one
// attaches every program itself, as always.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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
};

/// Where and how `program` attaches, as one string: two programs with the same place can be
/// slots of one site.
std::string livePlace(const plan::PlannedProgram& program);

}  // namespace kq::runtime
