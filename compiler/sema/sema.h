// Semantic analysis: the AST plus the kernel's BTF becomes a Program in which every probe is
// resolved and every expression typed. Runs as passes (sema.cpp lists them) and stops after
// the first pass that reports errors.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/btf/btf.h"
#include "compiler/diag/diagnostic.h"
#include "host/kernel_info.h"
#include "compiler/sema/program.h"

namespace kq::sema {

/// The result of analysis. It owns the types and the stdlib modules the program refers to.
struct CheckedProgram {
  Program program;
  std::unique_ptr<TypeTable> types;
  std::vector<std::unique_ptr<ast::Script>> modules;
  /// Functions of `use c` files, which ExprInfo::c_function points to (a moved map keeps
  /// its elements where they are).
  std::map<std::string, CFunction, std::less<>> c_functions;
};

std::optional<CheckedProgram> analyze(const ast::Script& script, SourceManager& sources,
                                      const btf::Btf& btf, host::KernelInfo& kernel,
                                      Diagnostics& diags);

/// Where kernel function `name` cannot attach, what stands in for it: its name on other
/// kernels (`this kernel has ...`) and tracepoints of its name (`cap_capable` ->
/// `tracepoint:capability:cap_capable`; `kfree_skb_reason` -> `tracepoint:skb:kfree_skb`),
/// each a note for people.
std::vector<std::string> standInNotes(const btf::Btf& btf, host::KernelInfo& kernel, const std::string& name);

/// `--dump types`: each query's expressions with their types, per probe.
void dumpTypes(const CheckedProgram& checked, const SourceManager& sources, std::ostream& out);

}  // namespace kq::sema
