#include "compiler/c/c_diagnostics.h"

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

namespace kq::c {
namespace {

/// Where a Clang diagnostic points, as a one-character range in a file added to `sources`.
std::optional<SourceRange> placeOf(const CDiagnostic& d, SourceManager& sources,
                                   std::map<std::string, FileId>& added) {
  if (d.file.empty() || d.line == 0) return std::nullopt;
  auto it = added.find(d.file);
  if (it == added.end()) {
    std::ifstream in(d.file, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    it = added.emplace(d.file, sources.add(d.file, text.str())).first;
  }
  const SourceFile& file = sources.file(it->second);
  uint32_t begin = file.offsetOf({d.line, d.column == 0 ? 1 : d.column});
  uint32_t end = begin < file.text().size() ? begin + 1 : begin;
  return SourceRange{it->second, begin, end};
}

}  // namespace

bool reportCDiagnostics(const std::vector<CDiagnostic>& diagnostics, DiagKind kind,
                        SourceRange fallback, std::string_view context, SourceManager& sources,
                        Diagnostics& diags) {
  std::map<std::string, FileId> added;
  Diagnostic* last = nullptr;
  for (const CDiagnostic& d : diagnostics) {
    std::optional<SourceRange> at = placeOf(d, sources, added);
    if (d.level == CDiagnostic::Level::Error) {
      last = &diags.report(kind, at.value_or(fallback), d.message);
      if (!context.empty()) last->note(fallback, std::string(context));
    } else if (d.level == CDiagnostic::Level::Note && last) {
      if (at) {
        last->note(*at, d.message);
      } else {
        last->note(d.message);
      }
    }
  }
  return last != nullptr;
}

}  // namespace kq::c
