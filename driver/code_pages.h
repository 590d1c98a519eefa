// kq's own code leaves its resident memory once a query is compiled.
#pragma once

namespace kq::driver {

/// Drops kq's code and read-only data (everything from its ELF header to the end of its
/// code: relocations, constants, unwind tables, functions) from its resident set. The
/// pages stay in the page cache, and what runs later (the runtime's few functions) faults
/// back in; LLVM's code, most of what a compile touched, is not needed again by a one-shot
/// session, which may run for hours. Not under a debugger (its breakpoints are in private
/// copies of these pages); a uprobe on kq's own code set before this is lost the same way.
void dropCodePages();

}  // namespace kq::driver
