#pragma once
// The run's second phase: what each worker is asked, as pure functions of the options and the
// facts (run_facts.hpp). A plan is never changed once made: what the workers answered is read
// beside it (assemble.hpp). Two plans, because the CPU's checks begin before the driver is asked:
// the start's, from the machine's facts alone, and the GPUs', once the driver has answered.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wire/worker.hpp"
#include "precision_probe/expected.hpp"
#include "probe/cli/options.hpp"
#include "probe/driver/driver.hpp"
#include "probe/run/engine_client.hpp"
#include "probe/run/run_facts.hpp"
#include "probe/verdicts/soak.hpp"

namespace precision_probe {

// The stack before anything runs: the image's PyTorch, read from its files (the engine loads its
// LibTorch), and what keeps kernels from running at all.
struct StackAtStart {
  StackInfo stack;
  std::string kernel_blocker;  // why no kernel can run, on the CPU or GPUs ("" when nothing)
  std::string gpu_blocker;     // why no GPU kernel can run ("" when nothing says so)
  std::string libtorch_dir;    // the LibTorch the workers load ("" when none is to be loaded)
};

// The image's stack, or one that is not available, saying why.
StackInfo stack_or_none(const std::optional<StackInfo>& image, bool torch_not_looked_for);
// Why a stack runs nothing on GPUs, from its files alone ("" when nothing says so).
std::string cuda_blocker(const StackInfo& stack);
// PRECISION_PROBE_TORCH naming no PyTorch, or PRECISION_PROBE_PYTHON no interpreter: bad input
// (its one line), else "".
std::string bad_torch_dir(const std::optional<StackInfo>& image);
// The stack a run was told not to look for (PRECISION_PROBE_TORCH=none): the hardware alone.
bool not_looked_for(const StackInfo& stack);

// What runs before the driver is asked.
struct StartPlan {
  std::uint64_t seed = 0;
  StackAtStart stack;
  std::optional<FaultInjection> inject;  // PRECISION_PROBE_INJECT_FAULT, read with --soak
  int expected_gpus = 0;                 // GPU workers worth starting before the driver answers
  int gpu_copies = 1;                    // PRECISION_PROBE_BENCH_GPU_COPIES (a bench switch)
  std::optional<Prestart> prestart;      // the workers started ahead (none: none is)
  std::optional<WorkerPlan> cpu;         // the CPU's checks: they need nothing from the driver
  // Why the CPU's checks are left out (PRECISION_PROBE_BENCH_SKIP_CPU, a bench switch), or "".
  std::string cpu_left_out;
  // With --bench and GPUs to come, the CPU's benchmark in a run of its own after the GPUs' (its
  // threads would starve the GPU workers' launching threads).
  std::optional<WorkerPlan> cpu_bench;
};

// Bad input that shows before anything runs (a malformed PRECISION_PROBE_INJECT_FAULT, a
// PRECISION_PROBE_TORCH naming no PyTorch) is the error.
Expected<StartPlan> plan_start(const Options& options, const StartFacts& facts);

// What runs once the driver has answered.
struct GpuPlan {
  std::vector<WorkerPlan> gpus;          // each selected GPU's plan
  std::vector<int> collective_on;        // the GPUs the collective spans
  std::optional<WorkerPlan> collective;  // --nccl
  bool collective_alone = false;         // after the GPUs (--bench: measurements run alone)
  bool telemetry = false;                // a GPU soaks: NVML is sampled while the workers run
  // --device named GPUs and none is visible: an environment problem (exit 3), "" otherwise.
  std::string unavailable_selection;
};

GpuPlan plan_gpus(const Options& options, const GpuFacts& facts, const StartPlan& start);

// A --device index the driver does not know is a usage error, said here (every index exists, or
// no GPU is visible at all: then the plan's `unavailable_selection` says so).
Expected<void> check_selection(const Options& options, const GpuFacts& facts);

bool gpu_selected(const Options& options, int index);

// How many GPU workers are worth starting before the driver answers: the GPUs' device nodes
// (/dev/nvidiaN), narrowed by CUDA_VISIBLE_DEVICES and --device. A wrong guess costs little: a
// worker too many is stopped unused, one too few is started once the plan is known.
int expected_gpu_workers(const DeviceNodes& nodes, const VisibleDevicesSpec& visible,
                         const DeviceSelection& selection);

}  // namespace precision_probe
