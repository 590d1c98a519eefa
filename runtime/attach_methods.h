// Which attach method each group of a plan uses: the first one whose programs' kernel
// features are all present (program_plan.h, "The method protocol"). When the kernel still
// refuses a program of the chosen method, its group moves on to the next usable method,
// once per method, so the choice always ends.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/kernel_features.h"
#include "runtime/program_plan.h"

namespace kq::runtime {

class AttachMethods {
 public:
  /// `only`: "fentry" or "kprobe" (`--attach`) keeps kernel functions to that family; ""
  /// allows every method. A packet group (`plan.packet_groups`) then keeps to its kernel
  /// functions: its tracepoints are a fallback only without `--attach`, and it has no
  /// fentry method at all.
  AttachMethods(const ProgramPlan& plan, KernelFeatures& features, const std::string& only);

  /// The method `group` loads, or nothing when no method can work here.
  std::optional<uint32_t> chosen(uint32_t group) const;
  /// The first group no method can attach, if any.
  std::optional<uint32_t> firstUnusable() const;
  /// The kernel refused a program of `group`'s chosen method (`why`): the group moves to
  /// its next usable method; false when none is left.
  bool refuse(uint32_t group, const std::string& why);

  /// "cannot attach to ip_send_skb:\n  fentry: ...\n  kprobe: ...".
  std::string failure(uint32_t group) const;
  /// For -v: "ip_send_skb: kprobe (passed over fentry: ...)".
  std::string note(uint32_t group) const;
  size_t groups() const { return groups_.size(); }

 private:
  struct Method {
    uint32_t number = 0;
    Attach first = Attach::Fentry;       // its first attach kind names it
    std::vector<Feature> features;       // what its programs need
    bool kernel_function = false;        // fentry/fexit or kprobes of some kind
    bool fentry = false;                 // fentry/fexit
    bool at_return = false;              // some of its programs run at functions' returns
    /// Helpers its programs call that some kernels refuse in that program family.
    std::vector<std::pair<Helper, HelperUse>> helpers;
  };
  struct Group {
    std::vector<Method> methods;  // by number
    size_t next = 0;              // the chosen one, or methods.size()
    std::vector<std::string> passed_over;  // "fentry: why"
    bool packet = false;                   // `trace packet`: functions, else tracepoints
    std::string no_tracepoints;            // a packet group's: why it has no fallback
  };
  /// Why `method` of `group` cannot work here, or nothing.
  std::optional<std::string> unusable(const Group& group, const Method& method);
  void settle(Group& group);

  const ProgramPlan& plan_;
  KernelFeatures& features_;
  std::string only_;
  std::vector<Group> groups_;
};

}  // namespace kq::runtime
