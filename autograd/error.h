#pragma once
// Exceptions that carry context. UsageError: the caller gave bad input (exit 2);
// InternalError: relpos itself is wrong (exit 1).
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace relpos {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw UsageError(fmt::format(format, std::forward<Args>(args)...));
}

template <class... Args>
void require(bool condition, fmt::format_string<Args...> format, Args&&... args) {
  if (!condition) throw UsageError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace relpos
