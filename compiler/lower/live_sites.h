// The companions of a program that is a slot of a live site (plan/live_site.h): the tail
// calls to the slots after its own, and the dispatcher that starts the site. Internal to
// compiler/lower; site_programs.cpp calls it for each program it makes.
#pragma once

#include <string>

#include <llvm/IR/IRBuilder.h>

#include "plan/program_plan.h"

namespace kq::lower {

class ObjectBuilder;

/// Whether `program` attaches to one place in a way a dispatcher can take over: a
/// tracepoint, a function's entry or exit, a uprobe (not a kprobe.multi of many functions,
/// a perf event, or the fork follower that serves the whole session).
bool mayBeLiveSlot(const plan::PlannedProgram& program);

/// Emits, at `b` (where `program` returns), the tail calls to the slots after the one the
/// program holds; adds its slots and slot maps. Returns the stack bytes it uses.
uint32_t emitLiveChain(ObjectBuilder& object, llvm::IRBuilder<>& b, llvm::Function* program,
                       const std::string& function);

/// Emits the dispatcher of `function`'s site, in the same section (so it attaches where
/// `function` would).
void emitLiveDispatcher(ObjectBuilder& object, const std::string& function, const std::string& section,
                        uint32_t offset);

}  // namespace kq::lower
