#pragma once
// The precision modes the probe knows, and the status vocabulary every report uses.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace precision_probe {

// Matmul precisions (smoke tests) followed by the mixed-precision training modes (AMP steps).
enum class Mode { fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2, fp4, amp_fp16, amp_bf16 };

inline constexpr std::array<Mode, 7> kPrecisionModes = {
    Mode::fp32, Mode::tf32, Mode::fp16, Mode::bf16, Mode::fp8_e4m3, Mode::fp8_e5m2, Mode::fp4};
inline constexpr std::array<Mode, 2> kAmpModes = {Mode::amp_fp16, Mode::amp_bf16};
inline constexpr std::array<Mode, 9> kAllModes = {Mode::fp32, Mode::tf32,     Mode::fp16,
                                                  Mode::bf16, Mode::fp8_e4m3, Mode::fp8_e5m2,
                                                  Mode::fp4,  Mode::amp_fp16, Mode::amp_bf16};

// The key used in flags, JSON and text ("fp8_e4m3").
std::string_view mode_key(Mode mode);
std::optional<Mode> parse_mode(std::string_view key);
bool is_amp_mode(Mode mode);

// Keys that stand for several modes in --require ("fp8" is both fp8 modes).
struct ModeAlias {
  std::string_view key;
  std::array<Mode, 2> modes;
};
inline constexpr std::array<ModeAlias, 2> kModeAliases = {{
    {"fp8", {Mode::fp8_e4m3, Mode::fp8_e5m2}},
    {"amp", {Mode::amp_fp16, Mode::amp_bf16}},
}};

// Every key --require accepts, for help and errors: "fp32, tf32, ..., fp8 (fp8_e4m3 and
// fp8_e5m2), amp (amp_fp16 and amp_bf16)".
std::string accepted_mode_keys();

// Parses a --require list: comma separated keys, "fp8" standing for both fp8 keys, "amp" for both
// AMP keys. Duplicates are dropped, order is kept. Returns an error message on bad input.
struct ModeListParse {
  std::vector<Mode> modes;
  std::string error;  // empty on success
};
ModeListParse parse_mode_list(std::string_view text);

// The probe's own tolerances, which a worker's word never overrides: a smoke test's relative error
// against float64 (the error budget of the output rounding, with margin; docs/report.md), and how
// close a training run's final loss must be to the fp32 run's (relative).
double smoke_tolerance(Mode mode);
double amp_loss_tolerance(Mode mode);

// What the hardware offers for a mode, before anything runs.
enum class Hardware { native, emulated, unsupported };
// The verdict after the smoke test (or without it).
enum class Status { native, emulated, unsupported, failed, not_tested };

std::string_view to_string(Hardware hardware);
std::string_view to_string(Status status);

}  // namespace precision_probe
