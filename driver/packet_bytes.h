// `--packet-bytes N` (and `-f pcapng`): every query that prints events at probes with one
// `struct sk_buff *` (and `trace packet`) keeps, in hidden columns, the first N bytes of its
// packet from the network header, the packet's length from there and how much of it was
// readable, and the task's network namespace: what a pcap-ng sink writes.
#pragma once

#include <cstdint>

#include "compiler/ast/ast.h"
#include "compiler/diag/source.h"
#include "compiler/sema/sema.h"
#include "engine/sinks.h"

namespace kq::driver {

/// Adds the hidden columns to each query of `script` that `checked` (its first check) says
/// has packets; returns how many. The script must be checked again.
size_t addPacketColumns(ast::Script& script, const sema::CheckedProgram& checked, uint32_t bytes,
                        SourceManager& sources);

}  // namespace kq::driver
