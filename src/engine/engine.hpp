#pragma once
// The kernel engine: the only code that includes LibTorch. It runs inside a worker process
// (precision-probe-engine), one per device, and answers in plain result structs.

#include <ATen/ATen.h>
#include <torch/version.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "precision_probe/modes.hpp"
#include "precision_probe/results.hpp"
#include "common/trace.hpp"
#include "common/worker.hpp"

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
// The CUDA this LibTorch was built with; nullopt for a CPU-only build.
std::optional<Version> cuda_build_version();
// The compute capability of a GPU target; nullopt for the CPU.
std::optional<ComputeCapability> device_capability(const Target& target);
std::string device_name(const Target& target);
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as NVML and nvidia-smi write it; "" for the CPU.
std::string device_uuid(const Target& target);
void synchronize(const Target& target);
// Creates the CUDA context and the cuBLAS/cuBLASLt handles: the slow, one-off part of the first
// kernel. The worker runs it in a thread while the CPU prepares the inputs.
void warm_up(const Target& target);
// Times `reps` calls of `call(i)` after untimed ones: `warmup` calls queued back to back and, on a
// GPU, then calls for at least `min_warmup`; device events around each call on a GPU, a steady
// clock on the CPU. Returns each timed call's milliseconds.
std::vector<double> time_calls(const Target& target, int warmup,
                               std::chrono::milliseconds min_warmup, int reps,
                               const std::function<void(int)>& call);
// The CPU part of time_calls, shared by both device implementations.
std::vector<double> time_calls_on_cpu(int warmup, int reps, const std::function<void(int)>& call);

// A smoke test prepared on the CPU: the inputs in the precision under test and the float64
// reference of their product. `outcome` is already final when preparation failed or the mode
// cannot run here.
// A tensor made on the CPU for the device: moved as stored, then seen as `view_as` (a view of
// the same bytes: fp4 and e8m0 tensors are moved as bytes) and, when `transposed`, as its
// transpose (a column-major matrix; scales with strides (1, rows)).
struct HostTensor {
  HostTensor() = default;
  HostTensor(at::Tensor t, std::optional<at::ScalarType> as = std::nullopt, bool t_ = false)
      : stored(std::move(t)), view_as(as), transposed(t_) {}

  at::Tensor stored;  // contiguous
  std::optional<at::ScalarType> view_as;
  bool transposed = false;
  at::Tensor on(const at::Device& device) const;
};

// A mode's operands on the CPU, made from float64 data (kernels.hpp makes them).
struct QuantisedOperands {
  HostTensor a, b;  // in the mode's storage; b is [k, n] as the call sees it
  std::vector<HostTensor> scales_a, scales_b;  // the recipe's scales, in the call's layout
  at::Tensor a_values;                         // float64 [m, k]: what `a` and its scales stand for
  at::Tensor b_values;                         // float64 [k, n]: what `b` and its scales stand for
  std::string method;                          // "at::mm bfloat16"
};

struct PreparedSmoke {
  Mode mode = Mode::fp32;
  SmokeOutcome outcome;
  bool ready = false;
  QuantisedOperands operands;  // CPU, in the precision under test
  at::Tensor reference;        // CPU, float64
};
PreparedSmoke prepare_smoke(Mode mode, const Target& target, std::uint64_t seed);
// Runs a prepared smoke test on the device and checks it against the reference.
SmokeOutcome execute_smoke(const PreparedSmoke& prepared, const Target& target);

// A 64-bit device value on its way to the host: the copy and an event queued behind it on the
// stream, so that waiting for it does not wait for the work queued after it. On a CPU, the value.
class PendingInt64 {
 public:
  PendingInt64(const at::Tensor& value, const Target& target);
  std::int64_t wait() const;

 private:
  at::Tensor host_;
  std::shared_ptr<void> event_;  // the CUDA event; none on CPUs
};

// A generator for `target` seeded with `seed` (the device's default one on GPUs, reseeded).
at::Generator seeded_generator(const Target& target, std::uint64_t seed);

// --soak (soak.cpp): `modes` on `target` for plan.soak_seconds, the modes in turns of a few
// seconds; after each turn `report` gets that mode's outcome so far.
void run_soak(const WorkerPlan& plan, const std::vector<Mode>& modes, const Target& target,
              const std::function<void(Mode, const SoakOutcome&)>& report);

// Sets the float32 matmul precision for one check and restores it afterwards. Only the
// string setter exists in every LibTorch from 1.13 to 2.11.
class Float32PrecisionScope {
 public:
  explicit Float32PrecisionScope(bool tf32)
      : saved_(name_of(at::globalContext().float32MatmulPrecision())) {
    at::globalContext().setFloat32MatmulPrecision(tf32 ? "high" : "highest");
  }
  Float32PrecisionScope(const Float32PrecisionScope&) = delete;
  Float32PrecisionScope& operator=(const Float32PrecisionScope&) = delete;
  ~Float32PrecisionScope() { at::globalContext().setFloat32MatmulPrecision(saved_); }

 private:
  static std::string name_of(at::Float32MatmulPrecision p) {
    if (p == at::Float32MatmulPrecision::HIGH) return "high";
    if (p == at::Float32MatmulPrecision::MEDIUM) return "medium";
    return "highest";
  }
  std::string saved_;
};

// --- Kernel preloads (smoke.cpp, amp.cpp) --------------------------------------------------------

// An operation run once, untimed, for the code it loads. The first use of a kernel makes the
// driver load its module, which is slow for cuBLAS; asked from threads of their own, the loads
// overlap (docs/performance.md, "Loading kernels is the largest cost").
using Preload = std::function<void()>;
// Every ready smoke test's matmul. Skips tf32: the float32 matmul precision is process-wide, and
// tf32 shares fp32's kernels' code anyway.
std::vector<Preload> smoke_preloads(const std::vector<PreparedSmoke>& prepared,
                                    const Target& target);
// Runs every preload at once, each on its own thread, and waits for all. A preload that throws
// is passed over: the check that runs the same operation meets the error and reports it.
void run_preloads(const std::vector<Preload>& preloads);
// Runs task(0) ... task(count - 1) at once, each on a thread of its own (the calling thread takes
// the last), and waits for all. `task` must not throw.
void run_at_once(std::size_t count, const std::function<void(std::size_t)>& task);

// One smoke test: C = A x B in `mode` on fresh random inputs drawn from `seed`, compared with a
// float64 reference computed on the CPU from the same (quantised) inputs.
SmokeOutcome run_smoke(Mode mode, const Target& target, std::uint64_t seed);

// --- Throughput (bench.cpp) ---------------------------------------------------------------------

// The throughput of a square GEMM of `size` in `mode` right after warm-up (on GPUs after a rest,
// at boost clocks): random inputs rotated between calls, the median of the timed calls.
BenchOutcome run_bench(Mode mode, const Target& target, std::int64_t size, std::uint64_t seed);
// On GPUs, adds the throughput after a second of continuous load (sustained_*) to a benchmark
// that passed. Run it after every precision's run_bench: the loads would skew the others' start.
void measure_sustained(Mode mode, const Target& target, std::uint64_t seed, BenchOutcome& outcome);

// --- Collectives (nccl.cpp) ------------------------------------------------------------------

// All-reduce in fp32, fp16 and bf16 over GPUs 0..ranks-1 (the worker's visible GPUs), checked
// exactly, with the bandwidth of a `bytes`-sized message. Without NCCL in this LibTorch every
// outcome is not_supported with the reason.
std::vector<CollectiveOutcome> run_collectives(int ranks, std::int64_t bytes,
                                               std::string& nccl_version);

// --- Mixed-precision training (amp.cpp) --------------------------------------------------------

// The data and the initial parameters every training run (AMP and fp32) starts from.
struct AmpSetup {
  at::Tensor x, y;                              // the batch: 2048 rows on a GPU, 256 on a CPU
  std::vector<at::Tensor> init;                 // on the device
  std::vector<at::Tensor> init_host;            // the same on the CPU, to compare against
  std::optional<std::int64_t> fp32_peak_bytes;  // measured once, by the first measure_amp_memory
  bool fused_sgd = false;  // this LibTorch has a fused SGD for the device (else per tensor)
  bool ready = false;
  std::string error;
};
// The data and the initial parameters every run starts from.
AmpSetup prepare_amp(const Target& target, std::uint64_t seed);
// The operations of the training steps in `modes` (and of their fp32 references), each alone, at
// the training shapes: forward, backward (its functions called directly: through autograd, every
// backward pass queues on the device's one autograd thread), loss scaling and the optimizer step.
// Nothing on a CPU, where there is no code to load.
std::vector<Preload> amp_preloads(const std::vector<Mode>& modes, const Target& target);
// The training runs for `modes` (autocast, and loss scaling for amp_fp16), each checked against
// an fp32 run of the same steps. All runs, the fp32 ones too, go at once on threads of their own.
std::vector<std::pair<Mode, AmpOutcome>> run_amp(const std::vector<Mode>& modes,
                                                 const AmpSetup& setup, const Target& target);
// The losses of the fp32 run (the reference of amp_bf16).
std::vector<double> train_fp32(const AmpSetup& setup, const Target& target);
// Peak device memory of one training step, fp32 and AMP (GPUs only). Run it with nothing else
// on the device: the allocator's statistics are per device.
void measure_amp_memory(Mode mode, AmpOutcome& outcome, AmpSetup& setup, const Target& target);

// The device memory free for new allocations (the caching allocator's unused blocks released
// first); nullopt on the CPU.
std::optional<std::int64_t> free_device_memory(const Target& target);

// The caching allocator's statistics for the target's device; nullopt on the CPU.
std::optional<std::int64_t> allocated_bytes(const Target& target);
std::optional<std::int64_t> peak_allocated_bytes(const Target& target);
void reset_peak_memory(const Target& target);

}  // namespace precision_probe::engine
