// When a query ends by itself: after its `for`, or once `limit` of its events were printed.
// Part of the plan: `kq build` writes them into the object, `kq run` honours them.
#pragma once

#include <cstdint>

namespace kq::plan {

/// One query's `for` and `limit`; 0: none.
struct QueryLimits {
  uint64_t for_ns = 0;
  uint64_t limit = 0;
};

}  // namespace kq::plan
