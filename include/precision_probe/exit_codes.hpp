#pragma once
// The exit codes, a contract with CI jobs: docs/exit-codes.md.

namespace precision_probe::exit_code {
inline constexpr int kOk = 0;  // every requirement met natively, nothing failed
inline constexpr int kRequirementNotMet =
    1;                                  // a required mode is emulated, unsupported or untested
inline constexpr int kUsage = 2;        // bad flags or values, unwritable output
inline constexpr int kEnvironment = 3;  // no usable GPU or driver where one is required
inline constexpr int kCheckFailed = 4;  // wrong numbers, NaN, an unexpected runtime error
inline constexpr int kTimedOut = 5;     // timed out or interrupted
}  // namespace precision_probe::exit_code
