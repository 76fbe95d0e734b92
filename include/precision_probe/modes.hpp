#pragma once
// The precision modes and the status vocabulary every report uses. The mode table below is the
// one source of what a mode is: its key, its kind, its hardware rule on GPUs (by compute
// capability) and on CPUs (by ISA), the LibTorch it needs, its tolerance and its peak column.
// The CLI's help and errors, the printers, the precision matrix, the peaks and the docs checks
// all read it; the engine's kernel for each mode is in src/engine/kernels.cpp, keyed by the enum.
// Adding a mode: a row here, a case there, its tests.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace precision_probe {

// Matmul precisions (smoke tests) followed by the mixed-precision training modes (AMP steps).
enum class Mode { fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2, fp4, amp_fp16, amp_bf16 };

// What the hardware offers for a mode, before anything runs.
enum class Hardware { native, emulated, unsupported };
// The verdict after the smoke test (or without it).
enum class Status { native, emulated, unsupported, failed, not_tested };

std::string_view to_string(Hardware hardware);
std::string_view to_string(Status status);

struct ComputeCapability {
  int major = 0;
  int minor = 0;

  constexpr int as_int() const { return major * 10 + minor; }  // 8.9 -> 89
  std::string to_string() const;                               // "8.9"
  friend constexpr bool operator==(ComputeCapability a, ComputeCapability b) {
    return a.major == b.major && a.minor == b.minor;
  }
  friend constexpr bool operator<(ComputeCapability a, ComputeCapability b) {
    return a.as_int() < b.as_int();
  }
  friend constexpr bool operator>=(ComputeCapability a, ComputeCapability b) { return !(a < b); }
};

// The marketing name of the architecture ("Hopper"), or "unknown".
std::string architecture_name(ComputeCapability cc);

// A LibTorch version, major.minor.
struct Version {
  int major = 0;
  int minor = 0;
};

// --- The mode table --------------------------------------------------------------------------

enum class ModeKind {
  matmul,    // a matmul smoke test against float64 (and a benchmark with --bench)
  training,  // mixed-precision training steps against an fp32 run
};

// On GPUs: native from a compute capability; older architectures get `below` (emulated or
// unsupported), for the reason given.
struct GpuRule {
  ComputeCapability native_from;
  Hardware below;
  std::string_view why_below;
};

// On CPUs: what the ISA must have for the mode to be native.
enum class CpuNeeds {
  nothing,      // every CPU runs it natively (fp32)
  fp16_isa,     // FP16 arithmetic (AVX512-FP16, AMX-FP16; Arm asimdhp): else emulated
  bf16_isa,     // BF16 instructions (AVX512-BF16, AMX-BF16; Arm bf16): else emulated
  unavailable,  // no CPU has it (tensor-core formats): unsupported, for `cpu_why`
};

// The datasheet column a mode's peak is read from (docs/peaks.md).
enum class PeakColumn { none, fp32, tf32, fp16, bf16, fp8, fp4 };

struct ModeInfo {
  Mode mode;
  std::string_view key;  // in flags, JSON and text
  ModeKind kind;
  GpuRule gpu;
  CpuNeeds cpu;
  std::string_view cpu_why;  // when `cpu` is unavailable
  Version libtorch;          // the oldest LibTorch whose API the check uses
  Version cuda;              // on GPUs, the oldest CUDA the LibTorch build must carry (0.0: any)
  double tolerance;          // matmul: relative error against float64; training: final loss
                             // against the fp32 run's (relative); the reasoning: docs/report.md
  PeakColumn peak;
};

// clang-format off
inline constexpr std::array<ModeInfo, 9> kModeTable = {{
    {Mode::fp32, "fp32", ModeKind::matmul,
     {{1, 0}, Hardware::native, ""},
     CpuNeeds::nothing, "", {1, 13}, {0, 0}, 1e-5, PeakColumn::fp32},
    {Mode::tf32, "tf32", ModeKind::matmul,
     {{8, 0}, Hardware::emulated,
      "no TF32 tensor cores before cc 8.0 (Ampere): LibTorch computes these matmuls in full FP32, "
      "correct but with no speed-up"},
     CpuNeeds::unavailable, "TF32 is an NVIDIA tensor-core format; CPUs have no TF32 arithmetic",
     {1, 13}, {0, 0}, 5e-3, PeakColumn::tf32},
    {Mode::fp16, "fp16", ModeKind::matmul,
     {{7, 0}, Hardware::emulated, "no FP16 tensor cores before cc 7.0 (Volta): FP16 runs on the CUDA cores"},
     CpuNeeds::fp16_isa, "", {1, 13}, {0, 0}, 1e-3, PeakColumn::fp16},
    {Mode::bf16, "bf16", ModeKind::matmul,
     {{8, 0}, Hardware::emulated,
      "no BF16 tensor cores before cc 8.0 (Ampere): cuBLAS emulates BF16 with FP32 arithmetic, "
      "slower than FP32"},
     CpuNeeds::bf16_isa, "", {1, 13}, {0, 0}, 1e-2, PeakColumn::bf16},
    {Mode::fp8_e4m3, "fp8_e4m3", ModeKind::matmul,
     {{8, 9}, Hardware::unsupported, "FP8 tensor cores need cc 8.9 (Ada Lovelace) or 9.0+ (Hopper, Blackwell)"},
     CpuNeeds::unavailable, "no FP8 matrix instructions on this CPU, and LibTorch has no FP8 matmul on CPUs",
     {2, 4}, {11, 8}, 1e-2, PeakColumn::fp8},
    {Mode::fp8_e5m2, "fp8_e5m2", ModeKind::matmul,
     {{8, 9}, Hardware::unsupported, "FP8 tensor cores need cc 8.9 (Ada Lovelace) or 9.0+ (Hopper, Blackwell)"},
     CpuNeeds::unavailable, "no FP8 matrix instructions on this CPU, and LibTorch has no FP8 matmul on CPUs",
     {2, 4}, {11, 8}, 1e-2, PeakColumn::fp8},
    {Mode::fp4, "fp4", ModeKind::matmul,
     {{10, 0}, Hardware::unsupported, "FP4 tensor cores need cc 10.0+ (Blackwell)"},
     CpuNeeds::unavailable, "no FP4 matrix instructions on CPUs",
     {2, 8}, {12, 8}, 1e-2, PeakColumn::fp4},
    {Mode::amp_fp16, "amp_fp16", ModeKind::training,
     {{7, 0}, Hardware::emulated,
      "no FP16 tensor cores before cc 7.0 (Volta): autocast to FP16 runs on the CUDA cores"},
     CpuNeeds::fp16_isa, "", {1, 13}, {0, 0}, 0.02, PeakColumn::none},
    {Mode::amp_bf16, "amp_bf16", ModeKind::training,
     {{8, 0}, Hardware::emulated,
      "no BF16 tensor cores before cc 8.0 (Ampere): autocast to BF16 is emulated, slower than FP32"},
     CpuNeeds::bf16_isa, "", {1, 13}, {0, 0}, 0.05, PeakColumn::none},
}};
// clang-format on

// The row of a mode.
const ModeInfo& mode_info(Mode mode);

// What a LibTorch lacks for a mode's check ("" when nothing): its version, and on GPUs the CUDA
// it was built with (nullopt: unknown, or a CPU check).
std::string missing_for(Mode mode, Version libtorch, std::optional<Version> cuda);

// Every mode, in the table's order; the matmul modes; the training modes.
const std::vector<Mode>& all_modes();
const std::vector<Mode>& matmul_modes();
const std::vector<Mode>& training_modes();

// The key used in flags, JSON and text ("fp8_e4m3").
std::string_view mode_key(Mode mode);
std::optional<Mode> parse_mode(std::string_view key);
bool is_amp_mode(Mode mode);

// The probe's own tolerances, which a worker's word never overrides (the table's).
double smoke_tolerance(Mode mode);
double amp_loss_tolerance(Mode mode);

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

}  // namespace precision_probe
