#include "runtime/attach_methods.h"

#include <linux/bpf.h>

#include <algorithm>

#include <fmt/format.h>

namespace kq::runtime {
namespace {

bool isKernelFunction(plan::Attach a) {
  return a == plan::Attach::Fentry || a == plan::Attach::Fexit || a == plan::Attach::Kprobe ||
         a == plan::Attach::Kretprobe || a == plan::Attach::KprobeMulti || a == plan::Attach::KretprobeMulti;
}

/// The program family whose rules a helper call in a program of `attach` follows; nothing
/// for families whose helpers kq does not probe.
std::optional<HelperUse> helperUse(plan::Attach a) {
  if (a == plan::Attach::Fentry || a == plan::Attach::Fexit) return HelperUse::Fentry;
  if (isKernelFunction(a)) return HelperUse::Kprobe;
  return std::nullopt;
}

/// The probed helper with BPF helper id `id`; nothing for helpers every kernel kq runs on
/// allows.
std::optional<Helper> probedHelper(int id) {
  if (id == BPF_FUNC_get_func_ip) return Helper::FuncIp;
  if (id == BPF_FUNC_get_attach_cookie) return Helper::AttachCookie;
  return std::nullopt;
}

/// Whether `--attach only` allows a method whose programs start with `first`.
bool allowedBy(const std::string& only, plan::Attach first) {
  if (only == "fentry") return first == plan::Attach::Fentry || first == plan::Attach::Fexit;
  if (only == "kprobe") {
    return first == plan::Attach::Kprobe || first == plan::Attach::Kretprobe || first == plan::Attach::KprobeMulti ||
           first == plan::Attach::KretprobeMulti;
  }
  if (only == "kprobe.multi") return first == plan::Attach::KprobeMulti || first == plan::Attach::KretprobeMulti;
  if (only == "tracepoint") return first == plan::Attach::TpBtf || first == plan::Attach::Tracepoint;
  return true;
}

std::string groupName(const plan::ProgramPlan& plan, uint32_t group) {
  return group < plan.group_names.size() ? plan.group_names[group]
                                         : fmt::format("probe {}", group + 1);
}

}  // namespace

AttachMethods::AttachMethods(const plan::ProgramPlan& plan, KernelFeatures& features,
                             const std::string& only)
    : plan_(plan), features_(features), only_(only) {
  groups_.resize(plan.group_names.size());
  for (const plan::PlannedProgram& p : plan.programs) {
    if (p.group >= groups_.size()) groups_.resize(p.group + 1);
    std::vector<Method>& methods = groups_[p.group].methods;
    if (p.method >= methods.size()) methods.resize(p.method + 1);
    Method& m = methods[p.method];
    m.number = p.method;
    // Named after its first attach kind: fentry (with fexit), kprobe (with kretprobe).
    if (m.features.empty() || p.attach < m.first) m.first = p.attach;
    plan::Feature f = plan::featureOf(p.attach);
    if (std::find(m.features.begin(), m.features.end(), f) == m.features.end()) {
      m.features.push_back(f);
    }
    m.kernel_function = m.kernel_function || isKernelFunction(p.attach);
    m.fentry = m.fentry || p.attach == plan::Attach::Fentry || p.attach == plan::Attach::Fexit;
    m.at_return = m.at_return || p.attach == plan::Attach::Fexit || p.attach == plan::Attach::Kretprobe ||
                  p.attach == plan::Attach::KretprobeMulti;
    auto use = helperUse(p.attach);
    for (int id : p.helpers) {
      auto helper = probedHelper(id);
      if (!use || !helper) continue;
      std::pair<Helper, HelperUse> needed{*helper, *use};
      if (std::find(m.helpers.begin(), m.helpers.end(), needed) == m.helpers.end()) {
        m.helpers.push_back(needed);
      }
    }
  }
  for (uint32_t g : plan.packet_groups) {
    if (g >= groups_.size()) continue;
    Group& group = groups_[g];
    auto tracepoints = [](const Method& m) { return !m.kernel_function && !m.features.empty(); };
    auto returns = [](const Method& m) { return m.at_return; };
    if (std::none_of(group.methods.begin(), group.methods.end(), tracepoints)) {
      group.no_tracepoints =
          std::any_of(group.methods.begin(), group.methods.end(), returns)
              ? "tp_btf: not planned (`graph` needs each function's return, which tracepoints "
                "do not have)"
              : "tp_btf: not planned (the tracepoints that carry an skb are compiled in where "
                "the kernel has no kprobes, or with --attach tracepoint, when the globs match some)";
    }
    if (only_ == "fentry") {
      group.passed_over.push_back(
          "fentry: packet mode has no fentry method (it would take a program per function; "
          "kprobe.multi takes one for all)");
    }
  }
  for (Group& g : groups_) {
    bool functions = std::any_of(g.methods.begin(), g.methods.end(), [](const Method& m) { return m.kernel_function; });
    for (Method& m : g.methods) m.chooses = functions;
    settle(g);
  }
}

std::optional<std::string> AttachMethods::unusable(const Method& method) {
  if (method.features.empty()) return std::string("the plan has no programs for it");
  // `--attach` chooses among the ways to reach kernel functions (packet mode's tracepoints
  // among them): groups with one way only, such as a tracepoint's, are not its business.
  if (!only_.empty() && method.chooses && !allowedBy(only_, method.first)) {
    return fmt::format("not tried (--attach {})", only_);
  }
  for (plan::Feature f : method.features) {
    if (auto why = features_.missing(f)) return why;
  }
  // A kernel can offer kprobes yet refuse bpf_get_func_ip in them (before 5.15), so a
  // method whose programs call it would load nowhere: pass it over with the kernel's reason.
  for (const auto& [helper, use] : method.helpers) {
    if (auto why = features_.missing(helper, use)) return why;
  }
  return std::nullopt;
}

void AttachMethods::settle(Group& group) {
  while (group.next < group.methods.size()) {
    const Method& m = group.methods[group.next];
    auto why = unusable(m);
    if (!why) return;
    group.passed_over.push_back(fmt::format("{}: {}", plan::attachName(m.first), *why));
    ++group.next;
  }
}

std::optional<uint32_t> AttachMethods::chosen(uint32_t group) const {
  if (group >= groups_.size()) return std::nullopt;
  const Group& g = groups_[group];
  if (g.next >= g.methods.size()) return std::nullopt;
  return g.methods[g.next].number;
}

bool AttachMethods::mayChoose(uint32_t group, uint32_t method) const {
  return group >= groups_.size() || method >= groups_[group].next;
}

std::optional<uint32_t> AttachMethods::firstUnusable() const {
  for (uint32_t g = 0; g < groups_.size(); ++g) {
    if (!groups_[g].methods.empty() && !chosen(g) && !optional(g)) return g;
  }
  return std::nullopt;
}

bool AttachMethods::optional(uint32_t group) const {
  return std::find(plan_.optional_groups.begin(), plan_.optional_groups.end(), group) != plan_.optional_groups.end();
}

bool AttachMethods::refuse(uint32_t group, const std::string& why) {
  if (group >= groups_.size()) return false;
  Group& g = groups_[group];
  if (g.next >= g.methods.size()) return false;
  g.passed_over.push_back(fmt::format("{}: {}", plan::attachName(g.methods[g.next].first), why));
  ++g.next;
  settle(g);
  return g.next < g.methods.size() || optional(group);
}

std::string AttachMethods::failure(uint32_t group) const {
  std::string out = fmt::format("cannot attach to {}:", groupName(plan_, group));
  for (const std::string& why : reasons(group)) out += "\n  " + why;
  return out;
}

std::vector<std::string> AttachMethods::reasons(uint32_t group) const {
  std::vector<std::string> out;
  bool none_tried = true;
  if (group < groups_.size()) {
    for (const std::string& why : groups_[group].passed_over) {
      out.push_back(why);
      none_tried = none_tried && why.find("not tried (--attach") != std::string::npos;
    }
    if (!groups_[group].no_tracepoints.empty()) out.push_back(groups_[group].no_tracepoints);
  }
  // `--attach` ruled every method out: say what the methods are, and why.
  if (none_tried && !only_.empty() && group < plan_.group_notes.size() && !plan_.group_notes[group].empty()) {
    out.push_back(fmt::format("(kq's methods here: {})", plan_.group_notes[group]));
  }
  return out;
}

std::string AttachMethods::note(uint32_t group) const {
  std::string out = groupName(plan_, group);
  auto method = chosen(group);
  if (!method) return out + ": not attached";
  out += fmt::format(": {}", plan::attachName(groups_[group].methods[*method].first));
  const auto& passed = groups_[group].passed_over;
  for (size_t i = 0; i < passed.size(); ++i) {
    out += (i == 0 ? " (passed over " : "; ") + passed[i];
  }
  return passed.empty() ? out : out + ")";
}

}  // namespace kq::runtime
