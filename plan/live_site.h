// Live sites: queries added to a place another job already attached to, without attaching
// anything new (the REPL's jobs; docs/hacking.md, "Queries on shared programs, and queries
// added live").
//
// An object compiled with LowerOptions::live_sites gives each program that attaches to one
// place (a tracepoint, a function, a uprobe) three companions, named after it:
// - `<program>_slots`, a PROG_ARRAY of kLiveSlots slots: the site. Its programs run in slot
//   order, each tail-calling the slots after its own once it is done;
// - `<program>_slot`, an ARRAY of one u32: which slot the program holds (the loader writes
//   it before putting the program in its slot);
// - `<program>_site`, the dispatcher: attached where the program would be, it tail-calls
//   the first slot that holds a program.
// The first job on a place loads and attaches its dispatcher and hands the attachment and
// the slots to whoever keeps sites (runtime/live_sites.h); a later job loads its program with
// that slots map and puts it in a free slot: nothing is attached, and taking it out of its
// slot stops it at once. The kernel allows 33 tail calls an event (MAX_TAIL_CALL_CNT): the
// dispatcher's and one a slot, so kLiveSlots is 32. A slot holds a job's whole program (all
// its queries on that place), so this is 32 jobs a place, not 32 queries.
#pragma once

#include <cstdint>
#include <string>

namespace kq::plan {

inline constexpr uint32_t kLiveSlots = 32;

inline std::string liveSlotsMap(const std::string& program) { return program + "_slots"; }
inline std::string liveSlotMap(const std::string& program) { return program + "_slot"; }
inline std::string liveDispatcher(const std::string& program) { return program + "_site"; }

}  // namespace kq::plan
