#include "runtime/privileges.h"

#include <gtest/gtest.h>

namespace kq::runtime {
namespace {

constexpr uint64_t bit(int cap) { return uint64_t{1} << cap; }

TEST(Privileges, BpfAndPerfmonAreEnoughWithoutRoot) {
  EXPECT_TRUE(missingTracingCapabilities(bit(38) | bit(39)).empty());
  EXPECT_TRUE(missingTracingCapabilities(bit(21)).empty());  // CAP_SYS_ADMIN holds both
}

TEST(Privileges, NamesWhatIsMissing) {
  EXPECT_EQ(missingTracingCapabilities(0), (std::vector<std::string>{"CAP_BPF", "CAP_PERFMON"}));
  EXPECT_EQ(missingTracingCapabilities(bit(39)), std::vector<std::string>{"CAP_PERFMON"});
}

}  // namespace
}  // namespace kq::runtime
