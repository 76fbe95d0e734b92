#pragma once
// The exit codes, a contract with CI jobs: docs/exit-codes.md. The table is the one source of
// their meanings (--help, the Prometheus help text and the docs check read it).

#include <array>

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
  const char* meaning;
};

inline constexpr std::array<Meaning, 7> kMeanings = {{
    {kOk, "every requirement met natively, nothing failed"},
    {kRequirementNotMet,
     "a required mode is not natively usable (emulated, unsupported, not tested)"},
    {kUsage, "usage error: a bad flag or value, or an output that cannot be written"},
    {kEnvironment,
     "environment problem: no usable GPU, driver, engine or LibTorch where one is required"},
    {kCheckFailed, "a check failed: wrong numbers, NaN, a runtime error, a crashed worker"},
    {kTimedOut, "timed out or interrupted"},
    {kOutputFailed, "the report could not be delivered (a write to stdout or a file failed)"},
}};

}  // namespace precision_probe::exit_code
