#include "runtime/verifier_log.h"

#include <charconv>
#include <regex>
#include <vector>

namespace kq::runtime {

std::optional<VerifierRejection> parseVerifierLog(const std::string& log) {
  size_t begin = log.find("-- BEGIN PROG LOAD LOG --");
  if (begin == std::string::npos) return std::nullopt;
  size_t end = log.find("-- END PROG LOAD LOG --", begin);
  std::string body = log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  VerifierRejection r;
  r.log = body;
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < body.size()) {
    size_t nl = body.find('\n', at);
    lines.push_back(body.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  static const std::regex insn(R"(^(\d+): \([0-9a-f]{2}\))");
  int last_insn = -1;
  size_t last_insn_line = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (std::regex_search(lines[i], m, insn)) {
      std::string digits = m[1];
      std::from_chars(digits.data(), digits.data() + digits.size(), last_insn);
      last_insn_line = i;
    }
  }
  r.instruction = last_insn;
  // The verifier's message follows the last instruction it looked at.
  for (size_t i = last_insn_line + 1; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.empty() || l.rfind("processed ", 0) == 0 || l.rfind("--", 0) == 0 || l[0] == ';') continue;
    if (l.find("R") == 0 && l.find("=") != std::string::npos && l.find(' ') == std::string::npos) continue;
    r.message += (r.message.empty() ? "" : "\n") + l;
  }
  if (r.message.empty() && !lines.empty()) r.message = lines.back();
  static const std::regex prog(R"(prog '([^']+)': )");
  std::smatch m;
  std::string before = log.substr(0, begin);
  for (auto it = std::sregex_iterator(before.begin(), before.end(), prog); it != std::sregex_iterator(); ++it) {
    r.program = (*it)[1];
  }
  return r;
}

std::optional<std::string> programThatFailed(const std::string& log) {
  static const std::regex failed(R"(prog '([^']+)':[^\n]*\bfail)", std::regex::icase);
  std::smatch m;
  if (std::regex_search(log, m, failed)) return m[1].str();
  return std::nullopt;
}

}  // namespace kq::runtime
