// `kq --dump plan`: what a query costs before anything loads: its programs by group and
// attach method, the BPF stack each uses, and every map with its size and kernel memory.
#pragma once

#include <ostream>

#include "plan/program_plan.h"

namespace kq::driver {

void dumpPlan(const plan::ProgramPlan& plan, std::ostream& out);

/// `4.0 MiB`, `512 B`.
std::string byteSize(uint64_t bytes);

}  // namespace kq::driver
