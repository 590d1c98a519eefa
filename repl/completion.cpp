#include "repl/completion.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <optional>

#include "compiler/sema/stdlib.h"
#include "driver/commands.h"
#include "host/bpf_programs.h"
#include "host/perf_events.h"
#include "host/usdt.h"
#include "repl/input_tokens.h"
#include "repl/probe_scope.h"

namespace kq::repl {
namespace {

using Kind = InputToken::Kind;
constexpr size_t kNone = static_cast<size_t>(-1);

constexpr std::string_view kCommands[] = {"check", "decls", "fn",   "help", "info", "jobs",
                                          "let",   "list",  "quit", "stop", "trace", "use"};
constexpr std::string_view kClauses[] = {"where", "select", "group", "every", "for", "limit", "join", "track"};
constexpr std::string_view kExpressionWords[] = {"and", "or", "not", "true", "false"};
constexpr std::string_view kTargetWords[] = {"tracepoint:", "rawtracepoint:", "syscall:", "uprobe:",
                                             "uretprobe:", "usdt:", "software:", "hardware:", "watchpoint:", "iter:", "bpf:", "packet",
                                             "interval", "profile"};
constexpr std::string_view kInfoWords[] = {"struct ", "union ", "enum ", "tracepoint:", "rawtracepoint:", "syscall:",
                                           "usdt:", "bpf:"};
constexpr std::string_view kListWords[] = {"tracepoint:", "rawtracepoint:", "syscall:", "software:",
                                           "hardware:", "usdt:", "bpf:", "packet"};

/// Words that are never names (docs/language.md, "Reserved words"), and `on`.
constexpr std::string_view kReserved[] = {
    "trace", "where", "select", "group", "every", "for",   "limit",  "as",       "and",
    "or",    "not",   "return", "true",  "false", "use",   "let",    "fn",       "extension",
    "struct", "union", "enum",  "void",  "char",  "short", "int",    "long",     "signed",
    "unsigned", "bool", "on"};

template <size_t N>
void append(std::vector<std::string>& out, const std::string_view (&words)[N]) {
  for (std::string_view w : words) out.emplace_back(w);
}

bool isClause(const InputToken& t) {
  return t.isWord() && std::find(std::begin(kClauses), std::end(kClauses), t.text) != std::end(kClauses);
}

/// Where the word being completed stands, and what is in scope there.
struct Place {
  enum What {
    Nothing, Command, Target, Categories, Events, RawTracepoints, Iterators, BpfPrograms, Syscalls, PerfEvents, UsdtProbes, Files, AfterTarget, Expression,
    Member, InfoWhat, ListWhat, StructName, Module, Words,
  } what = Nothing;
  std::string category;            // Events; PerfEvents: `software` or `hardware`; UsdtProbes: the binary
  std::string probe;               // Expression, Member: whose scope ("" for none)
  std::string left;                // Member: the expression before `->` or `.`
  bool arrow = false;              // Member
  std::vector<std::string> names;  // more names in scope (joins, fn parameters); Words
  bool clause_words = false;       // Expression: clause keywords fit here too
  bool joined_event = false;       // Member: `NAME.` of a join: the joined event's names
  CallPlace::Clause clause = CallPlace::Other;  // Expression: which clause it is in
  std::string provider;            // UsdtProbes: the provider typed, if one was
};

class Completer {
 public:
  Completer(const CompletionContext& context, const std::string& text)
      : context_(context), text_(text), tokens_(inputTokens(text_)) {}

  Completion run();

 private:
  Place locate(size_t end) const;
  Place locateQuery(size_t start, size_t end) const;
  Place locateDeclaration(size_t start, size_t end) const;
  std::optional<Place> targetPart(size_t first, size_t end) const;
  Place expression(size_t first, size_t end, const std::string& probe,
                   const std::vector<std::pair<std::string, std::string>>& joins) const;
  size_t matchingOpen(size_t close) const;
  /// A probe's text from tokens [first, last), without capture lists.
  std::string probeText(size_t first, size_t last) const;

  Completion candidates(const Place& place, size_t start) const;
  std::vector<std::string> functions(std::string_view word) const;
  Completion files(size_t start, std::string_view path) const;

  const CompletionContext& context_;
  std::string text_;
  std::vector<InputToken> tokens_;
};

/// The names that start with `prefix`, sorted, once each.
Completion matching(size_t start, std::string_view prefix, std::vector<std::string> names) {
  Completion c;
  c.start = start;
  for (std::string& n : names) {
    if (n.compare(0, prefix.size(), prefix) == 0) c.candidates.push_back(std::move(n));
  }
  std::sort(c.candidates.begin(), c.candidates.end());
  c.candidates.erase(std::unique(c.candidates.begin(), c.candidates.end()), c.candidates.end());
  if (c.candidates.size() == 1) {
    char last = c.candidates[0].empty() ? ' ' : c.candidates[0].back();
    c.space_after = last != ':' && last != '/' && last != ' ';
  }
  return c;
}

bool isGlobPart(const InputToken& t) {
  return t.kind == Kind::Word || t.kind == Kind::Number || t.is("*") || t.is("?");
}

Completion Completer::run() {
  size_t n = tokens_.size();
  bool in_token = n > 0 && tokens_[n - 1].end == text_.size();
  if (in_token && tokens_[n - 1].kind == Kind::String) return {};
  if (in_token && tokens_[n - 1].kind == Kind::Path) return files(tokens_[n - 1].begin, tokens_[n - 1].text);
  // The word: an identifier, or where a probe target goes, a glob (`tcp_*_rcv`).
  size_t word = in_token && (tokens_[n - 1].isWord() || tokens_[n - 1].kind == Kind::Number) ? n - 1 : n;
  size_t glob = n;
  while (in_token && glob > 0 && isGlobPart(tokens_[glob - 1]) &&
         (glob == n || tokens_[glob - 1].end == tokens_[glob].begin)) {
    --glob;
  }
  if (glob < word) {
    Place place = locate(glob);
    if (place.what == Place::Target || place.what == Place::InfoWhat || place.what == Place::ListWhat) {
      return candidates(place, tokens_[glob].begin);
    }
  }
  return candidates(locate(word), word < n ? tokens_[word].begin : text_.size());
}

Completion Completer::candidates(const Place& place, size_t start) const {
  std::string_view word = std::string_view(text_).substr(start);
  std::vector<std::string> names = place.names;
  switch (place.what) {
    case Place::Nothing: return {};
    case Place::Command: append(names, kCommands); break;
    case Place::Words: break;
    case Place::Module:
      for (const sema::StdlibModule& m : sema::stdlibModules()) names.emplace_back(m.name);
      break;
    case Place::Target:
    case Place::InfoWhat:
    case Place::ListWhat: {
      if (place.what == Place::Target) append(names, kTargetWords);
      if (place.what == Place::InfoWhat) append(names, kInfoWords);
      if (place.what == Place::ListWhat) append(names, kListWords);
      // Every kernel function when nothing is typed yet would be tens of thousands.
      if (!word.empty()) {
        std::vector<std::string> found = functions(word);
        Completion c = matching(start, "", std::move(found));
        Completion words = matching(start, word, names);
        c.candidates.insert(c.candidates.end(), words.candidates.begin(), words.candidates.end());
        return matching(start, "", std::move(c.candidates));
      }
      break;
    }
    case Place::Categories: {
      auto categories = context_.kernel.tracepointCategories();
      if (categories) {
        for (const std::string& c : *categories) names.push_back(c + ":");
      }
      break;
    }
    case Place::Events: {
      auto events = context_.kernel.tracepointEvents(place.category);
      if (events) names = *events;
      break;
    }
    case Place::RawTracepoints: names = context_.btf.tracepointNames(); break;
    case Place::Iterators:
      // The kernel's iterators: a `bpf_iter_NAME` function with its `struct bpf_iter__NAME`.
      for (std::string_view f : context_.btf.functionNames()) {
        constexpr std::string_view kPrefix = "bpf_iter_";
        if (f.rfind(kPrefix, 0) != 0) continue;
        std::string name(f.substr(kPrefix.size()));
        if (context_.btf.findStruct("bpf_iter__" + name)) names.push_back(name);
      }
      break;
    case Place::BpfPrograms:
      if (auto programs = context_.kernel.bpfPrograms()) {
        for (const host::BpfProgram& p : *programs) {
          if (p.hasBtf()) names.push_back(p.displayName());
        }
      }
      break;
    case Place::Syscalls: {
      auto events = context_.kernel.tracepointEvents("syscalls");
      if (!events) break;
      for (const std::string& e : *events) {
        if (e.rfind("sys_enter_", 0) == 0) names.push_back(e.substr(10));
      }
      break;
    }
    case Place::PerfEvents:
      for (const host::PerfEventKind& k : host::perfEventKinds()) {
        if (k.hardware == (place.category == "hardware")) names.emplace_back(k.name);
      }
      break;
    case Place::UsdtProbes: {
      // A probe by its name alone, or as provider:name.
      auto probes = host::readUsdtProbes(place.category);
      if (!probes) break;
      for (const host::UsdtProbe& p : *probes) {
        if (!place.provider.empty()) {
          if (p.provider == place.provider) names.push_back(p.name);
          continue;
        }
        names.push_back(p.name);
        names.push_back(p.provider + ":" + p.name);
      }
      break;
    }
    case Place::Files: return files(start, word);
    case Place::AfterTarget: append(names, kClauses); break;
    case Place::StructName:
      for (std::string_view s : context_.btf.structNames()) names.emplace_back(s);
      break;
    case Place::Member:
      if (place.joined_event) {
        names = probeArguments(context_, place.probe);
        for (std::string& b : builtinNames(true, false)) names.push_back(std::move(b));
      } else {
        names = memberNames(context_, place.probe, place.left, place.arrow);
      }
      break;
    case Place::Expression: {
      // Only what checks here: the probe's names, and of the builtins and properties those
      // its probe has (no `func` on a tracepoint, no `return` without an exit) and its
      // clause takes (aggregates only as `select` items).
      std::vector<std::string> bare = builtinNames(true, false);
      for (std::string& p : stdlibProperties()) bare.push_back(std::move(p));
      bare.emplace_back("return");
      CallPlace call;
      call.clause = place.clause;
      if (!place.probe.empty()) {
        for (std::string& a : probeArguments(context_, place.probe)) names.push_back(std::move(a));
        bare = usableNames(context_, place.probe, bare);
        auto has = [&](std::string_view name) { return std::find(bare.begin(), bare.end(), name) != bare.end(); };
        call.has_exit = has("return") || has("duration");
        call.traces_functions = has("func");
      }
      names.insert(names.end(), bare.begin(), bare.end());
      for (std::string& f : builtinFunctionNames(call)) names.push_back(std::move(f));
      for (std::string& d : declaredNames(context_)) names.push_back(std::move(d));
      append(names, kExpressionWords);
      if (place.clause_words) append(names, kClauses);
      break;
    }
  }
  return matching(start, word, std::move(names));
}

Place Completer::locate(size_t end) const {
  if (end == 0) return {Place::Command};
  size_t first = tokens_[0].is("check") ? 1 : 0;
  if (end == first) return {Place::Command};
  const InputToken& command = tokens_[first];
  if (command.is("trace")) return locateQuery(first + 1, end);
  if (command.is("let") || command.is("fn")) return locateDeclaration(first, end);
  if (command.is("use")) return {end == first + 1 ? Place::Module : Place::Nothing};
  if (command.is("list")) {
    if (end == first + 1) return {Place::ListWhat};
    return targetPart(first + 1, end).value_or(Place{});
  }
  if (command.is("info")) {
    if (end == first + 1) return {Place::InfoWhat};
    if (end == first + 2 && tokens_[first + 1].is("struct")) return {Place::StructName};
    return targetPart(first + 1, end).value_or(Place{});
  }
  return {};
}

/// `tracepoint:`, `tracepoint:CATEGORY:`, `syscall:`, `software:`, `uprobe:`, `usdt:PATH:` at the end of a target.
std::optional<Place> Completer::targetPart(size_t first, size_t end) const {
  size_t n = end - first;
  auto at = [&](size_t back) -> const InputToken& { return tokens_[end - back]; };
  if (n >= 2 && at(1).is(":") && at(2).is("tracepoint")) return Place{Place::Categories};
  if (n >= 4 && at(1).is(":") && at(3).is(":") && at(4).is("tracepoint")) {
    Place p{Place::Events};
    p.category = std::string(at(2).text);
    return p;
  }
  if (n >= 2 && at(1).is(":") && at(2).is("rawtracepoint")) return Place{Place::RawTracepoints};
  if (n >= 2 && at(1).is(":") && at(2).is("iter")) return Place{Place::Iterators};
  if (n >= 2 && at(1).is(":") && at(2).is("bpf")) return Place{Place::BpfPrograms};
  if (n >= 2 && at(1).is(":") && at(2).is("syscall")) return Place{Place::Syscalls};
  if (n >= 2 && at(1).is(":") && (at(2).is("software") || at(2).is("hardware"))) {
    Place p{Place::PerfEvents};
    p.category = std::string(at(2).text);
    return p;
  }
  if (n >= 4 && at(1).is(":") && at(2).kind == InputToken::Kind::Path && at(3).is(":") && at(4).is("usdt")) {
    Place p{Place::UsdtProbes};
    p.category = std::string(at(2).text);
    return p;
  }
  if (n >= 6 && at(1).is(":") && at(3).is(":") && at(4).kind == InputToken::Kind::Path && at(5).is(":") &&
      at(6).is("usdt")) {
    Place p{Place::UsdtProbes};
    p.category = std::string(at(4).text);
    p.provider = std::string(at(2).text);
    return p;
  }
  if (n >= 2 && at(1).is(":") && (at(2).is("uprobe") || at(2).is("uretprobe") || at(2).is("usdt"))) {
    return Place{Place::Files};
  }
  return std::nullopt;
}

// query := 'trace' probe (',' probe)* clause*, clauses in any order; a join's probe runs
// to its `as`, its own `where` comes before its `on`.
Place Completer::locateQuery(size_t start, size_t end) const {
  enum class Section { Probes, JoinProbe, JoinName, Join, Clause } section = Section::Probes;
  std::string_view clause, join_part;
  int depth = 0;
  size_t target = start, capture = kNone, main_end = kNone;
  std::vector<std::pair<size_t, size_t>> join_probes;  // token ranges
  std::vector<std::pair<std::string, std::string>> joins;  // name, probe
  for (size_t i = start; i < end; ++i) {
    const InputToken& t = tokens_[i];
    bool targets = section == Section::Probes || section == Section::JoinProbe;
    if (t.is("(") || t.is("[") || t.is("{")) {
      if (depth++ == 0 && targets) capture = i;
      continue;
    }
    if (t.is(")") || t.is("]") || t.is("}")) {
      depth = std::max(0, depth - 1);
      continue;
    }
    if (depth > 0) continue;
    if (section == Section::JoinName) {
      joins.push_back({std::string(t.text), probeText(join_probes.back().first, join_probes.back().second)});
      section = Section::Join;
      join_part = "";
      continue;
    }
    if (section == Section::JoinProbe && t.is("as")) {
      join_probes.back().second = i;
      section = Section::JoinName;
      continue;
    }
    if (section == Section::Join && join_part.empty() && (t.is("where") || t.is("on"))) {
      join_part = t.text;
      continue;
    }
    if (section == Section::Join && (t.is("on") || t.is("within"))) {
      join_part = t.text;
      continue;
    }
    if (isClause(t)) {
      if (section == Section::Probes && main_end == kNone) main_end = i;
      section = t.is("join") ? Section::JoinProbe : Section::Clause;
      clause = t.text;
      if (t.is("join")) join_probes.push_back({i + 1, end}), target = i + 1;
      continue;
    }
    if (targets && (t.is(",") || t.is("->"))) {
      if (t.is(",") && section == Section::Probes && main_end == kNone) main_end = i;
      target = i + 1;
    }
  }
  std::string main = probeText(start, main_end == kNone ? end : main_end);
  switch (section) {
    case Section::Probes:
    case Section::JoinProbe:
      if (depth > 0) {
        // In a capture list: the scope of the target being written.
        return expression(capture + 1, end, probeText(target, capture), {});
      }
      if (auto part = targetPart(target, end)) return *part;
      if (target == end) return {Place::Target};
      if (section == Section::JoinProbe) return Place{Place::Words, {}, {}, {}, false, {"as"}};
      return {Place::AfterTarget};
    case Section::JoinName: return {};
    case Section::Join:
      if (join_part.empty()) return Place{Place::Words, {}, {}, {}, false, {"where", "on"}};
      if (join_part == "where") return expression(start, end, joins.back().second, {});
      if (join_part == "on") return expression(start, end, main, joins);
      return {};
    case Section::Clause:
      if (clause == "group" && tokens_[end - 1].is("group")) {
        return Place{Place::Words, {}, {}, {}, false, {"by"}};
      }
      if (clause == "every" || clause == "for" || clause == "limit") return {};
      if (clause == "track") return {Place::AfterTarget};  // a clause of one word
      Place p = expression(start, end, main, joins);
      p.clause_words = p.what == Place::Expression && depth == 0;
      p.clause = clause == "select" ? CallPlace::Select
                 : clause == "where" ? CallPlace::Where
                 : clause == "group" ? CallPlace::GroupBy
                                     : CallPlace::Other;
      return p;
  }
  return {};
}

// letDecl := LET name '=' expr;  fnDecl := FN name '(' (param (',' param)*)? ')' '=' expr
Place Completer::locateDeclaration(size_t start, size_t end) const {
  std::vector<std::string> params;
  for (size_t i = start + 1; i < end; ++i) {
    const InputToken& t = tokens_[i];
    if (t.is("=") && (tokens_[start].is("let") || i > start + 2)) {
      Place p = expression(i + 1, end, "", {});
      if (p.what == Place::Expression) p.names.insert(p.names.end(), params.begin(), params.end());
      return p;
    }
    // A parameter: the word after `(` or `,`.
    if (t.isWord() && (tokens_[i - 1].is("(") || tokens_[i - 1].is(","))) params.emplace_back(t.text);
  }
  return {};
}

/// The place of a word in an expression from token `first`: a member after `->` or `.`
/// (typed by the expression before it), else a name in the scope of `probe`.
Place Completer::expression(size_t first, size_t end, const std::string& probe,
                            const std::vector<std::pair<std::string, std::string>>& joins) const {
  Place place{Place::Expression};
  place.probe = probe;
  for (const auto& [name, source] : joins) place.names.push_back(name);
  if (end == first || !(tokens_[end - 1].is("->") || tokens_[end - 1].is("."))) return place;
  // The operand before the operator: names, calls, indexes and parentheses chained by
  // `->` and `.` (`str(skb->dev)->`, `w.p->`, `(a + b).c`).
  size_t j = end - 1;
  bool operand = true;
  while (j > first) {
    const InputToken& t = tokens_[j - 1];
    if (!operand) {
      if (!t.is("->") && !t.is(".")) break;
      --j;
      operand = true;
    } else if (t.is(")") || t.is("]")) {
      size_t open = matchingOpen(j - 1);
      if (open == kNone || open < first) return {};
      j = open;
      if (t.is("]")) continue;  // the operand indexed comes before it
      if (j > first && tokens_[j - 1].isWord() &&
          std::find(std::begin(kReserved), std::end(kReserved), tokens_[j - 1].text) ==
              std::end(kReserved)) {
        --j;  // a call
      }
      operand = false;
    } else if (t.isWord() || t.kind == Kind::Number) {
      --j;
      operand = false;
    } else {
      break;
    }
  }
  if (operand) return {};
  Place member{Place::Member};
  member.arrow = tokens_[end - 1].is("->");
  member.probe = probe;
  size_t left = j;
  for (const auto& [name, source] : joins) {
    if (!tokens_[j].is(name)) continue;
    if (j + 1 == end - 1) {  // `NAME.`: what the joined event saw
      if (member.arrow) return {};
      member.joined_event = true;
      member.probe = source;
      return member;
    }
    if (tokens_[j + 1].is(".")) {  // `NAME.x->`: typed in the joined event's scope
      member.probe = source;
      left = j + 2;
    }
  }
  member.left = joinTokens(text_, tokens_, left, end - 1);
  return member;
}

size_t Completer::matchingOpen(size_t close) const {
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    const InputToken& t = tokens_[i];
    if (t.is(")") || t.is("]") || t.is("}")) ++depth;
    if ((t.is("(") || t.is("[") || t.is("{")) && --depth == 0) return i;
  }
  return kNone;
}

std::string Completer::probeText(size_t first, size_t last) const {
  std::vector<InputToken> kept;
  int depth = 0;
  for (size_t i = first; i < last && i < tokens_.size(); ++i) {
    const InputToken& t = tokens_[i];
    if (t.is("(")) ++depth;
    if (depth == 0) kept.push_back(t);
    if (t.is(")") && depth > 0) --depth;
  }
  return joinTokens(text_, kept, 0, kept.size());
}

/// Kernel functions that can be traced, matching what is typed as a glob's beginning.
std::vector<std::string> Completer::functions(std::string_view word) const {
  std::string glob(word);
  if (glob.back() != '*') glob += '*';
  std::vector<std::string> names;
  for (std::string_view name : context_.btf.matchFunctionNames(glob, true)) {
    if (name.rfind("__bpf_trace_", 0) == 0) continue;
    if (driver::traceable(context_.kernel, std::string(name))) names.emplace_back(name);
  }
  return names;
}

/// The entries of the directory a path names so far: directories end with `/`, and a file,
/// when it is the only one, with the `:` that comes next.
Completion Completer::files(size_t start, std::string_view path) const {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string_view::npos ? "" : std::string(path.substr(0, slash + 1));
  std::string_view base = path.substr(dir.size());
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.empty() ? "." : dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || (name[0] == '.' && (base.empty() || base[0] != '.'))) continue;
      if (name.compare(0, base.size(), base) != 0) continue;
      struct stat st;
      bool is_dir = stat((dir + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      names.push_back(dir + name + (is_dir ? "/" : ""));
    }
    closedir(d);
  }
  Completion c = matching(start, "", std::move(names));
  if (c.candidates.size() == 1 && c.candidates[0].back() != '/') {
    c.candidates[0] += ':';
    c.space_after = false;
  }
  return c;
}

}  // namespace

Completion complete(const CompletionContext& context, const std::string& text) {
  return Completer(context, text).run();
}

}  // namespace kq::repl
