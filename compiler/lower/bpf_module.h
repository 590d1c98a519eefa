// An LLVM module for the BPF target with what every kq object needs: BTF-defined maps
// (described through debug info, as libbpf expects), the license, helper calls, debug
// locations that point into kq source, and emission to an ELF object at -O2.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <llvm/IR/DIBuilder.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "compiler/diag/result.h"
#include "compiler/diag/source.h"

namespace kq::lower {

/// BPF helper ids (include/uapi/linux/bpf.h).
enum class Helper : int {
  MapLookupElem = 1,
  MapUpdateElem = 2,
  MapDeleteElem = 3,
  KtimeGetNs = 5,
  GetSmpProcessorId = 8,
  TailCall = 12,
  GetCurrentPidTgid = 14,
  GetCurrentUidGid = 15,
  GetCurrentComm = 16,
  GetStackId = 27,
  GetCurrentTask = 35,
  GetStack = 67,
  GetCurrentCgroupId = 80,
  ProbeReadUser = 112,
  ProbeReadKernel = 113,
  ProbeReadUserStr = 114,
  ProbeReadKernelStr = 115,
  RingbufReserve = 131,
  RingbufSubmit = 132,
  RingbufQuery = 134,
  GetCurrentTaskBtf = 158,
  GetFuncIp = 173,
  GetAttachCookie = 174,
};

/// BPF map types (the subset kq uses).
enum class MapType : int {
  Hash = 1, Array = 2, ProgArray = 3, PercpuHash = 5, PercpuArray = 6, LruHash = 9, Ringbuf = 27,
};

/// BPF_F_NO_PREALLOC: a hash map's entries are allocated when added, not when it is made.
inline constexpr uint32_t kMapNoPrealloc = 1;
/// BPF_F_MMAPABLE: an array user space maps and writes in place.
inline constexpr uint32_t kMapMmapable = 1u << 10;

struct MapSpec {
  std::string name;
  MapType type;
  uint32_t max_entries;
  uint32_t key_size = 0;    // 0 for a ring buffer
  uint32_t value_size = 0;
  uint32_t flags = 0;
};

/// An error LLVM reported while compiling (the BPF stack limit, an unsupported operation),
/// at the kq source position its instruction's debug location names (0: unknown).
struct CodegenProblem {
  std::string message;
  uint32_t line = 0;
  uint32_t column = 0;
};

/// Compiled output: the ELF object, and on request its IR and assembly.
struct EmittedObject {
  std::vector<char> elf;
  std::string ir;   // filled when asked (--dump ir)
  std::string asm_text;  // filled when asked (--dump bpf, verifier error mapping)
};

class BpfModule {
 public:
  /// `source` is the kq text the module is compiled from; debug locations point into it.
  BpfModule(const std::string& name, const SourceFile& source);
  ~BpfModule();

  llvm::LLVMContext& context() { return *context_; }
  llvm::Module& module() { return *module_; }
  llvm::DIBuilder& di() { return *di_; }
  llvm::DIFile* file() { return file_; }
  llvm::DICompileUnit* unit() { return unit_; }

  /// Declares a BTF-defined map and returns its global.
  llvm::GlobalVariable* addMap(const MapSpec& spec);
  /// A map's global whose definition (`describeMap`) comes once its size is known.
  llvm::GlobalVariable* declareMap(const std::string& name);
  /// Gives a declared map its definition; returns the global that replaces `global`.
  llvm::GlobalVariable* describeMap(llvm::GlobalVariable* global, const MapSpec& spec);

  /// Starts a program: `int name(void *ctx)` in ELF section `section`, declared at byte
  /// `offset` of the kq source (its probe).
  llvm::Function* addProgram(const std::string& name, const std::string& section,
                             uint32_t offset = 0);
  /// A part of a program: `static int name(void *ctx)`, in no section, that a program calls
  /// with its context (site_programs.h).
  llvm::Function* addPart(const std::string& name, uint32_t offset = 0);
  /// Makes part `fn` (of addPart) the program `name` itself, when it is its site's only
  /// part; false (and `fn` unchanged) where its code is not all in its own scope.
  bool adoptPart(llvm::Function* fn, const std::string& name, const std::string& section,
                 uint32_t offset);

  /// Takes the program `name` out of the module before it is optimized or emitted.
  void dropProgram(const std::string& name);

  /// The helpers the program `fn` calls, in the order first called.
  std::vector<int> helpersOf(const llvm::Function* fn) const;

  /// Calls a helper through its constant address, as clang does.
  llvm::Value* callHelper(llvm::IRBuilder<>& b, Helper helper, llvm::Type* ret,
                          std::vector<llvm::Value*> args);

  /// A debug location for a byte offset of the kq source (line and column).
  llvm::DebugLoc location(llvm::DISubprogram* scope, uint32_t offset);

  /// Optimizes (-O2) and emits the object; `want_ir` and `want_asm` add the text forms.
  /// LLVM's own errors never end the process: they fail the emit, and `problems()` says
  /// what they were and where.
  Result<EmittedObject> emit(bool want_ir, bool want_asm);
  const std::vector<CodegenProblem>& problems() const { return problems_; }

  /// Function `name` of a `use c` file's bitcode (compiled for BPF by the C plugin),
  /// linked into the module the first time the file is used, each of its functions
  /// internal and always inlined (c_linking.cpp); an Error when the bitcode is unreadable.
  Result<llvm::Function*> cFunction(const std::string& bitcode, const std::string& name);

 private:
  llvm::Function* addFunction(const std::string& name, uint32_t offset, bool local);
  llvm::DISubprogram* subprogram(const std::string& name, uint32_t offset, bool local);
  llvm::DIType* intDi(uint32_t bytes);
  llvm::DIType* arrayOfIntsDi(uint32_t count);

  std::unique_ptr<llvm::LLVMContext> context_;
  std::unique_ptr<llvm::Module> module_;
  std::unique_ptr<llvm::DIBuilder> di_;
  llvm::DIFile* file_ = nullptr;
  llvm::DICompileUnit* unit_ = nullptr;
  const SourceFile& source_;
  std::map<uint32_t, llvm::DIType*> int_di_;
  std::vector<CodegenProblem> problems_;
  std::map<const llvm::Function*, std::vector<int>> helpers_;
  std::map<const std::string*, bool> linked_c_;  // bitcode already linked
};

}  // namespace kq::lower
