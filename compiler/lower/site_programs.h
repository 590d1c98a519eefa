// Programs by probe site. Each query is lowered into parts, one per place it attaches (a
// function's fentry, a tracepoint, a uprobe); then the parts that attach the same way to the
// same place become one program, which runs each query's part in turn. Three queries on
// `tracepoint:net:net_dev_xmit` are one program and one attachment, and 200 queries on one
// tracepoint fit under the kernel's cap on programs per hook (64 for a perf event, 38 for a
// trampoline).
//
// Groups (plan/program_plan.h) fall back together: the parts of two queries share programs
// only where their groups attach to the same places in every method, so the merged group
// chooses its method as each would have alone. A part is a static BPF function the program
// calls with its context (a bpf-to-bpf call: the verifier checks it as part of the program);
// a program with one part has it inlined, so a lone query costs what it did. Before each
// query's part, a program of several queries reads that query's word in the stops map and
// skips the part once the query has ended. Internal to compiler/lower.
#pragma once

namespace kq::lower {

class ObjectBuilder;

/// Makes the plan's programs from the object's parts (call once every part is emitted).
void makeSitePrograms(ObjectBuilder& object);

}  // namespace kq::lower
