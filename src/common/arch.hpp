#pragma once
// Compute capabilities, the precision matrix (what each NVIDIA architecture supports in hardware)
// and the check of a GPU against the architectures a LibTorch build carries kernels for.
// Pure and offline: nothing here touches a driver. The table and its sources:
// docs/precision-matrix.md.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "precision_probe/report.hpp"

namespace precision_probe {

// Accepts "8.9", "sm_89", "sm89", "89", "compute_90" and "9.0a"-style suffixes are refused.
// Major 1..15, minor 0..9. nullopt on anything else.
std::optional<ComputeCapability> parse_compute_capability(std::string_view text);

struct HardwareVerdict {
  HardwareVerdict() = default;
  HardwareVerdict(Hardware h, std::string why, std::string lacks = "")
      : hardware(h), reason(std::move(why)), stack_lacks(std::move(lacks)) {}

  Hardware hardware = Hardware::unsupported;
  std::string reason;  // empty when native
  // Where the hardware has the mode and the LibTorch stack does not: which layer lacks what
  // (its version, the CUDA it was built with, its own architecture check). "" otherwise.
  std::string stack_lacks;
};

// What the GPU of this compute capability offers for a matmul precision or AMP mode.
HardwareVerdict gpu_hardware_support(ComputeCapability cc, Mode mode);
// The same, with what `stack` (the LibTorch build the engine carries) lacks for it on this GPU;
// nothing is said of a stack that is not known.
HardwareVerdict gpu_support(ComputeCapability cc, Mode mode, const StackInfo& stack);
// "2.11.0+cu130" -> 2.11, "13.0" -> 13.0; nullopt when it does not start with major.minor.
std::optional<Version> parse_version(std::string_view text);

// The GPU code a LibTorch build carries: sm_XY binaries (cubins) and compute_XY PTX.
struct ArchTarget {
  ComputeCapability cc;
  bool ptx = false;     // compute_XY: PTX the driver can JIT-compile for cc >= XY
  char variant = '\0';  // 'a' (arch-specific: exactly XY) or 'f' (family: same major, minor >= Y)
  std::string to_string() const;  // "sm_90a", "compute_80"
};

// Parses "sm_80 sm_90 compute_90" (torch.cuda.get_arch_list style, separated by spaces, commas or
// semicolons) and nvcc gencode flags ("-gencode;arch=compute_90,code=sm_90"). Unknown tokens are
// ignored. Duplicates removed, order kept.
std::vector<ArchTarget> parse_arch_list(std::string_view text);

// Whether a GPU of capability `cc` can run a build carrying `targets`.
KernelCoverage kernel_coverage(ComputeCapability cc, const std::vector<ArchTarget>& targets);

}  // namespace precision_probe
