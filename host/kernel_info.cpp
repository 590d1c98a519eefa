#include "host/kernel_info.h"

#include "host/cache_directory.h"
#include "host/kallsyms.h"

#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

namespace kq::host {
namespace {

/// A set of many names (every traceable function, every kernel symbol: 100k or more) in one
/// buffer, sorted once: a fifth of the memory of a hash set of strings.
class NameSet {
 public:
  void add(std::string_view name) {
    spans_.push_back({static_cast<uint32_t>(text_.size()), static_cast<uint32_t>(name.size())});
    text_.append(name);
    sorted_ = false;
  }
  bool empty() const { return spans_.empty(); }
  bool contains(std::string_view name) {
    sort();
    auto it = std::lower_bound(spans_.begin(), spans_.end(), name,
                               [&](Span a, std::string_view n) { return view(a) < n; });
    return it != spans_.end() && view(*it) == name;
  }
  /// The names, sorted, a line each.
  std::string lines() {
    sort();
    std::string out;
    out.reserve(text_.size() + spans_.size());
    for (Span s : spans_) out.append(view(s)).push_back('\n');
    return out;
  }
  /// Names added in order: no sort needed.
  void markSorted() {
    sorted_ = std::is_sorted(spans_.begin(), spans_.end(), [&](Span a, Span b) { return view(a) < view(b); });
  }

 private:
  struct Span {
    uint32_t offset, size;
  };
  std::string_view view(Span s) const { return std::string_view(text_).substr(s.offset, s.size); }
  void sort() {
    if (sorted_) return;
    std::sort(spans_.begin(), spans_.end(), [&](Span a, Span b) { return view(a) < view(b); });
    sorted_ = true;
  }
  std::string text_;
  std::vector<Span> spans_;
  bool sorted_ = true;
};


bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

Result<std::string> readText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{fmt::format("cannot read {}: {}", path, std::strerror(errno))};
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return Error{fmt::format("cannot read {}: {}", path, std::strerror(errno))};
  return out.str();
}

Result<std::vector<std::string>> listDirectories(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (!dir) return Error{fmt::format("cannot list {}: {}", path, std::strerror(errno))};
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_type == DT_DIR && entry->d_name[0] != '.') names.push_back(entry->d_name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

class SystemKernel : public KernelInfo {
 public:
  Result<std::vector<std::string>> tracepointCategories() override {
    auto root = tracefs();
    if (!root) return root.error();
    return listDirectories(*root + "/events");
  }

  Result<std::vector<std::string>> tracepointEvents(const std::string& category) override {
    auto root = tracefs();
    if (!root) return root.error();
    return listDirectories(*root + "/events/" + category);
  }

  Result<TracepointFormat> tracepointFormat(const std::string& category,
                                            const std::string& event) override {
    auto root = tracefs();
    if (!root) return root.error();
    auto text = readText(*root + "/events/" + category + "/" + event + "/format");
    if (!text) return text.error();
    return parseTracepointFormat(*text);
  }

  Known inFilterFunctions(const std::string& function) override {
    loadFilterFunctions();
    if (!filter_functions_) return Known::Unknown;
    return filter_functions_->contains(function) ? Known::Yes : Known::No;
  }

  std::string filterFunctionsProblem() override {
    loadFilterFunctions();
    return filter_problem_;
  }

  Known inKallsyms(const std::string& function) override {
    if (!kallsyms_loaded_) {
      kallsyms_loaded_ = true;
      forEachKernelTextSymbol(
          [&](uint64_t, std::string_view name) { kallsyms_.add(name); });
    }
    if (kallsyms_.empty()) return Known::Unknown;
    return kallsyms_.contains(function) ? Known::Yes : Known::No;
  }

  Known hasKprobes() override {
    return exists("/sys/bus/event_source/devices/kprobe") ? Known::Yes : Known::No;
  }

  Result<std::optional<uint64_t>> symbolAddress(const std::string& name) override {
    if (!loadSymbols()) return Error{symbols_problem_};
    auto it = symbols_.find(name);
    if (it == symbols_.end()) return std::optional<uint64_t>{};
    return std::optional<uint64_t>{it->second};
  }

  std::vector<std::string_view> symbolNames() override {
    std::vector<std::string_view> names;
    if (!loadSymbols()) return names;
    names.reserve(symbols_.size());
    for (const auto& [name, address] : symbols_) names.push_back(name);
    return names;
  }

  std::vector<NamedNetns> netNamespaces() override { return namedNetNamespaces(); }

  Result<std::vector<BpfProgram>> bpfPrograms() override {
    // Read once for what one query or completion asks, again a moment later: programs come
    // and go while a session (the REPL, kq serve) lives.
    auto now = std::chrono::steady_clock::now();
    if (!programs_ || now - programs_read_ > std::chrono::seconds(1)) {
      programs_ = loadedBpfPrograms();
      programs_read_ = now;
    }
    return *programs_;
  }

 private:
  // tracefs where it is mounted; kq mounts it only to run a query (mountTracefs).
  Result<std::string> tracefs() {
    if (tracefs_) return *tracefs_;
    auto root = findTracefs();
    if (root) tracefs_ = *root;
    return root;
  }

  void loadFilterFunctions() {
    if (filter_loaded_) return;
    filter_loaded_ = true;
    // Reading the file costs the kernel a walk of its ftrace records for each page read
    // (0.2 s of a packet mode start under emulation): the names are kept, sorted, for as
    // long as the boot and the modules loaded (what changes them) are the same.
    std::string key = filterFunctionsKey();
    std::filesystem::path cached = key.empty() ? std::filesystem::path() : cacheDirectory();
    if (!cached.empty()) cached /= fmt::format("kernel/filter-functions-{:016x}", std::hash<std::string>{}(key));
    if (!cached.empty() && ownCacheFile(cached)) {
      std::ifstream in(cached);
      std::string line;
      if (std::getline(in, line) && line == key) {
        filter_functions_.emplace();
        while (std::getline(in, line)) filter_functions_->add(line);
        filter_functions_->markSorted();
        if (!filter_functions_->empty()) return;
      }
      filter_functions_.reset();
    }
    auto root = tracefs();
    if (!root) {
      filter_problem_ = root.error().message;
      return;
    }
    std::string path = *root + "/available_filter_functions";
    std::ifstream in(path);
    if (!in) {
      filter_problem_ = fmt::format("cannot read {}: {}", path, std::strerror(errno));
      return;
    }
    filter_functions_.emplace();
    std::string line;
    while (std::getline(in, line)) {
      size_t end = line.find_first_of(" \t");
      filter_functions_->add(std::string_view(line).substr(0, end));
    }
    if (cached.empty() || filter_functions_->empty()) return;
    // One list is kept: another boot's, or other modules', is of no more use.
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(cached.parent_path(), ec)) {
      if (entry.path().filename().string().rfind("filter-functions-", 0) == 0) std::filesystem::remove(entry.path(), ec);
    }
    writeCacheFile(cached, key + "\n" + filter_functions_->lines());
  }

  /// What available_filter_functions is the same for: this boot, and the modules loaded
  /// ("" where the boot cannot be told).
  static std::string filterFunctionsKey() {
    std::string boot = bootId();
    if (boot.empty()) return "";
    std::vector<std::string> modules;
    std::ifstream in("/proc/modules");
    std::string line;
    while (std::getline(in, line)) modules.push_back(line.substr(0, line.find(' ')));
    std::sort(modules.begin(), modules.end());
    std::string key = "boot " + boot + " modules";
    for (const std::string& m : modules) key += " " + m;
    return key;
  }

  /// Every symbol of /proc/kallsyms by name (the first of each name), read on first use;
  /// false (with the reason in `symbols_problem_`) when it cannot be read or hides addresses.
  bool loadSymbols() {
    if (symbols_loaded_) return symbols_problem_.empty();
    symbols_loaded_ = true;
    bool addresses = false;
    bool read = forEachKernelSymbol([&](uint64_t address, std::string_view name) {
      symbols_.emplace(name, address);
      addresses = addresses || address != 0;
    });
    if (!read) {
      symbols_problem_ = fmt::format("cannot read /proc/kallsyms: {}", std::strerror(errno));
    } else if (!addresses) {
      symbols_problem_ = "/proc/kallsyms hides kernel addresses from this user (kptr_restrict)";
    }
    if (!symbols_problem_.empty()) symbols_.clear();
    return symbols_problem_.empty();
  }

  std::optional<std::string> tracefs_;
  bool filter_loaded_ = false;
  std::optional<NameSet> filter_functions_;
  std::string filter_problem_;
  bool kallsyms_loaded_ = false;
  NameSet kallsyms_;
  bool symbols_loaded_ = false;
  std::unordered_map<std::string, uint64_t> symbols_;
  std::string symbols_problem_;
  std::optional<Result<std::vector<BpfProgram>>> programs_;
  std::chrono::steady_clock::time_point programs_read_;
};

class UnknownKernel : public KernelInfo {
 public:
  explicit UnknownKernel(std::string why) : why_(std::move(why)) {}
  Result<std::vector<std::string>> tracepointCategories() override { return Error{why_}; }
  Result<std::vector<std::string>> tracepointEvents(const std::string&) override {
    return Error{why_};
  }
  Result<TracepointFormat> tracepointFormat(const std::string&, const std::string&) override {
    return Error{why_};
  }
  Known inFilterFunctions(const std::string&) override { return Known::Unknown; }
  std::string filterFunctionsProblem() override { return why_; }
  Known inKallsyms(const std::string&) override { return Known::Unknown; }
  Known hasKprobes() override { return Known::Unknown; }
  Result<std::optional<uint64_t>> symbolAddress(const std::string&) override { return Error{why_}; }
  std::vector<std::string_view> symbolNames() override { return {}; }
  Result<std::vector<BpfProgram>> bpfPrograms() override { return Error{why_}; }

 private:
  std::string why_;
};

}  // namespace

Result<std::string> findTracefs() {
  for (const char* dir : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    std::string events = std::string(dir) + "/events";
    if (exists(events)) return std::string(dir);
    struct stat st;
    if (stat(events.c_str(), &st) != 0 && errno == EACCES) {
      // Mounted, but only root may look (mode 0700): CAP_BPF and CAP_PERFMON do not open it.
      return Error{fmt::format("tracefs at {} is readable by root only, so tracepoint fields "
                               "and syscall arguments cannot be read (CAP_BPF and CAP_PERFMON "
                               "do not open it: run kq as root, or mount tracefs with mode=755)",
                               dir)};
    }
    if (errno != ENOENT && errno != ENOTDIR && errno != EACCES) {
      // Not an absent tracefs: out of file descriptors or memory, say so as it is.
      return Error{fmt::format("cannot look at tracefs ({}): {}", events, std::strerror(errno))};
    }
  }
  return Error{"tracefs is not mounted (kq mounts it at /sys/kernel/tracing to run a query; "
               "as root: mount -t tracefs tracefs /sys/kernel/tracing)"};
}

Result<std::string> mountTracefs() {
  if (auto root = findTracefs()) return root;
  if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, nullptr) == 0 &&
      exists("/sys/kernel/tracing/events")) {
    return std::string("/sys/kernel/tracing");
  }
  return Error{fmt::format(
      "tracefs is not mounted and mounting it at /sys/kernel/tracing failed ({}); "
      "as root: mount -t tracefs tracefs /sys/kernel/tracing",
      std::strerror(errno))};
}

Result<TracepointFormat> parseTracepointFormat(std::string_view text) {
  TracepointFormat format;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("ID:", 0) == 0) {
      format.id = static_cast<uint32_t>(std::strtoul(line.c_str() + 3, nullptr, 10));
      continue;
    }
    // "\tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;"
    size_t field = line.find("field:");
    if (field == std::string::npos) continue;
    size_t semi = line.find(';', field);
    if (semi == std::string::npos) continue;
    std::string decl = line.substr(field + 6, semi - field - 6);
    size_t name_start = decl.find_last_of(" *");
    if (name_start == std::string::npos) continue;
    TracepointField f;
    f.name = decl.substr(name_start + 1);
    f.type = decl.substr(0, name_start + 1);
    while (!f.type.empty() && f.type.back() == ' ') f.type.pop_back();
    // Arrays keep their brackets with the name in tracefs: `char comm[16]`.
    if (size_t bracket = f.name.find('['); bracket != std::string::npos) {
      f.type += f.name.substr(bracket);
      f.name = f.name.substr(0, bracket);
    }
    auto number = [&](const char* key) -> uint32_t {
      size_t at = line.find(key, semi);
      return at == std::string::npos
                 ? 0
                 : static_cast<uint32_t>(std::strtoul(line.c_str() + at + strlen(key), nullptr, 10));
    };
    f.offset = number("offset:");
    f.size = number("size:");
    f.is_signed = number("signed:") != 0;
    if (f.name.rfind("common_", 0) == 0) continue;
    format.fields.push_back(std::move(f));
  }
  if (format.id == 0 && format.fields.empty()) return Error{"the format file has no fields"};
  return format;
}

std::unique_ptr<KernelInfo> systemKernel() { return std::make_unique<SystemKernel>(); }

std::unique_ptr<KernelInfo> unknownKernel(std::string why) {
  return std::make_unique<UnknownKernel>(std::move(why));
}

std::vector<NamedNetns> namedNetNamespaces(const std::string& directory) {
  std::vector<NamedNetns> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    struct stat st {};
    // Each name is a bind mount of the namespace's file: its inode is the namespace's.
    if (stat(entry.path().c_str(), &st) != 0) continue;
    out.push_back({entry.path().filename().string(), static_cast<uint64_t>(st.st_ino)});
  }
  std::sort(out.begin(), out.end(), [](const NamedNetns& a, const NamedNetns& b) { return a.name < b.name; });
  return out;
}

}  // namespace kq::host
