#include "runtime/verifier_log.h"

#include <string>

#include <gtest/gtest.h>

#include "runtime/libbpf_log.h"

namespace kq::runtime {
namespace {

/// A verifier log as libbpf prints it: one message, thousands of instructions long.
std::string longLog(int instructions) {
  std::string body;
  for (int i = 0; i < instructions; ++i) {
    body += std::to_string(i) + ": (b7) r0 = 0                      ; R0_w=0\n";
  }
  body += "R1 invalid mem access 'scalar'\n"
          "processed 4001 insns (limit 1000000) max_states_per_insn 0\n";
  return "libbpf: prog 'kq_prog_3': BPF program load failed: Permission denied\n"
         "libbpf: prog 'kq_prog_3': -- BEGIN PROG LOAD LOG --\n" + body +
         "-- END PROG LOAD LOG --\n";
}

TEST(VerifierLog, FindsTheLastInstructionAndMessageOfALongLog) {
  std::string log = longLog(4000);
  ASSERT_GT(log.size(), 100u * 1024);
  auto rejection = parseVerifierLog(log);
  ASSERT_TRUE(rejection);
  EXPECT_EQ(rejection->program, "kq_prog_3");
  EXPECT_EQ(rejection->instruction, 3999);
  EXPECT_EQ(rejection->message, "R1 invalid mem access 'scalar'");
}

TEST(VerifierLog, NoLogNoRejection) { EXPECT_FALSE(parseVerifierLog("libbpf: map 'x': ok\n")); }

TEST(VerifierLog, TheProgramThatFailedIsNotTheFirstOneNamed) {
  // -v's debug lines name the fork follower's relocations before the failing fentry program.
  std::string log =
      "libbpf: prog 'kq_prog_2': relo #0: <byte_off> [32] struct task_struct___kq.pid\n"
      "libbpf: prog 'kq_prog_2': relo #0: matching candidate #0\n"
      "libbpf: prog 'kq_prog_0': BPF program load failed: Operation not permitted\n"
      "libbpf: prog 'kq_prog_0': failed to load: -1\n";
  EXPECT_EQ(programThatFailed(log), "kq_prog_0");
  EXPECT_FALSE(programThatFailed("libbpf: prog 'kq_prog_2': relo #0: ok\n"));
}

TEST(LibbpfCapture, KeepsTheWholeOfALongMessage) {
  std::string log = longLog(4000);
  LibbpfCapture capture;
  captureForTest("%s", log.c_str());
  EXPECT_EQ(capture.text(), log);
  auto rejection = parseVerifierLog(capture.text());
  ASSERT_TRUE(rejection);
  EXPECT_EQ(rejection->instruction, 3999);
}

}  // namespace
}  // namespace kq::runtime
