#include "runtime/attach_methods.h"

#include <map>

#include <gtest/gtest.h>

namespace kq::runtime {
namespace {

/// A kernel offering every feature except those given a reason.
class FakeKernel : public KernelFeatures {
 public:
  std::map<plan::Feature, std::string> absent;
  std::map<std::pair<Helper, HelperUse>, std::string> refused_helpers;
  int probes = 0;
  std::optional<std::string> missing(plan::Feature feature) override {
    ++probes;
    auto it = absent.find(feature);
    if (it == absent.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> missing(Helper helper, HelperUse use) override {
    auto it = refused_helpers.find({helper, use});
    if (it == refused_helpers.end()) return std::nullopt;
    return it->second;
  }
};

plan::PlannedProgram program(const std::string& name, plan::Attach attach, uint32_t group, uint32_t method) {
  plan::PlannedProgram p;
  p.function = name;
  p.attach = attach;
  p.group = group;
  p.method = method;
  return p;
}

/// `trace ip_send_skb select return`: fentry + fexit, then kprobe + kretprobe.
plan::ProgramPlan functionAtExit() {
  plan::ProgramPlan plan;
  plan.group_names = {"ip_send_skb"};
  plan.programs = {program("e0", plan::Attach::Fentry, 0, 0), program("x0", plan::Attach::Fexit, 0, 0),
                   program("e1", plan::Attach::Kprobe, 0, 1), program("x1", plan::Attach::Kretprobe, 0, 1)};
  return plan;
}

TEST(AttachMethods, TakesTheFirstMethodTheKernelOffers) {
  FakeKernel kernel;
  plan::ProgramPlan plan = functionAtExit();
  AttachMethods methods(plan, kernel, "");
  EXPECT_EQ(methods.chosen(0), 0u);
  EXPECT_EQ(methods.note(0), "ip_send_skb: fentry");
}

TEST(AttachMethods, SkipsAMethodWhoseFeatureIsMissing) {
  FakeKernel kernel;
  kernel.absent[plan::Feature::Trampoline] = "the kernel refused loading a fentry program (EPERM)";
  plan::ProgramPlan plan = functionAtExit();
  AttachMethods methods(plan, kernel, "");
  EXPECT_EQ(methods.chosen(0), 1u);
  EXPECT_FALSE(methods.firstUnusable());
  EXPECT_EQ(methods.note(0),
            "ip_send_skb: kprobe (passed over fentry: the kernel refused loading a fentry "
            "program (EPERM))");
}

TEST(AttachMethods, NamesEveryMethodWhenNoneWorks) {
  FakeKernel kernel;
  kernel.absent[plan::Feature::Trampoline] = "no trampolines";
  kernel.absent[plan::Feature::Kprobe] = "no kprobes";
  plan::ProgramPlan plan = functionAtExit();
  AttachMethods methods(plan, kernel, "");
  EXPECT_EQ(methods.firstUnusable(), 0u);
  EXPECT_EQ(methods.failure(0),
            "cannot attach to ip_send_skb:\n  fentry: no trampolines\n  kprobe: no kprobes");
}

/// `trace packet` with an XDP program loaded: kprobe.multi for the functions, and fexit on
/// the program in a group that may attach nothing.
plan::ProgramPlan packetWithProgram() {
  plan::ProgramPlan plan;
  plan.group_names = {"packet (2 functions, 1 BPF program)", "the XDP and TC programs of packet"};
  plan.programs = {program("m", plan::Attach::KprobeMulti, 0, 0), program("k", plan::Attach::Kprobe, 0, 1),
                   program("x", plan::Attach::Fexit, 1, 0)};
  plan.packet_groups = {0};
  plan.optional_groups = {1};
  plan.packet_program_groups = {1};
  return plan;
}

TEST(AttachMethods, AnOptionalGroupMayAttachNothing) {
  FakeKernel kernel;
  kernel.absent[plan::Feature::Trampoline] = "no trampolines";
  plan::ProgramPlan plan = packetWithProgram();
  AttachMethods methods(plan, kernel, "");
  EXPECT_EQ(methods.chosen(0), 0u);
  EXPECT_FALSE(methods.chosen(1));
  EXPECT_FALSE(methods.firstUnusable());  // the rest loads without it
  EXPECT_EQ(methods.reasons(1), std::vector<std::string>{"fexit: no trampolines"});
}

TEST(AttachMethods, AnOptionalGroupTheKernelRefusesIsLeftOut) {
  FakeKernel kernel;
  plan::ProgramPlan plan = packetWithProgram();
  AttachMethods methods(plan, kernel, "");
  EXPECT_EQ(methods.chosen(1), 0u);
  // A refusal leaves nothing to try, and the load goes on: a required group's would end it.
  EXPECT_TRUE(methods.refuse(1, "EPERM"));
  EXPECT_FALSE(methods.chosen(1));
  EXPECT_FALSE(methods.firstUnusable());
  EXPECT_TRUE(methods.refuse(0, "no kprobe.multi"));
  EXPECT_FALSE(methods.refuse(0, "no kprobes"));
  EXPECT_EQ(methods.firstUnusable(), 0u);
}

TEST(AttachMethods, AttachOptionKeepsOneFamily) {
  FakeKernel kernel;
  plan::ProgramPlan plan = functionAtExit();
  plan.group_names.push_back("sched_switch");
  plan.programs.push_back(program("t", plan::Attach::TpBtf, 1, 0));
  AttachMethods kprobe(plan, kernel, "kprobe");
  EXPECT_EQ(kprobe.chosen(0), 1u);
  EXPECT_EQ(kprobe.chosen(1), 0u);  // not a kernel function: untouched
  AttachMethods fentry(plan, kernel, "fentry");
  EXPECT_EQ(fentry.chosen(0), 0u);
  kernel.absent[plan::Feature::Trampoline] = "no trampolines";
  AttachMethods none(plan, kernel, "fentry");
  EXPECT_EQ(none.failure(0),
            "cannot attach to ip_send_skb:\n  fentry: no trampolines\n  kprobe: not tried "
            "(--attach fentry)");
}

/// `trace packet`: kprobe.multi, then a kprobe per function, then the skb tracepoints.
plan::ProgramPlan packetFunctions() {
  plan::ProgramPlan plan;
  plan.group_names = {"packet (2 functions)"};
  plan.packet_groups = {0};
  plan.programs = {program("m", plan::Attach::KprobeMulti, 0, 0), program("k", plan::Attach::Kprobe, 0, 1),
                   program("t0", plan::Attach::TpBtf, 0, 2), program("t1", plan::Attach::TpBtf, 0, 2)};
  return plan;
}

TEST(AttachMethods, PacketModeAttachOptionChoosesAmongItsMethods) {
  FakeKernel kernel;
  kernel.absent[plan::Feature::KprobeMulti] = "no kprobe.multi";
  kernel.absent[plan::Feature::Kprobe] = "no kprobes";
  plan::ProgramPlan plan = packetFunctions();
  EXPECT_EQ(AttachMethods(plan, kernel, "").chosen(0), 2u);
  EXPECT_EQ(AttachMethods(plan, kernel, "tracepoint").chosen(0), 2u);
  AttachMethods kprobe(plan, kernel, "kprobe");
  EXPECT_EQ(kprobe.firstUnusable(), 0u);
  EXPECT_EQ(kprobe.failure(0),
            "cannot attach to packet (2 functions):\n  kprobe.multi: no kprobe.multi\n  kprobe: "
            "no kprobes\n  tp_btf: not tried (--attach kprobe)");
  FakeKernel full;
  EXPECT_EQ(AttachMethods(plan, full, "kprobe.multi").chosen(0), 0u);
  EXPECT_EQ(AttachMethods(plan, full, "tracepoint").chosen(0), 2u);
}

TEST(AttachMethods, PacketModeHasNoFentryMethod) {
  FakeKernel kernel;
  plan::ProgramPlan plan = packetFunctions();
  EXPECT_EQ(AttachMethods(plan, kernel, "kprobe").chosen(0), 0u);
  AttachMethods fentry(plan, kernel, "fentry");
  EXPECT_EQ(fentry.firstUnusable(), 0u);
  EXPECT_EQ(fentry.failure(0),
            "cannot attach to packet (2 functions):\n  fentry: packet mode has no fentry method "
            "(it would take a program per function; kprobe.multi takes one for all)\n  "
            "kprobe.multi: not tried (--attach fentry)\n  kprobe: not tried (--attach fentry)\n  "
            "tp_btf: not tried (--attach fentry)");
}

TEST(AttachMethods, PacketGraphSaysWhyItHasNoTracepoints) {
  FakeKernel kernel;
  kernel.absent[plan::Feature::KprobeMulti] = "no kprobe.multi";
  kernel.absent[plan::Feature::Kprobe] = "no kprobes";
  plan::ProgramPlan plan;
  plan.group_names = {"packet (2 functions)"};
  plan.packet_groups = {0};
  plan.programs = {program("m", plan::Attach::KprobeMulti, 0, 0), program("mr", plan::Attach::KretprobeMulti, 0, 0),
                   program("k", plan::Attach::Kprobe, 0, 1), program("kr", plan::Attach::Kretprobe, 0, 1)};
  AttachMethods methods(plan, kernel, "");
  EXPECT_EQ(methods.firstUnusable(), 0u);
  EXPECT_EQ(methods.failure(0),
            "cannot attach to packet (2 functions):\n  kprobe.multi: no kprobe.multi\n  kprobe: "
            "no kprobes\n  tp_btf: not planned (`graph` needs each function's return, which "
            "tracepoints do not have)");
}

TEST(AttachMethods, ARefusedProgramMovesOnlyItsGroupAndEnds) {
  FakeKernel kernel;
  plan::ProgramPlan plan = functionAtExit();
  plan.group_names.push_back("tcp_sendmsg");
  plan.programs.push_back(program("f", plan::Attach::Fentry, 1, 0));
  plan.programs.push_back(program("k", plan::Attach::Kprobe, 1, 1));
  AttachMethods methods(plan, kernel, "");
  EXPECT_TRUE(methods.refuse(1, "the kernel refused attaching a fentry program"));
  EXPECT_EQ(methods.chosen(0), 0u);
  EXPECT_EQ(methods.chosen(1), 1u);
  EXPECT_FALSE(methods.refuse(1, "no such function"));
  EXPECT_FALSE(methods.chosen(1));
  EXPECT_FALSE(methods.refuse(1, "again"));
  EXPECT_EQ(methods.failure(1),
            "cannot attach to tcp_sendmsg:\n  fentry: the kernel refused attaching a fentry "
            "program\n  kprobe: no such function");
}

TEST(AttachMethods, ForcedFailureHidesOneAttachKind) {
  FakeKernel kernel;
  WithoutAttach features(kernel, "fentry");
  plan::ProgramPlan plan = functionAtExit();
  AttachMethods methods(plan, features, "");
  EXPECT_EQ(methods.chosen(0), 1u);
  EXPECT_EQ(methods.note(0),
            "ip_send_skb: kprobe (passed over fentry: failed on purpose (KQ_TEST_FAIL_ATTACH))");
}

TEST(AttachMethods, OnlyTheChosenMethodAndThoseAfterItMayEverLoad) {
  // What a live run compiles: the methods before the chosen one are passed over on every
  // load, the later ones are where a refusal moves on to.
  FakeKernel kernel;
  WithoutAttach features(kernel, "fentry");
  plan::ProgramPlan plan = functionAtExit();
  AttachMethods methods(plan, features, "");
  EXPECT_FALSE(methods.mayChoose(0, 0));
  EXPECT_TRUE(methods.mayChoose(0, 1));
  AttachMethods every(plan, kernel, "");
  EXPECT_TRUE(every.mayChoose(0, 0));
  EXPECT_TRUE(every.mayChoose(0, 1));
}

constexpr int kGetFuncIp = 173;  // bpf_get_func_ip
constexpr int kGetAttachCookie = 174;  // bpf_get_attach_cookie

TEST(AttachMethods, SkipsAMethodCallingAHelperItsProgramFamilyIsRefused) {
  // `trace tcp_* select func`: kprobe.multi programs call bpf_get_func_ip, which this
  // kernel refuses in kprobes, while fentry is absent: the plain kprobes (which read the
  // address from the registers) are left.
  FakeKernel kernel;
  kernel.absent[plan::Feature::Trampoline] = "no trampolines";
  kernel.refused_helpers[{Helper::FuncIp, HelperUse::Kprobe}] =
      "the kernel refused a kprobe program calling bpf_get_func_ip (Invalid argument)";
  plan::ProgramPlan plan;
  plan.group_names = {"tcp_*"};
  plan.programs = {program("f", plan::Attach::Fentry, 0, 0), program("m", plan::Attach::KprobeMulti, 0, 1),
                   program("k", plan::Attach::Kprobe, 0, 2)};
  plan.programs[0].helpers = {kGetFuncIp};
  plan.programs[1].helpers = {14, kGetFuncIp};  // bpf_get_current_pid_tgid too: not probed
  AttachMethods methods(plan, kernel, "");
  EXPECT_EQ(methods.chosen(0), 2u);
  EXPECT_EQ(methods.note(0),
            "tcp_*: kprobe (passed over fentry: no trampolines; kprobe.multi: the kernel refused "
            "a kprobe program calling bpf_get_func_ip (Invalid argument))");
}

TEST(AttachMethods, AHelperIsJudgedInTheFamilyOfTheProgramCallingIt) {
  FakeKernel kernel;
  kernel.refused_helpers[{Helper::AttachCookie, HelperUse::Fentry}] = "no cookies in fentry";
  plan::ProgramPlan plan = functionAtExit();
  plan.programs[1].helpers = {kGetAttachCookie};  // the fexit program
  plan.programs[3].helpers = {kGetAttachCookie};  // the kretprobe: allowed there
  plan.group_names.push_back("sched_switch");
  plan.programs.push_back(program("t", plan::Attach::TpBtf, 1, 0));
  plan.programs.back().helpers = {kGetAttachCookie};  // not a family kq probes helpers in
  AttachMethods methods(plan, kernel, "");
  EXPECT_EQ(methods.chosen(0), 1u);
  EXPECT_EQ(methods.chosen(1), 0u);
  EXPECT_EQ(methods.failure(0).find("cannot attach to ip_send_skb:\n  fentry: no cookies in fentry"), 0u);
}

}  // namespace
}  // namespace kq::runtime
