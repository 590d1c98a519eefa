#include "compiler/parse/literals.h"

#include <array>

#include <fmt/format.h>

namespace kq::parse {
namespace {

using ast::NumberUnit;

struct Unit {
  std::string_view suffix;
  NumberUnit unit;
  uint64_t scale;
};

constexpr uint64_t kSecond = 1'000'000'000;

constexpr std::array kUnits = {
    Unit{"ns", NumberUnit::Nanoseconds, 1},
    Unit{"us", NumberUnit::Nanoseconds, 1'000},
    Unit{"ms", NumberUnit::Nanoseconds, 1'000'000},
    Unit{"s", NumberUnit::Nanoseconds, kSecond},
    Unit{"m", NumberUnit::Nanoseconds, 60 * kSecond},
    Unit{"h", NumberUnit::Nanoseconds, 3600 * kSecond},
    Unit{"k", NumberUnit::Bytes, 1ull << 10},
    Unit{"K", NumberUnit::Bytes, 1ull << 10},
    Unit{"KiB", NumberUnit::Bytes, 1ull << 10},
    Unit{"M", NumberUnit::Bytes, 1ull << 20},
    Unit{"MiB", NumberUnit::Bytes, 1ull << 20},
    Unit{"G", NumberUnit::Bytes, 1ull << 30},
    Unit{"GiB", NumberUnit::Bytes, 1ull << 30},
    Unit{"hz", NumberUnit::Hertz, 1},
};

// Spellings people reach for, and the unit kq spells them with.
struct Synonym {
  std::string_view wrong;
  std::string_view right;
};
constexpr std::array kSynonyms = {
    Synonym{"sec", "s"},   Synonym{"secs", "s"},  Synonym{"second", "s"}, Synonym{"seconds", "s"},
    Synonym{"min", "m"},   Synonym{"mins", "m"},  Synonym{"msec", "ms"},  Synonym{"usec", "us"},
    Synonym{"nsec", "ns"}, Synonym{"hr", "h"},    Synonym{"hour", "h"},   Synonym{"hours", "h"},
    Synonym{"kb", "k"},    Synonym{"KB", "k"},    Synonym{"mb", "M"},     Synonym{"MB", "M"},
    Synonym{"gb", "G"},    Synonym{"GB", "G"},    Synonym{"Hz", "hz"},    Synonym{"HZ", "hz"},
    Synonym{"b", "(no unit)"}, Synonym{"B", "(no unit)"},
};

int digitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

LiteralError tooLarge(std::string_view text) {
  return {DiagKind::IntegerTooLarge, 0, static_cast<uint32_t>(text.size()),
          fmt::format("`{}` does not fit in 64 bits", text),
          "the largest value is 18446744073709551615 (0xffffffffffffffff)"};
}

std::variant<DecodedNumber, LiteralError> decodeRadix(std::string_view text, int radix,
                                                      std::string_view radix_name) {
  std::string_view digits = text.substr(2);
  auto bad = [&](std::string_view why) -> LiteralError {
    return {DiagKind::InvalidNumber, 0, static_cast<uint32_t>(text.size()),
            fmt::format("`{}` is not a {} number: {}", text, radix_name, why), ""};
  };
  if (digits.empty()) return bad(fmt::format("no digits after `{}`", text.substr(0, 2)));
  uint64_t value = 0;
  for (char c : digits) {
    int digit = digitValue(c);
    if (digit >= radix) return bad(fmt::format("`{}` is not a {} digit", c, radix_name));
    if (value > (UINT64_MAX - digit) / radix) return tooLarge(text);
    value = value * radix + digit;
  }
  return DecodedNumber{value, NumberUnit::None};
}

}  // namespace

std::variant<DecodedNumber, LiteralError> decodeNumber(std::string_view text) {
  if (text.size() >= 2 && text[0] == '0') {
    switch (text[1]) {
      case 'x': case 'X': return decodeRadix(text, 16, "hexadecimal");
      case 'o': case 'O': return decodeRadix(text, 8, "octal");
      case 'b': case 'B': return decodeRadix(text, 2, "binary");
      default: break;
    }
  }
  size_t digits_end = 0;
  while (digits_end < text.size() && text[digits_end] >= '0' && text[digits_end] <= '9') {
    ++digits_end;
  }
  std::string_view digits = text.substr(0, digits_end);
  std::string_view suffix = text.substr(digits_end);
  auto whole = static_cast<uint32_t>(text.size());

  if (digits.size() > 1 && digits[0] == '0') {
    return LiteralError{DiagKind::InvalidNumber, 0, whole,
                        fmt::format("`{}` has a leading zero", text),
                        fmt::format("write octal as `0o{}`, decimal without the leading zero",
                                    digits.substr(1))};
  }
  for (char c : suffix) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
      return LiteralError{DiagKind::InvalidNumber, 0, whole,
                          fmt::format("`{}` is not a number", text),
                          "a number is digits with an optional unit: `42`, `0xff`, `10ms`, `4k`"};
    }
  }

  uint64_t value = 0;
  for (char c : digits) {
    int digit = c - '0';
    if (value > (UINT64_MAX - digit) / 10) return tooLarge(text);
    value = value * 10 + digit;
  }
  if (suffix.empty()) return DecodedNumber{value, NumberUnit::None};

  for (const Unit& unit : kUnits) {
    if (unit.suffix != suffix) continue;
    if (value > UINT64_MAX / unit.scale) return tooLarge(text);
    return DecodedNumber{value * unit.scale, unit.unit};
  }

  std::string hint = "durations take ns, us, ms, s, m or h; sizes k, M or G; frequencies hz";
  for (const Synonym& synonym : kSynonyms) {
    if (synonym.wrong == suffix) {
      hint = synonym.right == "(no unit)"
                 ? fmt::format("write a byte count without a unit: `{}`", digits)
                 : fmt::format("did you mean `{}{}`?", digits, synonym.right);
    }
  }
  return LiteralError{DiagKind::UnknownUnit, static_cast<uint32_t>(digits_end), whole,
                      fmt::format("unknown unit `{}` in `{}`", suffix, text), hint};
}

DecodedString decodeString(std::string_view text) {
  DecodedString out;
  // The lexer guarantees an opening quote; the closing one may be missing.
  bool closed = text.size() >= 2 && text.back() == '"';
  if (closed) {
    // `"abc\"` ends with an escaped quote: still unterminated.
    size_t backslashes = 0;
    for (size_t i = text.size() - 1; i > 1 && text[i - 1] == '\\'; --i) ++backslashes;
    closed = backslashes % 2 == 0;
  }
  if (!closed) {
    out.errors.push_back({DiagKind::UnterminatedString, 0, 1,
                          "string is missing its closing `\"`",
                          "a string ends on the line where it starts"});
  }
  size_t end = closed ? text.size() - 1 : text.size();
  for (size_t i = 1; i < end; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c != '\\') {
      if (c < 0x20 && c != '\t') {
        out.errors.push_back({DiagKind::UnexpectedCharacter, static_cast<uint32_t>(i),
                              static_cast<uint32_t>(i + 1),
                              fmt::format("control character 0x{:02x} inside a string", c),
                              c == 0 ? "write a NUL byte as `\\0`" : "write it as `\\xHH`"});
      }
      out.value += static_cast<char>(c);
      continue;
    }
    if (i + 1 >= end) break;  // a lone trailing backslash of an unterminated string
    char escape = text[++i];
    switch (escape) {
      case 'n': out.value += '\n'; continue;
      case 't': out.value += '\t'; continue;
      case 'r': out.value += '\r'; continue;
      case '0': out.value += '\0'; continue;
      case '\\': out.value += '\\'; continue;
      case '"': out.value += '"'; continue;
      case '\'': out.value += '\''; continue;
      case 'x':
        if (i + 2 < end && digitValue(text[i + 1]) < 16 && digitValue(text[i + 2]) < 16) {
          out.value += static_cast<char>(digitValue(text[i + 1]) * 16 + digitValue(text[i + 2]));
          i += 2;
          continue;
        }
        out.errors.push_back({DiagKind::InvalidEscape, static_cast<uint32_t>(i - 1),
                              static_cast<uint32_t>(i + 1),
                              "`\\x` needs two hexadecimal digits", "for example `\\x1b`"});
        continue;
      default:
        break;
    }
    out.errors.push_back({DiagKind::InvalidEscape, static_cast<uint32_t>(i - 1),
                          static_cast<uint32_t>(i + 1),
                          fmt::format("unknown escape `\\{}` in a string", escape),
                          "escapes are \\n \\t \\r \\0 \\\\ \\\" \\' and \\xHH"});
  }
  return out;
}

}  // namespace kq::parse
