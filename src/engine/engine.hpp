#pragma once
// The kernel engine: the only code that includes LibTorch. It runs inside a worker process
// (precision-probe-engine), one per device, and answers in plain result structs.

#include <ATen/ATen.h>
#include <torch/version.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "precision_probe/modes.hpp"
#include "precision_probe/results.hpp"
#include "precision_probe/trace.hpp"

#define PP_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||     \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace precision_probe::engine {

// The LibTorch stack: version, CUDA and cuDNN versions, the GPU architectures it carries. The
// CUDA part (`with_cuda_configuration`) loads cuDNN and needs a visible device on LibTorch 2.x:
// the probe asks for it only when the build-time cache lacks it.
StackInfo describe_stack(bool with_cuda_configuration);

// cuDNN's version number as text: 8907 -> "8.9.7", 91900 -> "9.19.0" (cuDNN 9 changed the
// encoding; LibTorch's own configuration text prints it as "91.9").
std::string format_cudnn_version(long version);

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
// Creates the CUDA context and the cuBLAS/cuBLASLt handles: the slow, one-off part of the first
// kernel. The worker runs it in a thread while the CPU prepares the inputs.
void warm_up(const Target& target);

// A smoke test prepared on the CPU: the inputs in the precision under test and the float64
// reference of their product. `outcome` is already final when preparation failed or the mode
// cannot run here.
struct PreparedSmoke {
  Mode mode = Mode::fp32;
  SmokeOutcome outcome;
  bool ready = false;
  at::Tensor a, b;            // CPU, in the precision under test
  bool b_transposed = false;  // b is stored [n, k]: the device uses b.t(), a column-major [k, n]
  at::Tensor reference;       // CPU, float64
};
PreparedSmoke prepare_smoke(Mode mode, const Target& target, std::uint64_t seed);
// Runs a prepared smoke test on the device and checks it against the reference.
SmokeOutcome execute_smoke(const PreparedSmoke& prepared, const Target& target);

// Runs every ready smoke test once, untimed, each in its own thread: the first use of a cuBLAS
// kernel loads its code (about 0.1 s each on an H200), and the loads overlap this way. Skips tf32:
// the float32 matmul precision is process-wide, and tf32 shares fp32's kernels' code anyway.
void preload_kernels(const std::vector<PreparedSmoke>& prepared, const Target& target);

// One smoke test: C = A x B in `mode` on fresh random inputs drawn from `seed`, compared with a
// float64 reference computed on the CPU from the same (quantised) inputs.
SmokeOutcome run_smoke(Mode mode, const Target& target, std::uint64_t seed);

// The relative tolerance per precision (the error budget of the output rounding, with margin).
double smoke_tolerance(Mode mode);

// --- Mixed-precision training (amp.cpp) --------------------------------------------------------

// The data, the initial parameters and the fp32 run that every AMP mode is compared with.
struct AmpSetup {
  at::Tensor x, y;
  std::vector<at::Tensor> init;
  std::vector<double> fp32_losses;
  bool ready = false;
  std::string error;
};
AmpSetup prepare_amp(const Target& target, std::uint64_t seed);
// A training run with autocast (and loss scaling for amp_fp16), checked against the fp32 run.
AmpOutcome run_amp(Mode mode, const AmpSetup& setup, const Target& target);
// Peak device memory of one training step at a large batch, fp32 and AMP (GPUs only).
void measure_amp_memory(Mode mode, AmpOutcome& outcome, const AmpSetup& setup,
                        const Target& target);
// How close the AMP run's final loss must be to the fp32 run's (relative).
double amp_loss_tolerance(Mode mode);

// The caching allocator's statistics for the target's device; nullopt on the CPU.
std::optional<std::int64_t> allocated_bytes(const Target& target);
std::optional<std::int64_t> peak_allocated_bytes(const Target& target);
void reset_peak_memory(const Target& target);

}  // namespace precision_probe::engine
