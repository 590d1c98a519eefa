// When a query ends by itself: after its `for`, or once `limit` of its events were printed.
// Part of the plan: `kq build` writes them into the object, `kq run` honours them.
#pragma once

#include <cstdint>

#include "plan/contract.h"

namespace kq::plan {

/// One query's `for` and `limit`; 0: none.
struct QueryLimits {
  uint64_t for_ns = 0;
  uint64_t limit = 0;

  template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
    visit("for_ns", self.for_ns...);
    visit("limit", self.limit...);
  }
};

}  // namespace kq::plan
