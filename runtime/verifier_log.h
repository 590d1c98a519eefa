// Reading the verifier's log out of libbpf's messages: which program it rejected, at which
// instruction, and in which words.
#pragma once

#include <optional>
#include <string>

namespace kq::runtime {

/// Why a load failed in the verifier: which program, which instruction, and its words.
struct VerifierRejection {
  std::string program;     // the BPF program's name
  std::string section;     // its ELF section
  int instruction = -1;    // the rejected instruction's index, when the log names it
  std::string message;     // the verifier's last words ("R1 invalid mem access 'scalar'")
  std::string log;         // the whole log (for -v)
};

/// The verifier's own conclusion and the instruction it stopped at, from libbpf's messages
/// during a load (they hold "-- BEGIN PROG LOAD LOG --" ... "-- END PROG LOAD LOG --").
std::optional<VerifierRejection> parseVerifierLog(const std::string& log);

/// The program that libbpf's messages say failed ("prog 'x': BPF program load failed"),
/// skipping the debug lines that name other programs first (their CO-RE relocations).
std::optional<std::string> programThatFailed(const std::string& log);

}  // namespace kq::runtime
