// State shared by the semantic passes of one compilation (internal to compiler/sema).
#pragma once

#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/btf/btf.h"
#include "compiler/diag/diagnostic.h"
#include "host/kernel_info.h"
#include "compiler/sema/program.h"
#include "compiler/sema/types.h"

namespace kq::sema {

/// The `let`s and `fn`s visible to a script: its own and those of the modules it uses.
/// Functions with exactly one typed parameter are also properties of that type.
struct Declarations {
  std::map<std::string, const ast::LetDecl*, std::less<>> lets;
  std::map<std::string, const ast::FnDecl*, std::less<>> fns;
  /// Types of `let` constants, filled in as they are checked (in name order, and each
  /// earlier where another's value uses it).
  std::map<const ast::LetDecl*, ExprInfo> let_info;
  /// The `let`s being checked, to catch one whose value uses itself.
  std::set<const ast::LetDecl*> lets_in_progress;
  /// Which module declared each fn or let ("" for the script).
  std::map<const void*, std::string> origin;
};

struct Context {
  const ast::Script& script;
  SourceManager& sources;
  const btf::Btf& btf;
  host::KernelInfo& kernel;
  TypeTable& types;
  Diagnostics& diags;

  Declarations decls;
  /// Parsed stdlib modules (owned here so AST pointers stay valid).
  std::vector<std::unique_ptr<ast::Script>> modules;
  /// Every stdlib function usable as a property, loaded on first need.
  std::map<std::string, std::vector<const ast::FnDecl*>, std::less<>> properties;
  bool properties_loaded = false;
  std::set<std::string> property_modules;  // stdlib modules whose properties are loaded
  /// Each stdlib `fn` and the module declaring it, and each module's `fn`s: a body calls
  /// the functions of its own module, whether or not the script `use`s it.
  std::map<const ast::FnDecl*, const ast::Script*> fn_home;
  std::map<const ast::Script*, std::map<std::string, const ast::FnDecl*, std::less<>>> module_fns;
  /// `fn` bodies expanded inline so far in the whole program, against kMaxFnExpansions.
  size_t fn_expansions = 0;
  /// Types of `use "myapp.h"` headers by their C names (`struct req`, `req_t`), found
  /// before the kernel's; and the header each is from.
  std::map<std::string, btf::BtfType, std::less<>> header_types = {};
  std::map<std::string, std::string, std::less<>> header_of_type = {};
  /// Functions of `use c "file.c"` files, by name.
  std::map<std::string, CFunction, std::less<>> c_functions = {};

  /// Parses the stdlib module `name` once; null when there is no such module.
  const ast::Script* loadModule(const std::string& name);
  /// Loads the properties that could be named `name` (every property when it is empty).
  void loadProperties(std::string_view name = "");
};

/// Reads the types of every `use "header.h"` into `header_types` (c_declarations.cpp).
void loadHeaderTypes(Context& ctx);

/// The kq type named in a cast or parameter, or the error type after reporting why not.
const Type* resolveTypeName(Context& ctx, const ast::TypeName& name);

/// The kq type of a C type as tracefs writes it (`const char *`, `__data_loc char[]`).
const Type* typeFromCString(Context& ctx, const std::string& c_type, uint32_t size,
                            bool is_signed);

/// Resolves one probe target against the kernel (reports unknown names).
std::optional<ResolvedTarget> resolveTarget(Context& ctx, const ast::Target& target);

/// A tracepoint typed by its BTF handler, typed by its classic record instead: `because`
/// is the record's field the query named (probes.cpp).
void typeByRecord(ResolvedTarget& target, const std::string& because);

/// Types by their classic record the tracepoints of `query` (its probes' and its joins')
/// whose expressions name a field of the record that nothing else is: no argument of the
/// handler, builtin, `let`, property (tracepoint_record.cpp).
void chooseTracepointRecords(Context& ctx, ResolvedQuery& query);

/// `event` -> `category:event` for those of `events` tracefs lists (probes.cpp).
std::map<std::string, std::string> tracepointNames(Context& ctx, const std::set<std::string>& events);
std::map<std::string, std::string> tracepointNames(host::KernelInfo& kernel, const std::set<std::string>& events);

/// `packet`: the functions and tracepoints a packet is seen at (packet_target.cpp).
std::optional<ResolvedTarget> resolvePacket(Context& ctx, const ast::Target& target,
                                            const ast::PacketTarget& packet);

/// Resolves the sources of a query's joins (check_joins.cpp).
void resolveJoins(Context& ctx, ResolvedQuery& query);

/// Type-checks each join's own `where` and its side of `on` (check_joins.cpp).
void checkJoins(Context& ctx, ResolvedQuery& query);

/// Type-checks the query's side of each join's `on` in one of its probes.
void checkJoinKeys(Context& ctx, ResolvedQuery& query, ResolvedProbe& probe);

/// Once the query's expressions are checked (each join's `stored` is whole): each join that
/// feeds another, checked to keep the same values under the same query key.
void checkJoinFeeders(Context& ctx, ResolvedQuery& query);

/// The script's `config` settings, into `program.config` (config.cpp).
void readConfig(Context& ctx, Program& program);

/// Type-checks the expressions of each query in each of its probes.
void checkQueries(Context& ctx, Program& program);

/// Type-checks each `extension`'s clauses, with `skb` in scope.
void checkExtensions(Context& ctx, Program& program);

/// Lays an extension's `select` items out as ipftrace2's event struct, reporting values it
/// cannot print and data over its 64 bytes (extension_layout.cpp).
void layOutExtension(Context& ctx, ResolvedExtension& ext);

/// Type-checks `let` values and functions whose parameters all have types.
void checkDeclarations(Context& ctx);

/// Type-checks one `let`'s value, once, into `ctx.decls.let_info`.
void checkLet(Context& ctx, const ast::LetDecl& let);

/// Rules about a query as a whole: aggregates and `group by`, `every`.
void checkQueryShape(Context& ctx, ResolvedQuery& query);

}  // namespace kq::sema
