// What kq asks of C: the interface between kq and its Clang plugin (libkq-c.so, built from
// compiler/c/clang/). Plain structs only: no Clang or LLVM type crosses it (the plugin has
// its own LLVM, libLLVM-16.so, and kq links its own statically), so code travels as
// bitcode and positions as file, line and column. kq loads the plugin on demand
// (compiler/c/c_plugin.h): a query that uses no C never maps it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kq::c {

/// Bumped whenever a struct below or CFrontend changes: kq refuses a plugin of another.
constexpr uint32_t kInterfaceVersion = 4;

/// One of Clang's diagnostics, at a place in a C file (line and column 1-based; 0: none).
struct CDiagnostic {
  enum class Level : uint8_t { Error, Warning, Note };
  Level level = Level::Error;
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
  std::string message;
};

/// Where and how to read C. `file` is a header or source; a relative one is looked for in
/// `directory` first, then in the machine's system include paths.
struct CInput {
  std::string file;
  std::string directory;
};

struct Macro {
  std::string name;
  int64_t value = 0;
};

struct MacroResult {
  /// False when `file` was not found: nothing else is set.
  bool found = false;
  /// The header's path as Clang opened it, and every file it includes, directly or not.
  std::string path;
  std::vector<std::string> included;
  /// Object-like macros with the prefix whose expansion is an integer constant
  /// expression, in the order the headers define them.
  std::vector<Macro> macros;
  /// How many macros had the prefix (those that are not integers included).
  uint32_t with_prefix = 0;
  /// Errors of the header itself.
  std::vector<CDiagnostic> diagnostics;
};

/// A header's types as BTF: Clang compiles, for the BPF target with debug information, a
/// translation unit declaring `__kq_type_N`, a pointer to each struct, union, enum and
/// typedef the header itself defines (not its system headers), and writes the object.
struct HeaderTypesResult {
  bool found = false;
  /// Errors of the header; without them the object at `object_path` has a .BTF section.
  std::vector<CDiagnostic> diagnostics;
};

/// A C type at a function's boundary, as kq can pass it: an integer or a pointer.
struct CScalar {
  enum class Kind : uint8_t { Void, Int, Pointer, Other };
  Kind kind = Kind::Other;
  uint32_t bytes = 0;
  bool is_signed = false;
  std::string spelling;  // as C writes it: `unsigned int`, `struct ipv6hdr *`
};

struct CFunctionSignature {
  std::string name;
  CScalar return_type;
  std::vector<CScalar> params;
  uint32_t line = 0;  // of its definition in the file
};

/// `use c "helpers.c"`: the file compiled for the BPF target (-O2) into LLVM bitcode, and
/// the signatures of the functions it defines with external linkage (the callable ones).
struct CCompileResult {
  bool found = false;
  std::string path;
  std::string bitcode;
  std::vector<CFunctionSignature> functions;
  std::vector<CDiagnostic> diagnostics;  // errors, with their notes
};

/// A C file compiled as `clang -target bpf -O2 -g -c` would (ipftrace2's extensions).
struct CObjectResult {
  bool found = false;
  std::vector<CDiagnostic> diagnostics;  // errors, with their notes
};

class CFrontend {
 public:
  virtual ~CFrontend() = default;
  /// `#include`s `input.file` and evaluates its object-like macros starting with `prefix`.
  virtual MacroResult macros(const CInput& input, const std::string& prefix) = 0;
  /// Writes an object whose BTF holds the types of header `input.file` to `object_path`.
  virtual HeaderTypesResult headerTypes(const CInput& input, const std::string& object_path) = 0;
  /// Compiles C file `input.file` for the BPF target into bitcode.
  virtual CCompileResult compileC(const CInput& input) = 0;
  /// Compiles C file `input.file` for the BPF target (-O2 -g, then `args`) into the object
  /// `object_path`.
  virtual CObjectResult compileObject(const CInput& input, const std::vector<std::string>& args,
                                      const std::string& object_path) = 0;
};

}  // namespace kq::c

/// The plugin's one entry point: its CFrontend, if it speaks `version` of the interface.
extern "C" kq::c::CFrontend* kq_c_frontend(uint32_t version);
