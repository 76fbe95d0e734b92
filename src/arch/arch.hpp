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

// What the GPU of this compute capability offers for a matmul precision or AMP mode; for one no
// GPU has (kKnownCcs), unsupported with unknown_cc_reason: no mode is native there.
HardwareVerdict gpu_hardware_support(ComputeCapability cc, Mode mode);
// The same, with what `stack` (the LibTorch build the engine carries) lacks for it on this GPU;
// nothing is said of a stack that is not known.
HardwareVerdict gpu_support(ComputeCapability cc, Mode mode, const StackInfo& stack);
// The GPU code a LibTorch build carries: sm_XY binaries (cubins) and compute_XY PTX.
struct ArchTarget {
  ComputeCapability cc;
  bool ptx = false;     // compute_XY: PTX the driver can JIT-compile for cc >= XY
  char variant = '\0';  // 'a' (arch-specific: exactly XY) or 'f' (family: same major, minor >= Y)

  // "sm_90a", "compute_80", "sm_100f", exactly as nvcc and fat binaries write them (lower case,
  // nothing around): its compute capability as ComputeCapability::parse reads "sm_90". nullopt
  // for anything else.
  static std::optional<ArchTarget> parse(std::string_view name);
  std::string to_string() const;  // "sm_90a", "compute_80"
};

// Parses "sm_80 sm_90 compute_90" (torch.cuda.get_arch_list style, separated by spaces, commas or
// semicolons) and nvcc gencode flags ("-gencode;arch=compute_90,code=sm_90"). Unknown tokens are
// ignored. Duplicates removed, order kept.
std::vector<ArchTarget> parse_arch_list(std::string_view text);

// Whether a GPU of capability `cc` can run a build carrying `targets`.
KernelCoverage kernel_coverage(ComputeCapability cc, const std::vector<ArchTarget>& targets);

}  // namespace precision_probe
