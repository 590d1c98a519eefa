#include "plan/portable_plan.h"

#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plan/plan_check.h"

namespace kq::plan {
namespace {

using Json = nlohmann::ordered_json;

/// `path.key`, or `key` at the top.
std::string at(const std::string& path, const char* key) {
  return path.empty() ? key : path + "." + key;
}

// Encoding: a struct is an object of its fields (plan/contract.h), an enum its number (the
// .def tables keep numbers stable), a map a list of [key, value] pairs.

template <class T> Json encode(const T& value) {
  if constexpr (kHasFields<T>) {
    Json j = Json::object();
    T::eachField([&](const char* key, const auto& member) {
      if (*key) {
        j[fieldName(key)] = encode(member);
      } else {
        j.update(encode(member));
      }
    }, value);
    return j;
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<uint64_t>(value);
  } else if constexpr (IsOptional<T>::value) {
    return value ? encode(*value) : Json(nullptr);
  } else if constexpr (IsVector<T>::value) {
    Json j = Json::array();
    for (const auto& item : value) j.push_back(encode(item));
    return j;
  } else if constexpr (IsMap<T>::value) {
    Json j = Json::array();
    for (const auto& [k, v] : value) j.push_back(Json::array({encode(k), encode(v)}));
    return j;
  } else if constexpr (IsPair<T>::value) {
    return Json::array({encode(value.first), encode(value.second)});
  } else {
    return Json(value);
  }
}

/// The keys of T's fields, those of inlined members among them.
template <class T> void addKeys(std::set<std::string>& keys) {
  const T model{};
  T::eachField([&](const char* key, const auto& member) {
    using Member = std::decay_t<decltype(member)>;
    if constexpr (kHasFields<Member>) {
      if (!*key) return addKeys<Member>(keys);
    }
    keys.insert(fieldName(key));
  }, model);
}
template <class T> const std::set<std::string>& keysOf() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> out;
    addKeys<T>(out);
    return out;
  }();
  return keys;
}

template <class I> const char* integerName() {
  if constexpr (std::is_signed_v<I>) return sizeof(I) == 8 ? "an i64" : "an i32";
  switch (sizeof(I)) {
    case 1: return "a u8";
    case 2: return "a u16";
    case 4: return "a u32";
  }
  return "a u64";
}

/// Reads JSON into contract structs, strictly: every field there, nothing else, each of
/// its type and within its range; the first mistake is kept, named by its path
/// (`programs[2].method`).
class Reader {
 public:
  const std::string& error() const { return error_; }

  template <class T> bool read(const Json& j, T& out, const std::string& path) {
    if constexpr (kHasFields<T>) {
      if (!j.is_object()) return fail(path, j, "not an object");
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!keysOf<T>().count(it.key())) {
          return fail(at(path, it.key().c_str()), "is not a field kq knows");
        }
      }
      return readFields(j, out, path);
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!j.is_boolean()) return fail(path, j, "not true or false");
      out = j.get<bool>();
      return true;
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!j.is_string()) return fail(path, j, "not a string");
      out = j.get<std::string>();
      return true;
    } else if constexpr (std::is_enum_v<T>) {
      std::underlying_type_t<T> number;
      if (!read(j, number, path)) return false;
      if (number >= EnumTable<T>::kCount) {
        return fail(path, j, fmt::format("which is no {} (0 to {})", EnumTable<T>::kWhat,
                                         EnumTable<T>::kCount - 1));
      }
      out = static_cast<T>(number);
      return true;
    } else if constexpr (std::is_integral_v<T>) {
      return readInteger(j, out, path);
    } else if constexpr (IsOptional<T>::value) {
      if (j.is_null()) {
        out.reset();
        return true;
      }
      out.emplace();
      return read(j, *out, path);
    } else if constexpr (IsVector<T>::value) {
      if (!j.is_array()) return fail(path, j, "not a list");
      out.assign(j.size(), typename T::value_type{});
      for (size_t i = 0; i < j.size(); ++i) {
        typename T::value_type item{};
        if (!read(j[i], item, fmt::format("{}[{}]", path, i))) return false;
        out[i] = std::move(item);
      }
      return true;
    } else if constexpr (IsMap<T>::value) {
      if (!j.is_array()) return fail(path, j, "not a list of [key, value] pairs");
      out.clear();
      for (size_t i = 0; i < j.size(); ++i) {
        std::pair<typename T::key_type, typename T::mapped_type> entry;
        if (!read(j[i], entry, fmt::format("{}[{}]", path, i))) return false;
        out[entry.first] = std::move(entry.second);
      }
      return true;
    } else {
      static_assert(IsPair<T>::value, "a contract struct holds a type the codec cannot read");
      if (!j.is_array() || j.size() != 2) return fail(path, j, "not a pair");
      return read(j[0], out.first, path + "[0]") && read(j[1], out.second, path + "[1]");
    }
  }

  /// Reads T's fields from the object `j` (an inlined member's from the same object).
  template <class T> bool readFields(const Json& j, T& out, const std::string& path) {
    bool ok = true;
    T::eachField([&](const char* key, auto& member) {
      if (!ok) return;
      if constexpr (kHasFields<std::decay_t<decltype(member)>>) {
        if (!*key) {
          ok = readFields(j, member, path);
          return;
        }
      }
      const char* name = fieldName(key);
      auto it = j.find(name);
      if (it == j.end()) {
        ok = optionalField(key) || fail(at(path, name), "is missing");
        return;
      }
      ok = read(*it, member, at(path, name));
    }, out);
    return ok;
  }

 private:
  template <class I> bool readInteger(const Json& j, I& out, const std::string& path) {
    using Limits = std::numeric_limits<I>;
    if (j.is_number_unsigned()) {
      uint64_t n = j.get<uint64_t>();
      if (n > static_cast<uint64_t>(Limits::max())) {
        return fail(path, j, fmt::format("more than {} holds", integerName<I>()));
      }
      out = static_cast<I>(n);
      return true;
    }
    if (j.is_number_integer()) {
      int64_t n = j.get<int64_t>();
      if (n < static_cast<int64_t>(Limits::min())) {
        return fail(path, j, fmt::format("less than {} holds", integerName<I>()));
      }
      out = static_cast<I>(n);
      return true;
    }
    return fail(path, j, "not an integer");
  }

  bool fail(const std::string& path, const Json& j, const std::string& what) {
    std::string shown = j.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
    return fail(path, fmt::format("is {}, {}", shown, what));
  }
  bool fail(const std::string& path, const std::string& what) {
    error_ = fmt::format("{} {}", path.empty() ? "the plan" : path, what);
    return false;
  }

  std::string error_;
};

/// nlohmann's message without its `[json.exception.parse_error.101] ` prefix.
std::string parseError(const std::exception& e) {
  std::string what = e.what();
  size_t end = what.rfind("] ", what.find(' ') + 1);
  return end == std::string::npos ? what : what.substr(end + 2);
}

}  // namespace

std::string encodePlan(const PortablePlan& plan) {
  Json j{{"format", kPlanFormat}};
  j.update(encode(plan));
  // A name that is not UTF-8 (a binary's path) is written with U+FFFD for its bad bytes.
  return j.dump(1, ' ', false, Json::error_handler_t::replace);
}

std::optional<PortablePlan> decodePlanFields(const std::string& text, std::string* error) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    *error = "its plan is not JSON: " + parseError(e);
    return std::nullopt;
  }
  auto format = j.is_object() ? j.find("format") : j.end();
  if (format == j.end() || !format->is_number_integer()) {
    *error = "its plan has no format number";
    return std::nullopt;
  }
  if (*format != kPlanFormat) {
    auto version = j.find("kq_version");
    *error = fmt::format("its plan is in format {} (written by kq {}); this kq reads format {}: "
                         "build it again with this kq",
                         format->dump(), version != j.end() && version->is_string()
                                             ? version->get<std::string>() : std::string("?"),
                         kPlanFormat);
    return std::nullopt;
  }
  j.erase(format);
  PortablePlan plan;
  Reader reader;
  if (!reader.read(j, plan, "")) {
    *error = reader.error();
    return std::nullopt;
  }
  return plan;
}

std::optional<PortablePlan> decodePlan(const std::string& text, std::string* error) {
  std::optional<PortablePlan> plan = decodePlanFields(text, error);
  if (!plan) return std::nullopt;
  if (std::string problem = planProblem(*plan); !problem.empty()) {
    *error = problem;
    return std::nullopt;
  }
  return plan;
}

}  // namespace kq::plan
