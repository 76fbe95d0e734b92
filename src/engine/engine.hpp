#pragma once
// The kernel engine: the only code that includes LibTorch. It runs inside a worker process
// (precision-probe-engine), one per device, and answers in plain result structs.

#include <ATen/ATen.h>
#include <torch/version.h>

#include <cstdint>
#include <string>

#include "precision_probe/modes.hpp"
#include "precision_probe/results.hpp"

#define PP_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||     \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace precision_probe::engine {

// The LibTorch stack: version, CUDA and cuDNN versions, the GPU architectures it carries.
StackInfo describe_stack();

// Parses the text of at::show_config() / CUDAHooks::showConfig() into `stack`.
void parse_show_config(const std::string& config, StackInfo& stack);

// Where kernels run. For CUDA the worker sees exactly one device (CUDA_VISIBLE_DEVICES).
struct Target {
  at::Device device{at::kCPU};
  bool cuda = false;
};

// Why kernels cannot run on `target` at all ("" when they can): a CPU-only LibTorch asked for a
// GPU, or no CUDA device visible to it.
std::string unusable_reason(const Target& target);
std::string device_name(const Target& target);
void synchronize(const Target& target);

// One smoke test: C = A x B in `mode` on fresh random inputs drawn from `seed`, compared with a
// float64 reference computed on the CPU from the same (quantised) inputs.
SmokeOutcome run_smoke(Mode mode, const Target& target, std::uint64_t seed);

// The relative tolerance per precision (the error budget of the output rounding, with margin).
double smoke_tolerance(Mode mode);

}  // namespace precision_probe::engine
