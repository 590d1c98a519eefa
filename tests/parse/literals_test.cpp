#include "compiler/parse/literals.h"

#include <gtest/gtest.h>

namespace kq::parse {
namespace {

using ast::NumberUnit;

DecodedNumber number(std::string_view text) {
  auto decoded = decodeNumber(text);
  EXPECT_TRUE(std::holds_alternative<DecodedNumber>(decoded)) << text;
  return std::holds_alternative<DecodedNumber>(decoded) ? std::get<DecodedNumber>(decoded)
                                                        : DecodedNumber{};
}

LiteralError numberError(std::string_view text) {
  auto decoded = decodeNumber(text);
  EXPECT_TRUE(std::holds_alternative<LiteralError>(decoded)) << text;
  return std::holds_alternative<LiteralError>(decoded)
             ? std::get<LiteralError>(decoded)
             : LiteralError{DiagKind::InvalidNumber, 0, 0, "", ""};
}

TEST(DecodeNumber, Radixes) {
  EXPECT_EQ(number("0").value, 0u);
  EXPECT_EQ(number("42").value, 42u);
  EXPECT_EQ(number("0xdeadbeef").value, 0xdeadbeefu);
  EXPECT_EQ(number("0XFF").value, 255u);
  EXPECT_EQ(number("0o17").value, 15u);
  EXPECT_EQ(number("0b1010").value, 10u);
  EXPECT_EQ(number("18446744073709551615").value, UINT64_MAX);
  EXPECT_EQ(number("0xffffffffffffffff").value, UINT64_MAX);
}

TEST(DecodeNumber, Units) {
  EXPECT_EQ(number("500ms").value, 500'000'000u);
  EXPECT_EQ(number("500ms").unit, NumberUnit::Nanoseconds);
  EXPECT_EQ(number("10s").value, 10'000'000'000u);
  EXPECT_EQ(number("2m").value, 120'000'000'000u);
  EXPECT_EQ(number("1h").value, 3'600'000'000'000u);
  EXPECT_EQ(number("7us").value, 7'000u);
  EXPECT_EQ(number("7ns").value, 7u);
  EXPECT_EQ(number("4k").value, 4096u);
  EXPECT_EQ(number("4k").unit, NumberUnit::Bytes);
  EXPECT_EQ(number("1M").value, 1u << 20);
  EXPECT_EQ(number("2GiB").value, 2ull << 30);
  EXPECT_EQ(number("99hz").value, 99u);
  EXPECT_EQ(number("99hz").unit, NumberUnit::Hertz);
}

TEST(DecodeNumber, Errors) {
  EXPECT_EQ(numberError("18446744073709551616").kind, DiagKind::IntegerTooLarge);
  EXPECT_EQ(numberError("0x10000000000000000").kind, DiagKind::IntegerTooLarge);
  EXPECT_EQ(numberError("20000000000000000000ns").kind, DiagKind::IntegerTooLarge);
  EXPECT_EQ(numberError("18446744073709551615s").kind, DiagKind::IntegerTooLarge);
  EXPECT_EQ(numberError("0x").kind, DiagKind::InvalidNumber);
  EXPECT_EQ(numberError("0xfg").kind, DiagKind::InvalidNumber);
  EXPECT_EQ(numberError("0b102").kind, DiagKind::InvalidNumber);
  EXPECT_EQ(numberError("0o8").kind, DiagKind::InvalidNumber);
  EXPECT_EQ(numberError("0777").kind, DiagKind::InvalidNumber);
  EXPECT_EQ(numberError("1_000").kind, DiagKind::InvalidNumber);
  LiteralError unit = numberError("10sec");
  EXPECT_EQ(unit.kind, DiagKind::UnknownUnit);
  EXPECT_EQ(unit.begin, 2u);
  EXPECT_EQ(unit.hint, "did you mean `10s`?");
}

TEST(DecodeString, Escapes) {
  DecodedString s = decodeString(R"("a\n\t\\\"\x41\0")");
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(s.value, std::string("a\n\t\\\"A\0", 7));
}

TEST(DecodeString, Errors) {
  DecodedString bad = decodeString(R"("a\qb\x4")");
  ASSERT_EQ(bad.errors.size(), 2u);
  EXPECT_EQ(bad.errors[0].kind, DiagKind::InvalidEscape);
  EXPECT_EQ(bad.errors[0].begin, 2u);
  EXPECT_EQ(bad.errors[1].kind, DiagKind::InvalidEscape);

  EXPECT_EQ(decodeString("\"abc").errors.at(0).kind, DiagKind::UnterminatedString);
  EXPECT_EQ(decodeString(R"("abc\")").errors.at(0).kind, DiagKind::UnterminatedString);
  EXPECT_TRUE(decodeString(R"("abc\\")").errors.empty());
  EXPECT_EQ(decodeString(std::string("\"a\0b\"", 5)).errors.at(0).kind,
            DiagKind::UnexpectedCharacter);
}

}  // namespace
}  // namespace kq::parse
