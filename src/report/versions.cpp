#include "precision_probe/versions.hpp"

#include <cctype>

#include "strings/strings.hpp"

namespace precision_probe {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The number `text` starts with, of 1 to `max_digits` digits, taken off `text`; nullopt (and
// `text` as it was) where it does not start with one or has more digits.
std::optional<int> take_number(std::string_view& text, std::size_t max_digits) {
  std::size_t digits = 0;
  int value = 0;
  while (digits < text.size() && is_digit(text[digits])) {
    if (++digits > max_digits) return std::nullopt;
    value = value * 10 + (text[digits - 1] - '0');
  }
  if (digits == 0) return std::nullopt;
  text.remove_prefix(digits);
  return value;
}

std::string_view without_spaces(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<ComputeCapability> make_cc(int major, int minor) {
  if (major < 1 || major > 99 || minor < 0 || minor > 9) return std::nullopt;
  return ComputeCapability{major, minor};
}

// "89" -> 8.9, "100" -> 10.0, "120" -> 12.0: the last digit is the minor version.
std::optional<ComputeCapability> from_packed_digits(std::string_view digits) {
  if (digits.size() < 2 || digits[0] == '0') return std::nullopt;
  std::string_view rest = digits;
  const auto number = take_number(rest, 3);
  if (!number || !rest.empty()) return std::nullopt;
  return make_cc(*number / 10, *number % 10);
}

}  // namespace

std::optional<Version> Version::parse(std::string_view text) {
  std::string_view rest = without_spaces(text);
  const auto major = take_number(rest, 3);
  if (!major || rest.empty() || rest.front() != '.') return std::nullopt;
  rest.remove_prefix(1);
  const auto minor = take_number(rest, 3);
  if (!minor) return std::nullopt;
  return Version{*major, *minor};
}

std::string Version::to_string() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string version_or_empty(const std::optional<Version>& version) {
  return version ? version->to_string() : std::string();
}

std::optional<ComputeCapability> ComputeCapability::parse(std::string_view text) {
  const std::string lower = to_lower(without_spaces(text));
  std::string_view view = lower;
  for (std::string_view prefix : {"sm_", "sm", "compute_"}) {
    if (starts_with(view, prefix)) return from_packed_digits(view.substr(prefix.size()));
  }
  const std::size_t dot = view.find('.');
  if (dot == std::string_view::npos) return from_packed_digits(view);
  std::string_view rest = view;
  const auto major = take_number(rest, 2);
  if (!major || rest.size() != 2 || rest[0] != '.' || !is_digit(rest[1])) return std::nullopt;
  return make_cc(*major, rest[1] - '0');
}

std::string ComputeCapability::to_string() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace precision_probe
