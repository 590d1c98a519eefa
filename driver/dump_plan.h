// `kq --dump plan`: what a query costs before anything loads: its programs by group and
// attach method, the BPF stack each uses, and every map with its size and kernel memory.
#pragma once

#include <ostream>
#include <vector>

#include "plan/program_plan.h"

namespace kq::driver {

/// `left_out` (by program index, may be empty): programs not compiled, because the running
/// kernel can never load their method.
void dumpPlan(const plan::ProgramPlan& plan, std::ostream& out, const std::vector<bool>& left_out = {});

/// `4.0 MiB`, `512 B`.
std::string byteSize(uint64_t bytes);

}  // namespace kq::driver
