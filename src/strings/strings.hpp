#pragma once
// Small string helpers shared by the parsers. Pure functions, no allocation surprises.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace precision_probe {

std::string trim(std::string_view text);
std::string to_lower(std::string_view text);
std::vector<std::string> split(std::string_view text, char separator);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
bool starts_with(std::string_view text, std::string_view prefix);

// A version without its local part: "2.11.0+cu130" -> "2.11.0" (one release, builds apart).
std::string version_release(std::string_view version);

// A strict decimal integer: optional sign, digits only, no overflow. nullopt otherwise.
std::optional<std::int64_t> parse_int(std::string_view text);

// A duration: one or more numbers each with a unit, s, m, h or d ("90m", "24h", "1h30m", "7d"), in
// seconds. nullopt for anything else: a bare number has no unit and is refused.
std::optional<std::int64_t> parse_duration(std::string_view text);

// Seconds as parse_duration reads them, to the minute (to the hour past a day): "45s", "1h30m",
// "2d5h".
std::string format_duration(std::int64_t seconds);

// An RFC 3339 time in UTC as reports write it ("2026-12-01T06:52:08.123Z"; the fraction is
// optional, "+00:00" may stand for "Z"): milliseconds since the epoch. nullopt for anything else,
// a date the calendar does not have (2026-02-31, 2026-02-29) included.
std::optional<std::int64_t> parse_utc_timestamp(std::string_view text);

// Seconds since the epoch as RFC 3339 in UTC, whole seconds: "2026-12-01T07:52:08Z".
std::string format_utc_timestamp(std::int64_t epoch_seconds);

// The length of the UTF-8 character at text[i]: 1 for ASCII, 2 to 4 for a valid sequence (no
// overlong form, no surrogate, at most U+10FFFF), 0 where none starts there.
std::size_t utf8_length(std::string_view text, std::size_t i);

// Makes user input safe to quote in a one-line error: control characters (C1's too) and bytes
// that are not UTF-8 escaped, at most `max_chars` characters kept (with "..." appended when cut).
// UTF-8 text passes through.
std::string printable(std::string_view text, std::size_t max_chars = 80);

// Control characters (C0, DEL, C1) escaped, nothing cut: for text from outside (a driver's
// message, a library name, a worker's stderr) on its way to a terminal or a report.
std::string terminal_safe(std::string_view text);

// A path for a one-line message: escaped as printable() does, and when longer than `max_chars`,
// its end kept ("...dir/report.json"): the file name is what tells paths apart.
std::string printable_path(std::string_view path, std::size_t max_chars = 60);

// Greedy word wrap at `width` columns (UTF-8 characters): lines break at spaces; a word longer
// than a line stays whole on its own line. No line ends in a space.
std::vector<std::string> wrap(std::string_view text, std::size_t width);

// The columns a string takes on a terminal: UTF-8 characters, ANSI colour codes not counted.
std::size_t visible_width(std::string_view text);

// The directory part of a path: "." for a bare name, "/" for a file at the root.
std::string directory_of(const std::string& path);

// The cgroups /proc/self/cgroup's text ("ID:CONTROLLERS:PATH" lines; a path may hold ':') puts a
// process in: the v1 hierarchy's that lists `controller`, and the unified (v2) one's ("0::PATH");
// absolute paths only.
struct CgroupPaths {
  std::optional<std::string> v1;
  std::optional<std::string> v2;
};
CgroupPaths cgroup_paths(std::string_view proc_self_cgroup, std::string_view controller);

// strerror, thread-safe.
std::string error_string(int errnum);

// "GPU-8f3a2b1c-...": the canonical text form of a 16-byte CUDA UUID (as NVML and nvidia-smi
// write it), for the probe's driver queries and the engine's workers alike.
std::string format_uuid(const unsigned char (&bytes)[16], bool mig);

}  // namespace precision_probe
