// The contract's field lists (plan/contract.h) against the structs they describe: every
// member is listed, equality and the codec see every listed field, and a plan with every
// field set comes back from its JSON equal to itself.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "plan/portable_plan.h"

namespace kq::plan {
namespace {

// --- Every member is listed: an aggregate takes as many initializers as it has members,
// so the most AnyField values `T{...}` accepts is its member count.

/// Converts to the type of any member (declared only: used where nothing is evaluated).
/// Not to an optional, whose own constructor takes an AnyField (two ways would be one too many).
struct AnyField {
  template <class T, std::enable_if_t<!IsOptional<T>::value, int> = 0> operator T() const;
};

template <class T, class... Fields>
auto initializable(int) -> decltype(void(T{std::declval<Fields>()...}), std::true_type{});
template <class T, class... Fields> std::false_type initializable(...);

template <class T, class... Fields> constexpr size_t memberCount() {
  if constexpr (decltype(initializable<T, Fields..., AnyField>(0))::value) {
    return memberCount<T, Fields..., AnyField>();
  } else {
    return sizeof...(Fields);
  }
}

template <class T> size_t listedCount() {
  size_t n = 0;
  const T model{};
  T::eachField([&](const char*, const auto&) { ++n; }, model);
  return n;
}

// --- A value with every field set to something else than its default, through the same list:
// a field added to a list is filled without a change here.

template <class T> void fill(T& value, uint64_t& seed) {
  if constexpr (kHasFields<T>) {
    T::eachField([&](const char*, auto& member) { fill(member, seed); }, value);
  } else if constexpr (std::is_same_v<T, bool>) {
    value = !value;
  } else if constexpr (std::is_enum_v<T>) {
    constexpr size_t count = EnumTable<T>::kCount;
    value = static_cast<T>((static_cast<size_t>(value) + 1 + seed++ % (count - 1)) % count);
  } else if constexpr (std::is_integral_v<T>) {
    value = static_cast<T>(value + 1 + seed++ % 100);
  } else if constexpr (std::is_same_v<T, std::string>) {
    value += "s" + std::to_string(seed++);
  } else if constexpr (IsOptional<T>::value) {
    value.emplace();
    fill(*value, seed);
  } else if constexpr (IsVector<T>::value) {
    for (int i = 0; i < 2; ++i) {
      typename T::value_type item{};
      fill(item, seed);
      value.push_back(item);
    }
  } else if constexpr (IsMap<T>::value) {
    typename T::key_type key{};
    typename T::mapped_type mapped{};
    fill(key, seed);
    fill(mapped, seed);
    value.emplace(key, mapped);
  } else {
    static_assert(IsPair<T>::value, "fill() cannot set this type");
    fill(value.first, seed);
    fill(value.second, seed);
  }
}

template <class T> T filled() {
  T value{};
  uint64_t seed = 0;
  fill(value, seed);
  return value;
}
PortablePlan filledPlan() { return filled<PortablePlan>(); }

/// `value` with its `k`th field (in list order) set back to its default.
template <class T> T withDefault(T value, size_t k) {
  const T defaults{};
  size_t i = 0;
  T::eachField([&](const char*, auto& member, const auto& fallback) {
    if (i++ == k) member = fallback;
  }, value, defaults);
  return value;
}

/// What each contract struct must be: every member listed, the filler setting each, and
/// equality comparing each.
template <class T> void expectWholeContract(const char* name) {
  EXPECT_EQ(memberCount<T>(), listedCount<T>())
      << name << " has a member its eachField does not list (or lists one twice)";
  const T full = filled<T>();
  const T defaults{};
  T::eachField([&](const char* key, const auto& x, const auto& y) {
    EXPECT_FALSE(x == y) << name << "::" << key << " was not filled";
  }, full, defaults);
  EXPECT_TRUE(full == full) << name;
  for (size_t k = 0; k < listedCount<T>(); ++k) {
    EXPECT_FALSE(withDefault(full, k) == full) << name << ": field " << k << " is not compared";
  }
}

TEST(Contract, EveryFieldIsListedFilledAndCompared) {
  expectWholeContract<FieldLayout>("FieldLayout");
  expectWholeContract<PacketLayout>("PacketLayout");
  expectWholeContract<ProbeLayout>("ProbeLayout");
  expectWholeContract<AggregateSlot>("AggregateSlot");
  expectWholeContract<AggregateLayout>("AggregateLayout");
  expectWholeContract<ProgramLayout>("ProgramLayout");
  expectWholeContract<PlannedProgram>("PlannedProgram");
  expectWholeContract<PlannedMap>("PlannedMap");
  expectWholeContract<PlannedJoin>("PlannedJoin");
  expectWholeContract<ProgramPlan>("ProgramPlan");
  expectWholeContract<QueryLimits>("QueryLimits");
  expectWholeContract<RecordField>("RecordField");
  expectWholeContract<TracepointRecord>("TracepointRecord");
  expectWholeContract<PortablePlan>("PortablePlan");
}

/// Calls `each(key, a_member, b_member)` for every field of every struct within two values
/// of one shape.
template <class T, class Each> void eachFieldDeep(const T& a, const T& b, Each&& each) {
  T::eachField([&](const char* key, const auto& x, const auto& y) {
    using Member = std::decay_t<decltype(x)>;
    each(key, x, y);
    if constexpr (kHasFields<Member>) {
      eachFieldDeep(x, y, each);
    } else if constexpr (IsVector<Member>::value) {
      if constexpr (kHasFields<typename Member::value_type>) {
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) eachFieldDeep(x[i], y[i], each);
      }
    } else if constexpr (IsOptional<Member>::value) {
      if (x && y) eachFieldDeep(*x, *y, each);
    }
  }, a, b);
}

// --- The codec.

TEST(PlanCodec, EveryFieldRoundTrips) {
  PortablePlan filled = filledPlan();
  std::string error;
  std::optional<PortablePlan> decoded = decodePlanFields(encodePlan(filled), &error);
  ASSERT_TRUE(decoded) << error;
  // Field by field first, to name the one lost.
  eachFieldDeep(*decoded, filled, [&](const char* key, const auto& x, const auto& y) {
    EXPECT_TRUE(x == y) << (*key ? key : "(inlined fields)") << " did not come back as it was written";
  });
  EXPECT_TRUE(*decoded == filled);
}

TEST(PlanCodec, TheKeylessTableOfAnObjectPrintsAsTheScriptDoes) {
  // `select count()` with no `group by`: the flag that makes its table an array entry,
  // which prints `(no events)` until one counts (format 1 lost it).
  PortablePlan plan;
  AggregateLayout table;
  table.single = true;
  plan.plan.layout.aggregates.push_back(table);
  std::string error;
  auto decoded = decodePlanFields(encodePlan(plan), &error);
  ASSERT_TRUE(decoded) << error;
  EXPECT_TRUE(decoded->plan.layout.aggregates[0].single);
}

TEST(PlanCodec, AKeylessTablesEntryIsReadBackAndIsTheFirstWhereAnOlderKqWroteNone) {
  // Keyless tables of one value size share an array: each names its entry. An object built
  // before that has none, and its tables are entry 0, as they were.
  using Json = nlohmann::ordered_json;
  PortablePlan plan;
  AggregateLayout table;
  table.single = true;
  plan.plan.layout.aggregates.push_back(table);
  table.entry = 7;
  plan.plan.layout.aggregates.push_back(table);
  std::string error;
  auto decoded = decodePlanFields(encodePlan(plan), &error);
  ASSERT_TRUE(decoded) << error;
  EXPECT_EQ(decoded->plan.layout.aggregates[1].entry, 7u);
  Json j = Json::parse(encodePlan(plan));
  for (Json& a : j["aggregates"]) a.erase("entry");
  decoded = decodePlanFields(j.dump(), &error);
  ASSERT_TRUE(decoded) << error;
  EXPECT_EQ(decoded->plan.layout.aggregates[1].entry, 0u);
}

TEST(PlanCodec, TheTextIsFlatWithItsFormatFirst) {
  std::string text = encodePlan(PortablePlan{});
  EXPECT_EQ(text.rfind("{\n \"format\": 6,\n \"kq_version\"", 0), 0u) << text;
  for (const char* key : {"\"programs\"", "\"probes\"", "\"aggregates\"", "\"queries\"", "\"limits\"",
                          "\"group_notes\""}) {
    EXPECT_NE(text.find(key), std::string::npos) << key;
  }
}

/// The error decoding `plan`'s JSON after `edit` says, or "" when it decodes.
template <class Edit> std::string decodeError(Edit edit) {
  PortablePlan plan = filledPlan();
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(encodePlan(plan));
  edit(j);
  std::string error;
  return decodePlanFields(j.dump(), &error) ? "" : error;
}

TEST(PlanCodec, AFieldAddedToTheFormatMayBeMissingAndKeepsItsDefault) {
  using Json = nlohmann::ordered_json;
  PortablePlan plan = filledPlan();
  Json j = Json::parse(encodePlan(plan));
  // Written without `?`, read from files that predate it.
  ASSERT_TRUE(j["programs"][0].contains("every_cpu"));
  for (Json& program : j["programs"]) {
    program.erase("perf_type");
    program.erase("perf_config");
    program.erase("every_cpu");
  }
  std::string error;
  std::optional<PortablePlan> decoded = decodePlanFields(j.dump(), &error);
  ASSERT_TRUE(decoded) << error;
  const PlannedProgram defaults{};
  EXPECT_EQ(decoded->plan.programs[0].perf_type, defaults.perf_type);
  EXPECT_EQ(decoded->plan.programs[0].perf_config, defaults.perf_config);
  EXPECT_EQ(decoded->plan.programs[0].every_cpu, defaults.every_cpu);
  EXPECT_EQ(decoded->plan.programs[0].function, plan.plan.programs[0].function);
  // The name is checked as any other.
  EXPECT_EQ(decodeError([](Json& j) { j["programs"][0]["every_cpu"] = 2; }),
            "programs[0].every_cpu is 2, not true or false");
}

TEST(PlanCodec, WhatIsNotAPlanIsNamedByItsPath) {
  using Json = nlohmann::ordered_json;
  EXPECT_EQ(decodeError([](Json& j) { j["aggregates"][0].erase("single"); }),
            "aggregates[0].single is missing");
  EXPECT_EQ(decodeError([](Json& j) { j["probes"][1]["fields"][0]["colour"] = 1; }),
            "probes[1].fields[0].colour is not a field kq knows");
  EXPECT_EQ(decodeError([](Json& j) { j["programs"][1]["method"] = 18446744073709551615ull; }),
            "programs[1].method is 18446744073709551615, more than a u32 holds");
  EXPECT_EQ(decodeError([](Json& j) { j["probes"][0]["fields"][1]["address_field"] = -3000000000ll; }),
            "probes[0].fields[1].address_field is -3000000000, less than an i32 holds");
  EXPECT_EQ(decodeError([](Json& j) { j["probes"][0]["fields"][1]["int_bytes"] = 256; }),
            "probes[0].fields[1].int_bytes is 256, more than a u8 holds");
  EXPECT_EQ(decodeError([](Json& j) { j["aggregates"][0]["per_cpu"] = "no"; }),
            "aggregates[0].per_cpu is \"no\", not true or false");
  EXPECT_EQ(decodeError([](Json& j) { j["probes"][0]["fields"][0]["kind"] = 25; }),
            "probes[0].fields[0].kind is 25, which is no field kind (0 to 24)");
  EXPECT_EQ(decodeError([](Json& j) { j["aggregates"][0]["slots"][0]["kind"] = 8; }),
            "aggregates[0].slots[0].kind is 8, which is no aggregate kind (0 to 7)");
  EXPECT_EQ(decodeError([](Json& j) { j["programs"][0]["attach"] = 14; }),
            "programs[0].attach is 14, which is no attach kind (0 to 13)");
  EXPECT_EQ(decodeError([](Json& j) { j["programs"][0]["stack_bytes"] = 1.5; }),
            "programs[0].stack_bytes is 1.5, not an integer");
  EXPECT_EQ(decodeError([](Json& j) { j["aggregates"][0]["columns"][0] = Json::array({true}); }),
            "aggregates[0].columns[0] is [true], not a pair");
  EXPECT_EQ(decodeError([](Json& j) { j["probes"][0]["packet"] = 7; }),
            "probes[0].packet is 7, not an object");
  EXPECT_EQ(decodeError([](Json& j) { j["probes"][0]["packet"] = nullptr; }), "");
  EXPECT_EQ(decodeError([](Json& j) { j["group_names"] = "x"; }), "group_names is \"x\", not a list");
  EXPECT_EQ(decodeError([](Json& j) { j = Json::array(); }), "its plan has no format number");
}

TEST(PlanCodec, AnObjectOfAnotherFormatIsBuiltAgain) {
  std::string error;
  EXPECT_FALSE(decodePlan(R"({"format": 1, "kq_version": "0.1.0", "programs": []})", &error));
  EXPECT_EQ(error, "its plan is in format 1 (written by kq 0.1.0); this kq reads format 6: build "
                   "it again with this kq");
  EXPECT_FALSE(decodePlan("{\"format\": 3,", &error));
  EXPECT_EQ(error.rfind("its plan is not JSON: ", 0), 0u) << error;
}

}  // namespace
}  // namespace kq::plan
