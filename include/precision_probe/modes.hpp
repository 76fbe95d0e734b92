#pragma once
// The precision modes and the status vocabulary every report uses. The mode table below is the
// one source of what a mode is: its key, its kind, its hardware rule on GPUs (by compute
// capability) and on CPUs (by ISA), the LibTorch it needs, its tolerance and its peak column.
// The CLI's help and errors, the printers, the precision matrix, the peaks and the docs checks
// all read it; the engine's kernel for each mode is in src/engine/kernels.cpp, keyed by the enum.
// Adding a mode: a row here, a case there, its tests.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precision_probe/expected.hpp"
#include "precision_probe/versions.hpp"

namespace precision_probe {

// Matmul precisions (smoke tests) followed by the mixed-precision training modes (AMP steps).
enum class Mode {
  fp32,
  tf32,
  fp16,
  bf16,
  fp8_e4m3,       // fp8, one scale per tensor
  fp8_e5m2,       // e5m2 x e4m3, one scale per tensor
  fp8_rowwise,    // e4m3, an fp32 scale per row of A and per column of B (torchao's row-wise)
  fp8_blockwise,  // e4m3, 1x128 scales for A, 128x128 for B (DeepSeek-V3)
  mxfp8,          // e4m3, an e8m0 scale per 32 elements (OCP MX)
  nvfp4,          // e2m1, an e4m3 scale per 16 elements and an fp32 scale per tensor
  mxfp4,          // e2m1, an e8m0 scale per 32 elements (OCP MX)
  int8,           // int8 x int8 accumulated in int32
  amp_fp16,
  amp_bf16,
};

// What the hardware offers for a mode, before anything runs.
enum class Hardware { native, emulated, unsupported };
// The verdict after the smoke test (or without it). kStatuses below is the one table of them.
enum class Status {
  native,
  emulated,
  unsupported,
  failed,       // wrong numbers, a runtime error in a check, a crash, a check past --check-timeout
  cannot_run,   // the stack cannot run on this device (no kernel image, a driver too old for it)
  refused,      // the device's own setting refused the work (compute mode Prohibited, Exclusive
                // Process held by another process)
  out_of_time,  // cut off by the run's deadline (--timeout) before it finished
  interrupted,  // cut off by a signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT)
  not_tested,
};

// A status's row: its key (JSON, text, metrics, labels) and its rank in a node-wide verdict
// (worst first: the node's label for a mode is the worst of its GPUs' statuses, docs/nfd.md).
// What the hardware lastingly is (failed, unsupported, emulated) ranks before what a setting or
// the run kept from being proved.
struct StatusInfo {
  Status status;
  std::string_view key;
  int node_rank;
};
// clang-format off
inline constexpr std::array<StatusInfo, 9> kStatuses = {{
    {Status::native, "native", 8},
    {Status::emulated, "emulated", 2},
    {Status::unsupported, "unsupported", 1},
    {Status::failed, "failed", 0},
    {Status::cannot_run, "cannot_run", 4},
    {Status::refused, "refused", 3},
    {Status::out_of_time, "out_of_time", 5},
    {Status::interrupted, "interrupted", 6},
    {Status::not_tested, "not_tested", 7},
}};
// clang-format on

std::string_view to_string(Hardware hardware);
std::string_view to_string(Status status);
const StatusInfo& status_info(Status status);

// The compute capabilities NVIDIA's GPUs have, each with its architecture: a closed table (NVIDIA's
// "CUDA GPUs - Compute Capability" list; 10.1 is Jetson Thor as drivers before CUDA 13 number it,
// 11.0 as CUDA 13 does). The mode table's verdicts are given for these alone: a compute capability
// no GPU has (8.8, 9.9) gets no family's verdicts, and one newer than the last here (13.0) no
// verdict at all; both are "unknown" (docs/precision-matrix.md).
struct KnownCc {
  ComputeCapability cc;
  std::string_view architecture;
};
inline constexpr std::array<KnownCc, 30> kKnownCcs = {{
    {{1, 0}, "Tesla"},      {{1, 1}, "Tesla"},        {{1, 2}, "Tesla"},
    {{1, 3}, "Tesla"},      {{2, 0}, "Fermi"},        {{2, 1}, "Fermi"},
    {{3, 0}, "Kepler"},     {{3, 2}, "Kepler"},       {{3, 5}, "Kepler"},
    {{3, 7}, "Kepler"},     {{5, 0}, "Maxwell"},      {{5, 2}, "Maxwell"},
    {{5, 3}, "Maxwell"},    {{6, 0}, "Pascal"},       {{6, 1}, "Pascal"},
    {{6, 2}, "Pascal"},     {{7, 0}, "Volta"},        {{7, 2}, "Volta"},
    {{7, 5}, "Turing"},     {{8, 0}, "Ampere"},       {{8, 6}, "Ampere"},
    {{8, 7}, "Ampere"},     {{8, 9}, "Ada Lovelace"}, {{9, 0}, "Hopper"},
    {{10, 0}, "Blackwell"}, {{10, 1}, "Blackwell"},   {{10, 3}, "Blackwell"},
    {{11, 0}, "Blackwell"}, {{12, 0}, "Blackwell"},   {{12, 1}, "Blackwell"},
}};

// Whether a GPU of this compute capability exists (kKnownCcs).
bool known_gpu_cc(ComputeCapability cc);

// Why a compute capability outside kKnownCcs gets no verdict: no GPU has it, or it is newer than
// every one this probe knows. "" for a known one.
std::string unknown_cc_reason(ComputeCapability cc);

// The marketing name of the architecture ("Hopper"), or "unknown" for a compute capability no GPU
// has (kKnownCcs).
std::string architecture_name(ComputeCapability cc);

// The LibTorch releases the engine runs: from the floor (older ones lack the stable C ABI it
// uses), and up to the newest it was tested against (newer ones run, marked untested).
inline constexpr Version kEngineFloor{2, 9};
inline constexpr Version kNewestTestedLibTorch{2, 15};

// --- The mode table --------------------------------------------------------------------------

enum class ModeKind {
  matmul,    // a matmul smoke test against float64 (and a benchmark with --bench)
  training,  // mixed-precision training steps against an fp32 run
};

// A run of compute capabilities, both ends included ({} is empty).
struct CcSpan {
  ComputeCapability from;
  ComputeCapability to;
  constexpr bool empty() const { return from.major == 0; }
  constexpr bool holds(ComputeCapability cc) const { return !empty() && cc >= from && !(to < cc); }
};

// On GPUs: native on the spans of compute capabilities listed; others get `otherwise` (emulated
// or unsupported), for the reason given.
struct GpuRule {
  std::array<CcSpan, 3> native;
  Hardware otherwise;
  std::string_view why_not;
};

// Where the LibTorch API the check uses accepts the recipe, when narrower than the hardware (its
// own architecture check): no span means wherever the hardware has it. Read from LibTorch's source
// up to `through`; a newer LibTorch may have lifted it, so there the check runs and its smoke
// test decides.
struct TorchRule {
  std::array<CcSpan, 2> runs_on;
  std::string_view why_not;
  Version through;
  bool accepts(ComputeCapability cc) const {
    if (runs_on[0].empty()) return true;
    for (const CcSpan& span : runs_on) {
      if (span.holds(cc)) return true;
    }
    return false;
  }
};

// On CPUs: what the ISA must have for the mode to be native.
enum class CpuNeeds {
  nothing,      // every CPU runs it natively (fp32)
  fp16_isa,     // FP16 arithmetic (AVX512-FP16, AMX-FP16; Arm asimdhp): else emulated
  bf16_isa,     // BF16 instructions (AVX512-BF16, AMX-BF16; Arm bf16): else emulated
  int8_isa,     // int8 dot products (AVX512-VNNI, AVX-VNNI, AMX-INT8; Arm i8mm): else emulated
  unavailable,  // no CPU has it (tensor-core formats): unsupported, for `cpu_why`
};

// The datasheet column a mode's peak is read from (docs/peaks.md).
enum class PeakColumn { none, fp32, tf32, fp16, bf16, fp8, fp4, int8 };

struct ModeInfo {
  Mode mode;
  std::string_view key;  // in flags, JSON and text
  ModeKind kind;
  GpuRule gpu;
  TorchRule torch;  // on GPUs
  CpuNeeds cpu;
  std::string_view cpu_why;  // when `cpu` is unavailable
  Version libtorch;          // the oldest LibTorch whose stable C ABI can run the check (2.9, the
                             // engine's floor, or later: docs/engine.md)
  Version cuda;              // on GPUs, the oldest CUDA the LibTorch build must carry (0.0: any)
  double tolerance;          // matmul: relative error against float64 (0: exact); training:
                             // final loss against the fp32 run's (relative); docs/report.md
  PeakColumn peak;
  std::string_view api;  // the operator the check calls (the scaled FP8 modes: _scaled_mm where
                         // the release cannot call v2, 2.9: docs/engine.md)
};

// clang-format off
inline constexpr CcSpan kFrom(int major, int minor) { return {{major, minor}, kLastCc}; }
inline constexpr CcSpan kOnly(int major_from, int minor_from, int major_to, int minor_to) {
  return {{major_from, minor_from}, {major_to, minor_to}};
}
inline constexpr std::string_view kFp8Why =
    "FP8 tensor cores need cc 8.9 (Ada Lovelace) or 9.0+ (Hopper, Blackwell)";
inline constexpr std::string_view kFp8CpuWhy =
    "no FP8 matrix instructions on this CPU, and LibTorch has no FP8 matmul on CPUs";
inline constexpr std::string_view kBlockScaledWhy =
    "block-scaled MMA (MX and NVFP4 formats) needs Blackwell's 5th-generation tensor cores: cc "
    "10.x (B200, B300), 11.0 (Thor) or 12.x (RTX 50, RTX PRO, GB10)";
inline constexpr std::array<ModeInfo, 14> kModeTable = {{
    {Mode::fp32, "fp32", ModeKind::matmul,
     {{kFrom(1, 0)}, Hardware::native, ""}, {},
     CpuNeeds::nothing, "", {2, 9}, {0, 0}, 1e-5, PeakColumn::fp32, "aten::mm"},
    {Mode::tf32, "tf32", ModeKind::matmul,
     {{kFrom(8, 0)}, Hardware::emulated,
      "no TF32 tensor cores before cc 8.0 (Ampere): LibTorch computes these matmuls in full FP32, "
      "correct but with no speed-up"}, {},
     CpuNeeds::unavailable, "TF32 is an NVIDIA tensor-core format; CPUs have no TF32 arithmetic",
     {2, 9}, {0, 0}, 5e-3, PeakColumn::tf32, "aten::mm"},
    {Mode::fp16, "fp16", ModeKind::matmul,
     {{kFrom(7, 0)}, Hardware::emulated, "no FP16 tensor cores before cc 7.0 (Volta): FP16 runs on the CUDA cores"}, {},
     CpuNeeds::fp16_isa, "", {2, 9}, {0, 0}, 1e-3, PeakColumn::fp16, "aten::mm"},
    {Mode::bf16, "bf16", ModeKind::matmul,
     {{kFrom(8, 0)}, Hardware::emulated,
      "no BF16 tensor cores before cc 8.0 (Ampere): cuBLAS emulates BF16 with FP32 arithmetic, "
      "slower than FP32"}, {},
     CpuNeeds::bf16_isa, "", {2, 9}, {0, 0}, 1e-2, PeakColumn::bf16, "aten::mm"},
    {Mode::fp8_e4m3, "fp8_e4m3", ModeKind::matmul,
     {{kFrom(8, 9)}, Hardware::unsupported, kFp8Why}, {},
     CpuNeeds::unavailable, kFp8CpuWhy, {2, 9}, {11, 8}, 1e-2, PeakColumn::fp8, "aten::_scaled_mm_v2"},
    {Mode::fp8_e5m2, "fp8_e5m2", ModeKind::matmul,
     {{kFrom(8, 9)}, Hardware::unsupported, kFp8Why}, {},
     CpuNeeds::unavailable, kFp8CpuWhy, {2, 9}, {11, 8}, 1e-2, PeakColumn::fp8, "aten::_scaled_mm_v2"},
    {Mode::fp8_rowwise, "fp8_rowwise", ModeKind::matmul,
     {{kFrom(8, 9)}, Hardware::unsupported, kFp8Why}, {},
     CpuNeeds::unavailable, kFp8CpuWhy, {2, 9}, {12, 0}, 1e-2, PeakColumn::fp8, "aten::_scaled_mm_v2"},
    {Mode::fp8_blockwise, "fp8_blockwise", ModeKind::matmul,
     {{kOnly(9, 0, 9, 0), kOnly(10, 0, 10, 0), kOnly(10, 3, 10, 3)}, Hardware::unsupported,
      "block-wise scaled FP8 (1x128 and 128x128 scales) has library kernels for cc 9.0 (Hopper, "
      "cuBLASLt), 10.0 and 10.3 (B200, B300, CUTLASS) only"},
     {{kOnly(9, 0, 9, 0)},
      "LibTorch's scaled_mm runs block-wise FP8 only on cc 9.0 (its _check_deepseek_support), "
      "although this GPU has kernels for it", {2, 11}},
     CpuNeeds::unavailable, kFp8CpuWhy, {2, 9}, {12, 9}, 1e-2, PeakColumn::fp8, "aten::_scaled_mm_v2"},
    {Mode::mxfp8, "mxfp8", ModeKind::matmul,
     {{kFrom(10, 0)}, Hardware::unsupported, kBlockScaledWhy}, {},
     CpuNeeds::unavailable, "no MX formats on CPUs", {2, 11}, {12, 8}, 1e-2, PeakColumn::fp8, "aten::_scaled_mm_v2"},
    {Mode::nvfp4, "nvfp4", ModeKind::matmul,
     {{kFrom(10, 0)}, Hardware::unsupported, kBlockScaledWhy}, {},
     CpuNeeds::unavailable, "no FP4 matrix instructions on CPUs", {2, 11}, {12, 8}, 1e-2, PeakColumn::fp4, "aten::_scaled_mm_v2"},
    {Mode::mxfp4, "mxfp4", ModeKind::matmul,
     {{kFrom(10, 0)}, Hardware::unsupported, kBlockScaledWhy},
     {{kOnly(10, 0, 10, 9)},
      "LibTorch's scaled_mm runs MXFP4 only on cc 10.x (its _check_mxfp4_support: an FBGEMM "
      "kernel; cuBLASLt has no MXFP4 mode)", {2, 11}},
     CpuNeeds::unavailable, "no FP4 matrix instructions on CPUs", {2, 11}, {12, 8}, 1e-2, PeakColumn::fp4, "aten::_scaled_mm_v2"},
    {Mode::int8, "int8", ModeKind::matmul,
     {{kOnly(7, 2, 7, 2), kOnly(7, 5, 10, 1), kFrom(11, 0)}, Hardware::emulated,
      "no int8 tensor cores here (before cc 7.5 other than Xavier's 7.2, and not on cc 10.3, "
      "B300, whose tensor cores dropped int8): int8 GEMMs run at a small fraction of the rate"},
     {}, CpuNeeds::int8_isa, "", {2, 9}, {0, 0}, 0.0, PeakColumn::int8, "aten::_int_mm"},
    {Mode::amp_fp16, "amp_fp16", ModeKind::training,
     {{kFrom(7, 0)}, Hardware::emulated,
      "no FP16 tensor cores before cc 7.0 (Volta): autocast to FP16 runs on the CUDA cores"}, {},
     CpuNeeds::fp16_isa, "", {2, 9}, {0, 0}, 0.02, PeakColumn::none, "explicit casts"},
    {Mode::amp_bf16, "amp_bf16", ModeKind::training,
     {{kFrom(8, 0)}, Hardware::emulated,
      "no BF16 tensor cores before cc 8.0 (Ampere): autocast to BF16 is emulated, slower than FP32"}, {},
     CpuNeeds::bf16_isa, "", {2, 9}, {0, 0}, 0.05, PeakColumn::none, "explicit casts"},
}};
// clang-format on

// A mode's row of kModeTable, whose rows are in the enum's order (a test checks it): its slot
// wherever values are kept by mode (PerMode, per_mode.hpp).
constexpr std::size_t mode_index(Mode mode) { return static_cast<std::size_t>(mode); }

// The row of a mode.
const ModeInfo& mode_info(Mode mode);

// What a LibTorch lacks for a mode's check ("" when nothing): its version, and on GPUs the CUDA
// it was built with (nullopt: unknown, or a CPU check) and, given the GPU's compute capability,
// its own architecture check (the row's TorchRule).
std::string missing_for(Mode mode, Version libtorch, std::optional<Version> cuda,
                        std::optional<ComputeCapability> cc = std::nullopt);

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

// Keys that stand for modes in --require: "fp8" is the per-tensor pair (as before the scaled
// recipes came), "fp4" the name NVFP4 had before it had a key of its own.
struct ModeAlias {
  std::string_view key;
  std::array<Mode, 2> modes;
  std::size_t count;
};
inline constexpr std::array<ModeAlias, 3> kModeAliases = {{
    {"fp8", {Mode::fp8_e4m3, Mode::fp8_e5m2}, 2},
    {"fp4", {Mode::nvfp4, Mode::nvfp4}, 1},
    {"amp", {Mode::amp_fp16, Mode::amp_bf16}, 2},
}};

// Every key --require accepts, for help and errors: "fp32, tf32, ..., fp8 (fp8_e4m3 and
// fp8_e5m2), fp4 (nvfp4), amp (amp_fp16 and amp_bf16)".
std::string accepted_mode_keys();

// Parses a --require list: comma separated keys, "fp8" standing for both fp8 keys, "amp" for both
// AMP keys. Duplicates are dropped, order is kept. On bad input, what is wrong.
Expected<std::vector<Mode>> parse_mode_list(std::string_view text);

}  // namespace precision_probe
