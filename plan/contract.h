// How the structs of the compiler-runtime contract (plan/event_layout.h, program_plan.h,
// query_limits.h, portable_plan.h) describe themselves. Each lists its fields once, in
// declaration order, in a static member:
//
//   template <class Visit, class... Self> static void eachField(Visit&& visit, Self&... self) {
//     visit("name", self.name...);
//     visit("kind", self.kind...);
//   }
//
// `visit(key, member...)` is called for each field with that member of every `self` (one
// value to encode, decode or fill; two to compare). `key` is the field's name in a
// `.kq.plan` and in what `kq run` says of it (`aggregates[0].per_cpu`). That one list
// drives the codec (plan/portable_plan.cpp), equality (below), the paths of the checks
// (plan/plan_check.cpp) and the test that fills every field and counts the members
// (tests/plan/contract_test.cpp): a field is listed once or that test fails.
//
// A key that starts with `?` (`"?every_cpu"`) is a field added to the format after files were
// written in it: the codec writes it without the `?` and, reading a file without it, keeps
// the member's default. Every other field must be in a file.
//
// The key kInlined lists a member's own fields at this level instead: a `.kq.plan` is flat
// (`programs`, `probes` and `aggregates` side by side), though PortablePlan holds a
// ProgramPlan, which holds a ProgramLayout.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace kq::plan {

inline constexpr const char* kInlined = "";

/// A field's name in files and messages: its key, without an optional field's `?`.
constexpr const char* fieldName(const char* key) { return *key == '?' ? key + 1 : key; }
/// Whether a file may leave the field out (its key starts with `?`).
constexpr bool optionalField(const char* key) { return *key == '?'; }

/// What the codec knows of an enum of the contract: how many enumerators it has (a number
/// at or past kCount names none) and what one is called in messages. Specialized next to
/// each enum, from its .def table.
template <class E> struct EnumTable;

namespace detail {
struct AnyVisit {
  template <class... Member> void operator()(const char*, Member&...) const {}
};
}  // namespace detail

/// Whether `T` lists its fields.
template <class T, class = void> struct HasFields : std::false_type {};
template <class T>
struct HasFields<T, std::void_t<decltype(T::eachField(detail::AnyVisit{}, std::declval<const T&>()))>>
    : std::true_type {};
template <class T> inline constexpr bool kHasFields = HasFields<T>::value;

/// The containers contract structs hold, for code that walks every field.
template <class T> struct IsVector : std::false_type {};
template <class T> struct IsVector<std::vector<T>> : std::true_type {};
template <class T> struct IsOptional : std::false_type {};
template <class T> struct IsOptional<std::optional<T>> : std::true_type {};
template <class T> struct IsMap : std::false_type {};
template <class K, class V> struct IsMap<std::map<K, V>> : std::true_type {};
template <class T> struct IsPair : std::false_type {};
template <class A, class B> struct IsPair<std::pair<A, B>> : std::true_type {};

/// Two values of a contract struct are equal when each listed field is.
template <class T, std::enable_if_t<kHasFields<T>, int> = 0>
bool operator==(const T& a, const T& b) {
  bool same = true;
  T::eachField([&](const char*, const auto& x, const auto& y) { same = same && x == y; }, a, b);
  return same;
}
template <class T, std::enable_if_t<kHasFields<T>, int> = 0>
bool operator!=(const T& a, const T& b) {
  return !(a == b);
}

}  // namespace kq::plan
