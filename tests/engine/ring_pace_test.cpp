// The session's pace on the event ring: asleep until woken, on a timer while records come,
// back to sleep after a quiet while, said to the programs through a real pace map.
#include "engine/ring_pace.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>

namespace kq::engine {
namespace {

class RingPaceTest : public testing::Test {
 protected:
  void SetUp() override {
    pace_ = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ring_pace", 4, 4, 1, nullptr);
    ring_ = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "events", 0, 0, 256 << 10, nullptr);
    if (pace_ < 0 || ring_ < 0) GTEST_SKIP() << "cannot make a BPF map here (needs root): " << std::strerror(errno);
  }
  void TearDown() override {
    if (pace_ >= 0) close(pace_);
    if (ring_ >= 0) close(ring_);
  }
  uint32_t word() const {
    uint32_t key = 0, value = 12345;
    EXPECT_EQ(bpf_map_lookup_elem(pace_, &key, &value), 0);
    return value;
  }

  int pace_ = -1;
  int ring_ = -1;
};

TEST_F(RingPaceTest, RecordsPutTheReaderOnATimerWithAMarkAQuarterOfTheRing) {
  RingPace pace(pace_, ring_);
  EXPECT_EQ(pace.timeoutMs(1000), 1000);  // asleep until woken
  pace.afterRead(0);
  EXPECT_EQ(word(), 0u);
  pace.afterRead(3);
  EXPECT_TRUE(pace.onTimer());
  EXPECT_EQ(word(), (256u << 10) / 4);
  EXPECT_EQ(pace.timeoutMs(1000), RingPace::kTickMs);
  EXPECT_EQ(pace.timeoutMs(0), 0);  // never later than the session wants
}

TEST_F(RingPaceTest, AQuietWhileSleepsAfterOneMoreTick) {
  RingPace pace(pace_, ring_);
  pace.afterRead(1);
  for (int i = 0; i < RingPace::kQuietTicks - 1; ++i) pace.afterRead(0);
  EXPECT_TRUE(pace.onTimer());
  pace.afterRead(5);  // a record restarts the quiet count
  for (int i = 0; i < RingPace::kQuietTicks - 1; ++i) pace.afterRead(0);
  EXPECT_TRUE(pace.onTimer());
  pace.afterRead(0);
  EXPECT_FALSE(pace.onTimer());
  EXPECT_EQ(word(), 0u);
  // One more tick reads what was submitted before the programs knew.
  EXPECT_EQ(pace.timeoutMs(1000), RingPace::kTickMs);
  pace.afterRead(0);
  EXPECT_EQ(pace.timeoutMs(1000), 1000);
}

TEST_F(RingPaceTest, TheProgramsWakeAsBeforeOnceTheSessionEnds) {
  {
    RingPace pace(pace_, ring_);
    pace.afterRead(1);
    EXPECT_NE(word(), 0u);
  }
  EXPECT_EQ(word(), 0u);
}

TEST(RingPace, AnObjectWithoutAPaceMapIsWokenByItsRecords) {
  RingPace pace(-1, -1);
  pace.afterRead(100);
  EXPECT_FALSE(pace.onTimer());
  EXPECT_EQ(pace.timeoutMs(1000), 1000);
}

}  // namespace
}  // namespace kq::engine
