#pragma once
// A value or the reason there is none: the project's one error convention for operations that can
// fail on bad input (C++17 has no std::expected). The error is one line, fit for a user.
//
//   Expected<Report> r = read_report_json(text);
//   if (!r) return fail(r.error());
//   use(*r);

#include <string>
#include <utility>
#include <variant>

namespace precision_probe {

// The error side, so that `return Unexpected{"why"};` converts to any Expected<T>.
struct Unexpected {
  std::string error;
};

template <class T>
class Expected {
 public:
  Expected(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit
  Expected(Unexpected error)                                               // NOLINT: implicit
      : state_(std::in_place_index<1>, std::move(error.error)) {}

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& operator*() & { return std::get<0>(state_); }
  const T& operator*() const& { return std::get<0>(state_); }
  T&& operator*() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &std::get<0>(state_); }
  const T* operator->() const { return &std::get<0>(state_); }

  // Only when there is no value.
  const std::string& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, std::string> state_;
};

// Success without a value, or the reason it failed.
template <>
class Expected<void> {
 public:
  Expected() = default;
  Expected(Unexpected error) : error_(std::move(error.error)), failed_(true) {}  // NOLINT: implicit

  bool has_value() const { return !failed_; }
  explicit operator bool() const { return has_value(); }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
  bool failed_ = false;
};

}  // namespace precision_probe
