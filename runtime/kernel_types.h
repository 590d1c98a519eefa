// The running kernel's types, found by the name the compiler spelled them with.
//
// An event layout names the types it dumps (`struct sk_buff`, `enum skb_drop_reason`,
// `u8[16]`) as well as giving their BTF ids. Ids are only right for the BTF the query was
// compiled against, and a module's types live in its split BTF, so the runtime looks names
// up in the running kernel: vmlinux first, then every module's split BTF in
// /sys/kernel/btf (loaded only when vmlinux lacks a name).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace kq::host {
class BtfView;
}

namespace kq::runtime {

/// A type in one of the kernel's BTF objects, typedefs and modifiers followed.
struct KernelType {
  const host::BtfView* btf = nullptr;
  uint32_t id = 0;
  explicit operator bool() const { return btf && id; }
};

class KernelTypes {
 public:
  /// The kernel whose BTF is in `dir` (`dir`/vmlinux and one split BTF file per module).
  /// `compiled_against`, if given, is that kernel's vmlinux BTF already loaded (by the
  /// compiler): it is used instead of loading the file again, and the layouts' BTF ids are
  /// trusted to be its ids. Without it, ids belong to another BTF (`--btf FILE`) and only
  /// names count, unless `ids_are_this_kernels` (the compiler's copy was freed): then the
  /// file is loaded when a type is first wanted and the ids are trusted.
  explicit KernelTypes(std::string dir = "/sys/kernel/btf",
                       const host::BtfView* compiled_against = nullptr, bool ids_are_this_kernels = false);
  /// The types recorded with a session (record/): `recorded` (owned), and the type each
  /// spelling and each vmlinux id of the recorded layouts stood for. Nothing is read from
  /// the machine, and a name not recorded is looked up in `recorded` only.
  KernelTypes(std::unique_ptr<host::BtfView> recorded, std::unordered_map<std::string, uint32_t> by_spelling,
              std::unordered_map<uint32_t, uint32_t> by_id);
  ~KernelTypes();
  KernelTypes(const KernelTypes&) = delete;
  KernelTypes& operator=(const KernelTypes&) = delete;

  /// The type spelled `spelling`, or an empty KernelType.
  KernelType find(const std::string& spelling);
  /// Type `id` of vmlinux when the layouts' ids are this kernel's, else an empty KernelType.
  KernelType byVmlinuxId(uint32_t id);

 private:
  const host::BtfView* vmlinux();
  const std::vector<std::unique_ptr<host::BtfView>>& modules();

  std::string dir_;
  const host::BtfView* vmlinux_ = nullptr;
  std::unique_ptr<host::BtfView> owned_vmlinux_;
  bool ids_trusted_ = false;
  bool vmlinux_loaded_ = false;
  bool modules_loaded_ = false;
  std::vector<std::unique_ptr<host::BtfView>> modules_;
  std::unordered_map<std::string, KernelType> found_;
  bool recorded_ = false;
  std::unordered_map<uint32_t, uint32_t> recorded_ids_;
};

/// Within one BTF object (a split BTF sees its base's types too), the type spelled
/// `spelling` as the compiler spells types: `struct x`, `union x`, `enum x`, a typedef or
/// integer name, `T *`, `T[N]`. Returns 0 when there is none.
uint32_t findTypeIn(const host::BtfView* btf, const std::string& spelling);

}  // namespace kq::runtime
