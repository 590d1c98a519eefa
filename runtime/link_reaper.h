// Detaching after the output. A perf event's detach (a classic tracepoint, a kprobe, a
// uprobe) waits for the kernel: an RCU grace period under a lock every such detach takes,
// about 40 ms each and one after another (a uprobe's about 100 ms; 1,600 kprobes a minute).
// A session's end need not wait for it: the programs of such links check their queries'
// words in the stops map (plan::PlannedProgram::checks_stops), so with the words set they
// do nothing, and their links are kept here. When kq has written everything it will write,
// `reapAfterExit` hands them to a process of their own, which holds nothing else (no
// terminal, no pipe a reader waits on) and closes them; kq's exit and status wait for none
// of it. Every link is a file descriptor, so whatever ends the reaper, its exit detaches the
// rest: nothing stays in the kernel.
#pragma once

#include <vector>

struct bpf_link;

namespace kq::runtime {

/// Detaches `links` now, from several threads (where the kernel's waits overlap).
void detachLinks(std::vector<bpf_link*> links);

/// Keeps `link` (its program's words set: it does nothing more) to be detached after kq's
/// output by `reapAfterExit`, or as the process exits.
void keepForReaper(bpf_link* link);

/// Closes `fd` (a link's, the last descriptor of it) from a thread of its own, so that the
/// caller (a process that runs on: the REPL's keeper of sites) does not wait for the
/// kernel's detach. Returns once the descriptor is gone from the process's table, so that a
/// process forked after it does not inherit it.
void closeInBackground(int fd);

/// Whether any link waits for the reaper.
bool reaperHasLinks();

/// Called as the process is about to exit, its output written: forks the reaper, which
/// detaches the kept links, and closes this process's descriptors but standard input,
/// output and error (so that its exit waits for nothing); the caller then ends with _exit
/// (its memory, shared with the reaper until written, is best left alone). Without kept
/// links, or if the fork fails, it detaches them here.
void reapAfterExit();

}  // namespace kq::runtime
