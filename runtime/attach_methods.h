// Which attach method each group of a plan uses: the first one whose programs' kernel
// features are all present (program_plan.h, "The method protocol"). When the kernel still
// refuses a program of the chosen method, its group moves on to the next usable method,
// once per method, so the choice always ends.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/kernel_features.h"
#include "plan/program_plan.h"

namespace kq::runtime {

class AttachMethods {
 public:
  /// `only` (`--attach`): "fentry", "kprobe" (kprobe.multi and kprobes), "kprobe.multi" or
  /// "tracepoint" (packet mode's fallback) keeps the ways to reach kernel functions to that
  /// one; "" allows every method. A packet group (`plan.packet_groups`) has no fentry method.
  AttachMethods(const plan::ProgramPlan& plan, KernelFeatures& features, const std::string& only);

  /// The method `group` loads, or nothing when no method can work here.
  std::optional<uint32_t> chosen(uint32_t group) const;
  /// Whether a load here may ever use `method` of `group`: the chosen one, or one after it
  /// (where a refusal moves on to). The methods before it are passed over on every load.
  bool mayChoose(uint32_t group, uint32_t method) const;
  /// The first group no method can attach, if any (an optional group may attach nothing).
  std::optional<uint32_t> firstUnusable() const;
  /// Whether the plan lets `group` attach nothing (plan.optional_groups).
  bool optional(uint32_t group) const;
  /// The kernel refused a program of `group`'s chosen method (`why`): the group moves to
  /// its next usable method; false when none is left, unless the group is optional.
  bool refuse(uint32_t group, const std::string& why);

  /// "cannot attach to ip_send_skb:\n  fentry: ...\n  kprobe: ...".
  std::string failure(uint32_t group) const;
  /// failure()'s lines after the first: why each method was passed over.
  std::vector<std::string> reasons(uint32_t group) const;
  /// For -v: "ip_send_skb: kprobe (passed over fentry: ...)".
  std::string note(uint32_t group) const;
  size_t groups() const { return groups_.size(); }

 private:
  struct Method {
    uint32_t number = 0;
    plan::Attach first = plan::Attach::Fentry;       // its first attach kind names it
    std::vector<plan::Feature> features;       // what its programs need
    bool kernel_function = false;        // fentry/fexit or kprobes of some kind
    bool chooses = false;                // its group reaches kernel functions: `--attach` applies
    bool fentry = false;                 // fentry/fexit
    bool at_return = false;              // some of its programs run at functions' returns
    /// Helpers its programs call that some kernels refuse in that program family.
    std::vector<std::pair<Helper, HelperUse>> helpers;
  };
  struct Group {
    std::vector<Method> methods;  // by number
    size_t next = 0;              // the chosen one, or methods.size()
    std::vector<std::string> passed_over;  // "fentry: why"
    std::string no_tracepoints;            // a packet group's: why it has no fallback
  };
  /// Why `method` cannot work here, or nothing.
  std::optional<std::string> unusable(const Method& method);
  void settle(Group& group);

  const plan::ProgramPlan& plan_;
  KernelFeatures& features_;
  std::string only_;
  std::vector<Group> groups_;
};

}  // namespace kq::runtime
