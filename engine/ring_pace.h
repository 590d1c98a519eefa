// How the session reads the event ring: asleep until a record wakes it, or, while records
// come, on a short timer that no record interrupts (plan::ProgramPlan::pace_map).
#pragma once

#include <cstdint>

namespace kq::engine {

/// A wakeup costs the traced thread an interrupt of its CPU (an irq_work) for each record
/// submitted while the reader has read everything; a reader that keeps up is woken by every
/// record. So once records come, the reader reads every millisecond instead and tells the
/// programs to wake nobody, but for the record that fills the ring a quarter full; after
/// a while with nothing, it sleeps until woken again.
class RingPace {
 public:
  static constexpr int kTickMs = 1;
  static constexpr int kQuietTicks = 16;

  /// `pace_fd` is the object's pace map (-1: an object made before it, whose records wake
  /// the reader as the kernel chooses); `events_fd` its ring, whose size sets the mark.
  RingPace(int pace_fd, int events_fd);
  ~RingPace();
  RingPace(const RingPace&) = delete;
  RingPace& operator=(const RingPace&) = delete;

  /// How long the next wait may be, at most `wanted` ms.
  int timeoutMs(int wanted) const;
  /// After a read that consumed `records`.
  void afterRead(uint64_t records);
  bool onTimer() const { return on_timer_; }

 private:
  bool say(uint32_t word);

  int fd_;
  uint32_t wake_at_ = 0;
  bool on_timer_ = false;
  bool settling_ = false;  // just went to sleep: one more tick, for records submitted before it said so
  int quiet_ = 0;
};

}  // namespace kq::engine
