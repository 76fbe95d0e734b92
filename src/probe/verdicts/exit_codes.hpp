#pragma once
// The exit codes, a contract with CI jobs: docs/exit-codes.md. The table is the one source of
// their meanings (--help, the Prometheus help text and the docs check read it) and of the order in
// which they win when several apply (the probe's gate, summarize's, a failed delivery).

#include <array>
#include <cstddef>

#include "precision_probe/report.hpp"

namespace precision_probe::exit_code {

inline constexpr int kOk = 0;                 // every requirement met natively, nothing failed
inline constexpr int kRequirementNotMet = 1;  // a required mode is emulated, unsupported, untested
inline constexpr int kUsage = 2;              // bad flags or values, an output that cannot be
                                              // written (found before the run)
inline constexpr int kEnvironment = 3;        // no usable GPU, driver or engine where needed
inline constexpr int kCheckFailed = 4;        // wrong numbers, NaN, an unexpected runtime error
inline constexpr int kTimedOut = 5;           // timed out or interrupted
inline constexpr int kOutputFailed = 6;       // the report could not be delivered

struct Meaning {
  int code;
  int severity;  // when several codes apply, the highest severity wins
  const char* meaning;
};

// In the order of the codes. By severity: 2, 5, 3, 4, 6, 1, 0. A failed delivery (6) is decided
// last, so it replaces 0 and 1 (a report nobody received is no success) and 3, 4, 5 stand.
inline constexpr std::array<Meaning, 7> kMeanings = {{
    {kOk, 0, "every requirement met natively, nothing failed"},
    {kRequirementNotMet, 1,
     "a required mode is not natively usable (emulated, unsupported, not tested)"},
    {kUsage, 6, "usage error: a bad flag or value, or an output that cannot be written"},
    {kEnvironment, 4,
     "environment problem: no usable GPU, driver, engine or LibTorch where one is required"},
    {kCheckFailed, 3, "a check failed: wrong numbers, NaN, a runtime error, a crashed worker"},
    {kTimedOut, 5, "timed out or interrupted"},
    {kOutputFailed, 2, "the report could not be delivered (a write to stdout or a file failed)"},
}};

static_assert(kMeanings.back().code == kLastExitCode, "report.hpp's last exit code is the table's");

// A code's rank in the severity order; a code not in the table ranks above them all.
constexpr int severity(int code) {
  for (const Meaning& m : kMeanings) {
    if (m.code == code) return m.severity;
  }
  return static_cast<int>(kMeanings.size());
}

// The code that stands when both apply.
constexpr int most_severe(int a, int b) { return severity(b) > severity(a) ? b : a; }

// The codes, most severe first ("2, 5, 3, 4, 6, 1, 0").
constexpr std::array<int, kMeanings.size()> by_severity() {
  std::array<int, kMeanings.size()> order{};
  for (const Meaning& m : kMeanings) {
    order[kMeanings.size() - 1 - static_cast<std::size_t>(m.severity)] = m.code;
  }
  return order;
}

}  // namespace precision_probe::exit_code
