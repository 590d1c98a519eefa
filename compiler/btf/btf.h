// kq's view of the kernel's types: vmlinux BTF (plus module BTF, loaded only when a name is
// not in vmlinux) with name indexes built once. A thin layer over host::BtfView (the
// blobs read where they lie); everything above it names types as BtfType values.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compiler/diag/result.h"

struct btf;
namespace kq::host {
class BtfView;
}
struct btf_type;

namespace kq::btf {

using TypeId = uint32_t;

/// One BTF blob: vmlinux, or a module's split BTF on top of vmlinux.
struct BtfFile {
  std::string name;  // "vmlinux", a module name, or the path given to --btf
  const host::BtfView* btf = nullptr;
  /// A C header's types (`use "myapp.h"`): user-space memory, laid out as written, so
  /// read at fixed offsets, never relocated against the kernel's types.
  bool user_space = false;
  /// The view `btf` points into, when this file owns it.
  std::shared_ptr<const host::BtfView> owned;
};

/// A type in a particular BTF file. Id 0 is `void`.
struct BtfType {
  const BtfFile* file = nullptr;
  TypeId id = 0;

  const ::btf_type* get() const;
  std::string_view name() const;
  bool isVoid() const { return id == 0; }
  /// The type behind typedefs, const, volatile, restrict and type tags.
  BtfType resolved() const;
  /// Size in bytes (after resolving), or 0 when it has none.
  uint64_t size() const;
  /// How C would declare it: `struct sk_buff *`, `unsigned int`, `u32`.
  std::string declaration() const;
  /// `declaration()` with a name: `struct sk_buff *skb`, `char name[16]`.
  std::string declaration(std::string_view var_name) const;

  bool operator==(const BtfType& o) const { return file == o.file && id == o.id; }
  bool operator!=(const BtfType& o) const { return !(*this == o); }
};

/// A kernel function's signature, from its BTF FUNC and FUNC_PROTO.
struct FunctionParam {
  std::string name;  // may be empty when BTF has none
  BtfType type;
};

struct Function {
  std::string name;
  BtfType func;  // the FUNC
  BtfType return_type;
  std::vector<FunctionParam> params;
  bool variadic = false;
  std::string module;  // "" for vmlinux

  /// `int ip_send_skb(struct net *net, struct sk_buff *skb)`.
  std::string prototype() const;
};

struct Enumerator {
  BtfType enum_type;
  std::string name;
  int64_t value;
};

/// The enumerators of one enum whose names share a prefix (`enum_name(x, "TCP_")`).
struct EnumeratorGroup {
  BtfType enum_type;
  std::vector<Enumerator> enumerators;  // in declaration order
};

/// The kernel's BTF with indexes by name.
class Btf {
 public:
  /// The running kernel's BTF from /sys/kernel/btf (modules loaded on demand).
  static Result<std::unique_ptr<Btf>> loadRunningKernel();
  /// BTF from a file: raw BTF (a copy of /sys/kernel/btf/vmlinux) or an ELF with a .BTF
  /// section. No module BTF.
  static Result<std::unique_ptr<Btf>> loadFile(const std::string& path);
  /// Takes `btf` (tests build one with btf__new_empty and btf__add_*): copies its bytes
  /// and frees it.
  static std::unique_ptr<Btf> adopt(::btf* btf, std::string name);
  /// Takes a view already read.
  static std::unique_ptr<Btf> adopt(std::unique_ptr<host::BtfView> view, std::string name);

  ~Btf();
  Btf(const Btf&) = delete;
  Btf& operator=(const Btf&) = delete;

  /// Where the BTF came from, for messages: "/sys/kernel/btf/vmlinux" or a path.
  const std::string& origin() const { return origin_; }

  std::optional<Function> findFunction(std::string_view name) const;
  /// Every function name in vmlinux (and, if `with_modules`, in every module), sorted.
  std::vector<std::string_view> functionNames(bool with_modules = false) const;
  /// Names of the functions that match a glob (`tcp_*`), in name order.
  std::vector<std::string_view> matchFunctionNames(std::string_view glob,
                                                   bool with_modules = true) const;
  /// Functions whose names match a glob (`tcp_*`), in name order.
  std::vector<Function> matchFunctions(std::string_view glob, bool with_modules = true) const;

  /// Every function (modules included, tracepoint handlers not) with a pointer to
  /// `struct <name>` among its first `max_position` parameters, and where the first is.
  std::vector<std::pair<Function, uint32_t>> functionsTaking(std::string_view name,
                                                              uint32_t max_position) const;
  /// Tracepoints of vmlinux (their `btf_trace_<event>` typedefs) with a pointer to struct
  /// `name` among their arguments: each event's handler and that argument's index among the
  /// event's own (a tp_btf context's slot). Each Function is named after its event and has
  /// the handler's parameters (`void *__data` first), unnamed.
  std::vector<std::pair<Function, uint32_t>> tracepointsTaking(std::string_view name) const;
  /// Every tracepoint of vmlinux by its `btf_trace_<event>` typedef: raw tracepoints
  /// without a tracefs event (`sched_update_nr_running_tp`) too.
  std::vector<std::string> tracepointNames() const;

  std::optional<BtfType> findStruct(std::string_view name) const;
  std::optional<BtfType> findUnion(std::string_view name) const;
  std::optional<BtfType> findEnum(std::string_view name) const;
  std::optional<BtfType> findTypedef(std::string_view name) const;
  std::optional<Enumerator> findEnumerator(std::string_view name) const;
  /// Every enum, anonymous ones included, with enumerators named `prefix...`, in BTF order:
  /// vmlinux's, or the modules' when vmlinux has none.
  std::vector<EnumeratorGroup> enumeratorsWithPrefix(std::string_view prefix) const;
  /// Every enumerator's name (for did-you-mean hints).
  std::vector<std::string_view> enumeratorNames() const;
  /// Names of all structs (for did-you-mean hints).
  std::vector<std::string_view> structNames() const;

  /// A tracepoint's BTF handler, whose parameters after the first (`__data`) are the tp_btf
  /// arguments: `__bpf_trace_<event>`, or for an event of a DEFINE_EVENT template the
  /// prototype of `btf_trace_<event>` named as its template's handler (tracepoints.cpp).
  std::optional<Function> findTracepointHandler(std::string_view event) const;

  /// Builds every part of the name index now, which lookups otherwise build as they need
  /// it: a long-lived session does it before its first query, and what it forks shares it.
  void indexAll() const { (void)index(kFunctions | kTypes | kEnumerators); }

  const BtfFile& vmlinux() const { return files_.front(); }
  /// Marks this BTF as a C header's types (BtfFile::user_space).
  void markUserSpace() { files_.front().user_space = true; }
  Function functionOf(BtfType func, const std::string& module) const;

 private:
  Btf() = default;
  struct Index;
  static constexpr uint8_t kFunctions = 1, kTypes = 2, kEnumerators = 4;
  const Index& index(uint8_t part) const;
  /// A named type of BTF kind `kind`, by scanning or through the index `part`.
  std::optional<BtfType> find(std::string_view name, uint8_t part, uint16_t kind,
                              bool with_modules) const;
  void buildIndex(const BtfFile& file, uint8_t parts) const;
  void loadModules() const;
  /// findTracepointHandler among the files loaded so far.
  std::optional<Function> loadedTracepointHandler(std::string_view event) const;
  /// The handler of the template whose prototype `proto` is (tracepoints.cpp).
  Function templateHandler(std::string_view event, BtfType typedef_type, BtfType proto) const;

  std::string origin_;
  bool can_load_modules_ = false;
  mutable bool modules_loaded_ = false;
  // files_[0] is vmlinux; modules follow. A deque keeps BtfFile pointers valid as modules
  // are added.
  mutable std::deque<BtfFile> files_;
  mutable std::unique_ptr<Index> index_;
  mutable int scans_ = 0;
};

/// A member reached by name from a struct or union, through anonymous members: each step
/// is (record, BTF member index), outermost first; `type` is the member's, resolved.
struct MemberSteps {
  std::vector<std::pair<BtfType, uint32_t>> steps;
  BtfType type;
};
std::optional<MemberSteps> findMemberSteps(BtfType record, std::string_view name);

/// Whether two structs (or unions) are one type: the same BTF type, or, in two BTF files (a
/// module's own copy of a vmlinux struct, as nf_tables' `struct nf_hook_state` may be), as C
/// takes two translation units' types: by kind, tag and size. A C header's struct is never
/// the kernel's.
bool sameRecord(BtfType a, BtfType b);

/// glob(7)-style matching with `*` and `?`.
bool globMatch(std::string_view pattern, std::string_view text);

/// The first parameter of `f` (from `first`, below `max_position`) that points to struct `name`.
std::optional<uint32_t> parameterPointingTo(const Function& f, std::string_view name,
                                            uint32_t first, uint32_t max_position);

}  // namespace kq::btf
