#include "strings/strings.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

namespace precision_probe {

std::string trim(std::string_view text) {
  std::size_t begin = 0;
  std::size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])) != 0) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])) != 0) --end;
  return std::string(text.substr(begin, end - begin));
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t pos = text.find(separator, start);
    if (pos == std::string_view::npos) {
      parts.emplace_back(text.substr(start));
      return parts;
    }
    parts.emplace_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::optional<std::int64_t> parse_int(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::size_t offset = text[0] == '+' ? 1 : 0;
  if (offset == text.size()) return std::nullopt;
  std::int64_t value = 0;
  const char* first = text.data() + offset;
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr != last) return std::nullopt;
  return value;
}

std::optional<std::int64_t> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::int64_t total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t digits = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == digits || i == text.size() || i - digits > 9) return std::nullopt;
    const std::int64_t number = *parse_int(text.substr(digits, i - digits));
    std::int64_t unit = 0;
    switch (text[i]) {
      case 's': unit = 1; break;
      case 'm': unit = 60; break;
      case 'h': unit = 3600; break;
      case 'd': unit = 86400; break;
      default: return std::nullopt;
    }
    total += number * unit;  // at most 9 digits a term: no overflow in a few terms
    if (total > (std::int64_t{1} << 40)) return std::nullopt;
    ++i;
  }
  return total;
}

std::string version_release(std::string_view version) {
  return std::string(version.substr(0, version.find('+')));
}

std::string format_duration(std::int64_t seconds) {
  if (seconds < 0) return "-" + format_duration(-seconds);
  if (seconds < 60) return std::to_string(seconds) + "s";
  std::string text;
  const std::int64_t days = seconds / 86400;
  const std::int64_t hours = seconds % 86400 / 3600;
  const std::int64_t minutes = seconds % 3600 / 60;
  if (days > 0) text += std::to_string(days) + "d";
  if (hours > 0) text += std::to_string(hours) + "h";
  if (minutes > 0 && days == 0) text += std::to_string(minutes) + "m";
  return text;
}

namespace {

// Days since 1970-01-01 of a date in the proleptic Gregorian calendar (H. Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// The days of a month of the Gregorian calendar (February of a leap year: 29).
int days_in_month(int year, int month) {
  constexpr std::array<int, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[static_cast<std::size_t>(month - 1)];
}

// `count` digits at `pos` as a number, or -1.
int digits_at(std::string_view text, std::size_t pos, std::size_t count) {
  if (pos + count > text.size()) return -1;
  int value = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

std::optional<std::int64_t> parse_utc_timestamp(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != 't') || text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  const int year = digits_at(text, 0, 4);
  const int month = digits_at(text, 5, 2);
  const int day = digits_at(text, 8, 2);
  const int hour = digits_at(text, 11, 2);
  const int minute = digits_at(text, 14, 2);
  const int second = digits_at(text, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 ||
      minute > 59 || second < 0 || second > 60) {
    return std::nullopt;
  }
  // A day the month does not have (2026-02-31) is refused, not carried into the next month.
  if (day > days_in_month(year, month)) return std::nullopt;
  std::size_t pos = 19;
  std::int64_t ms = 0;
  if (text[pos] == '.') {
    const std::size_t first = ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    if (pos == first) return std::nullopt;
    constexpr std::array<int, 3> scale = {100, 10, 1};
    for (std::size_t i = first; i < std::min(pos, first + 3); ++i) {
      ms += std::int64_t{text[i] - '0'} * scale[i - first];
    }
  }
  const std::string_view zone = text.substr(pos);
  if (zone != "Z" && zone != "z" && zone != "+00:00") return std::nullopt;
  const std::int64_t days =
      days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  return ((days * 24 + hour) * 60 + minute) * 60 * 1000 + std::int64_t{second} * 1000 + ms;
}

std::string format_utc_timestamp(std::int64_t epoch_seconds) {
  const auto seconds = static_cast<std::time_t>(epoch_seconds);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  std::array<char, 32> text{};
  const std::size_t n = std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(text.data(), n);
}

std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x80) return 1;
  std::size_t length = 0;
  std::uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
    cp = b0 & 0x1FU;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    cp = b0 & 0x0FU;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    cp = b0 & 0x07U;
  }
  if (length == 0 || text.size() - i < length) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if ((b & 0xC0U) != 0x80U) return 0;
    cp = (cp << 6U) | (b & 0x3FU);
  }
  const std::uint32_t least = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
  const bool valid = cp >= least && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
  return valid ? length : 0;
}

std::string printable(std::string_view text, std::size_t max_chars) {
  std::string out;
  std::size_t kept = 0;
  const auto escaped_byte = [&out](unsigned char c) {
    static const char* hex = "0123456789abcdef";
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 0xf];
  };
  for (std::size_t i = 0; i < text.size();) {
    if (kept == max_chars) {
      out += "...";
      break;
    }
    ++kept;
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_length(text, i);
    if (length == 0 || c < 0x20 || c == 0x7f) {  // a byte that is no character, or a control
      escaped_byte(c);
      ++i;
    } else if (c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
      // C1 controls (U+0080-U+009F: 0xC2 0x80-0x9F) act on terminals as ESC sequences do.
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));
      i += 2;
    } else {
      out.append(text, i, length);
      i += length;
    }
  }
  return out;
}

std::string terminal_safe(std::string_view text) { return printable(text, text.size() + 1); }

std::string printable_path(std::string_view path, std::size_t max_chars) {
  std::size_t chars = 0;
  for (char c : path) chars += (static_cast<unsigned char>(c) & 0xc0) != 0x80 ? 1 : 0;
  if (chars <= max_chars || max_chars < 4) return printable(path, max_chars);
  // Keep the last max_chars - 3 characters, cut at a character boundary.
  std::size_t skip = chars - (max_chars - 3);
  std::size_t i = 0;
  for (; i < path.size() && skip > 0; ++i) {
    if (i + 1 >= path.size() || (static_cast<unsigned char>(path[i + 1]) & 0xc0) != 0x80) --skip;
  }
  return "..." + printable(path.substr(i), max_chars);
}

std::size_t visible_width(std::string_view text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\033') {  // ESC [ ... m
      while (i < text.size() && text[i] != 'm') ++i;
      continue;
    }
    if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) ++width;
  }
  return width;
}

std::vector<std::string> wrap(std::string_view text, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  for (const std::string& word : split(text, ' ')) {
    if (word.empty()) continue;
    if (!line.empty() && visible_width(line) + 1 + visible_width(word) > width) {
      lines.push_back(line);
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

CgroupPaths cgroup_paths(std::string_view proc_self_cgroup, std::string_view controller) {
  CgroupPaths paths;
  for (const std::string& line : split(proc_self_cgroup, '\n')) {
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (path.empty() || path[0] != '/') continue;
    if (line.substr(0, first) == "0" && controllers.empty()) paths.v2 = path;
    for (const std::string& c : split(controllers, ',')) {
      if (c == controller) paths.v1 = path;
    }
  }
  return paths;
}

std::string error_string(int errnum) {
  char buffer[256] = {};
  // The GNU strerror_r returns the message (maybe not in `buffer`).
  return ::strerror_r(errnum, buffer, sizeof buffer);
}

std::string format_uuid(const unsigned char (&b)[16], bool mig) {
  return fmt::format(
      "{}-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-"
      "{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
      mig ? "MIG" : "GPU", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
      b[12], b[13], b[14], b[15]);
}

}  // namespace precision_probe
