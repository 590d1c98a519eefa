#include "compiler/parse/bpftrace_spelling.h"

#include <regex>
#include <vector>

namespace kq::parse {
namespace {

std::string trim(std::string s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

/// bpftrace's probe as kq names it, and whether it is a function's exit; empty when it is
/// not one of bpftrace's.
std::optional<std::pair<std::string, bool>> probeOf(const std::string& probe) {
  std::smatch m;
  static const std::regex function(R"(^(kprobe|k|fentry|f|kfunc):(?:[\w.]+:)?([\w.*]+)$)");
  static const std::regex exit(R"(^(kretprobe|kr|fexit|fr|kretfunc):(?:[\w.]+:)?([\w.*]+)$)");
  static const std::regex tracepoint(R"(^(tracepoint|t):([\w*]+):([\w*]+)$)");
  static const std::regex raw(R"(^(rawtracepoint|rt):(?:[\w]+:)?([\w*]+)$)");
  static const std::regex user(R"(^(uprobe|u|uretprobe|ur):([^:]+):([\w.*]+)$)");
  if (probe == "BEGIN" || probe == "END") return std::pair{probe == "BEGIN" ? "begin" : "end", false};
  static const std::regex program(R"(^(fentry|f|kfunc|fexit|fr|kretfunc):bpf:(?:\d+:)?([\w*]+)$)");
  if (std::regex_match(probe, m, program)) {
    bool at_exit = m[1] == "fexit" || m[1] == "fr" || m[1] == "kretfunc";
    return std::pair{"bpf:" + m[2].str(), at_exit};
  }
  if (std::regex_match(probe, m, function)) return std::pair{m[2].str(), false};
  if (std::regex_match(probe, m, exit)) return std::pair{m[2].str(), true};
  if (std::regex_match(probe, m, tracepoint)) return std::pair{"tracepoint:" + m[2].str() + ":" + m[3].str(), false};
  if (std::regex_match(probe, m, raw)) return std::pair{"rawtracepoint:" + m[2].str(), false};
  if (std::regex_match(probe, m, user)) {
    bool ret = m[1] == "uretprobe" || m[1] == "ur";
    return std::pair{std::string(ret ? "uretprobe:" : "uprobe:") + m[2].str() + ":" + m[3].str(), false};
  }
  return std::nullopt;
}

/// An expression of bpftrace's in kq's words: `args->x` and `args.x` are `x`, `retval`
/// `return`, `nsecs` `time`, `&&` `and`, `||` `or`, `$x` and `@x` plain names.
std::string expression(std::string e) {
  static const std::vector<std::pair<std::regex, std::string>> words = {
      {std::regex(R"(\bargs\s*(->|\.)\s*)"), ""},
      {std::regex(R"(\bretval\b)"), "return"},
      {std::regex(R"(\bnsecs\b)"), "time"},
      {std::regex(R"(&&)"), "and"},
      {std::regex(R"(\|\|)"), "or"},
      {std::regex(R"([$@](\w))"), "$1"},
  };
  for (const auto& [from, to] : words) e = std::regex_replace(e, from, to);
  return trim(e);
}

}  // namespace

std::optional<BpftraceSpelling> bpftraceSpelling(std::string_view input) {
  std::string text(input);
  // PROBE [/FILTER/] { ACTION }, one statement or two in the action.
  static const std::regex program(R"(^\s*([\w.:/*-]+?)\s*(/(.*)/)?\s*\{(.*)\}\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, program)) return std::nullopt;
  auto probe = probeOf(m[1].str());
  if (!probe) return std::nullopt;
  BpftraceSpelling out;
  out.brace = static_cast<size_t>(m.position(4)) - 1;
  std::string query = "trace " + probe->first + (probe->second ? "(return)" : "");
  if (m[3].matched) query += " where " + expression(m[3].str());

  std::string action = trim(m[4].str());
  while (!action.empty() && (action.back() == ';' || action.back() == ' ')) action.pop_back();
  std::smatch a;
  static const std::regex aggregate(R"(^@\w*(\[(.*)\])?\s*=\s*(count|sum|avg|min|max|hist|lhist)\((.*)\)$)");
  static const std::regex print(R"re(^printf\(\s*"((?:[^"\\]|\\.)*)"\s*(,(.*))?\)$)re");
  if (std::regex_match(action, a, aggregate)) {
    std::string keys = a[1].matched ? expression(a[2].str()) : "";
    std::string call = a[3].str() + "(" + expression(a[4].str()) + ")";
    if (!keys.empty()) query += " group by " + keys;
    query += " select " + (keys.empty() ? "" : keys + ", ") + call;
  } else if (std::regex_match(action, a, print)) {
    std::string format = std::regex_replace(a[1].str(), std::regex(R"(\\n$)"), "");
    query += " select fmt(\"" + format + "\"" + (a[2].matched ? ", " + expression(a[3].str()) : "") + ")";
  } else if (!action.empty()) {
    return out;  // bpftrace's, but not said here in one query
  }
  out.query = query;
  return out;
}

}  // namespace kq::parse
