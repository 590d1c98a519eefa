// Internal and system failures as values: a Result<T> holds a T or an Error saying what
// went wrong ("cannot read /sys/kernel/btf/vmlinux: Permission denied"). Library code
// returns these instead of exiting, so the REPL survives every failure.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace kq {

struct Error {
  std::string message;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}
  Result(Error error) : value_(std::move(error)) {}

  bool ok() const { return std::holds_alternative<T>(value_); }
  explicit operator bool() const { return ok(); }

  T& operator*() { return std::get<T>(value_); }
  const T& operator*() const { return std::get<T>(value_); }
  T* operator->() { return &std::get<T>(value_); }
  const T* operator->() const { return &std::get<T>(value_); }
  T take() { return std::move(std::get<T>(value_)); }

  const Error& error() const { return std::get<Error>(value_); }

 private:
  std::variant<T, Error> value_;
};

}  // namespace kq
