#include "engine/ring_pace.h"

#include <bpf/bpf.h>

#include <algorithm>

namespace kq::engine {

RingPace::RingPace(int pace_fd, int events_fd) : fd_(pace_fd) {
  if (fd_ < 0) return;
  bpf_map_info info{};
  uint32_t size = sizeof info;
  if (bpf_obj_get_info_by_fd(events_fd, &info, &size) != 0 || info.max_entries < 16) {
    fd_ = -1;
    return;
  }
  wake_at_ = info.max_entries / 4;
}

RingPace::~RingPace() {
  // The programs may outlive the session (a served script's site): they wake as before.
  if (on_timer_) say(0);
}

int RingPace::timeoutMs(int wanted) const {
  return on_timer_ || settling_ ? std::min(wanted, kTickMs) : wanted;
}

void RingPace::afterRead(uint64_t records) {
  if (fd_ < 0) return;
  if (records > 0) {
    quiet_ = 0;
    settling_ = false;
    if (!on_timer_) on_timer_ = say(wake_at_);
    return;
  }
  if (settling_) {
    settling_ = false;
  } else if (on_timer_ && ++quiet_ >= kQuietTicks) {
    // A record submitted between the last read and now woke no one: one more tick reads it.
    say(0);
    on_timer_ = false;
    settling_ = true;
  }
}

bool RingPace::say(uint32_t word) {
  uint32_t key = 0;
  return bpf_map_update_elem(fd_, &key, &word, BPF_ANY) == 0;
}

}  // namespace kq::engine
