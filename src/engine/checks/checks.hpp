#pragma once
// The checks a worker runs, each answering in a plain result struct (results.hpp): matmul smoke
// tests against float64, mixed-precision training runs against fp32, benchmarks, the soak, and the
// all-reduce. Each catches what LibTorch or the driver throws and reports it as its outcome.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/host/host_math.hpp"
#include "wire/worker.hpp"
#include "engine/checks/kernels.hpp"
#include "engine/torch/ops.hpp"
#include "precision_probe/results.hpp"

namespace precision_probe::engine {

// An exception's text as one line: LibTorch's out-of-memory message ends at how much was free;
// at most 400 characters.
std::string error_line(const std::exception& e);

// Fills `o`'s error from an exception a check caught: a release that cannot run it is not_run,
// LibTorch's and the driver's errors are classified by their text.
template <typename Outcome>
void record_failure(Outcome& o, const std::exception& e) {
  o.error = error_line(e);
  o.error_kind =
      dynamic_cast<const CannotRun*>(&e) != nullptr ? ErrorKind::not_run : classify_error(o.error);
}

// --- Smoke tests (smoke.cpp) ----------------------------------------------------------------

// A smoke test prepared on the host, before LibTorch is loaded: the inputs in the precision under
// test (their bits) and the float64 reference of a sample of their product's rows, with every
// element's bound (engine/host/host_math.hpp).
struct PreparedSmoke {
  Mode mode = Mode::fp32;
  SmokeOutcome outcome;
  bool ready = false;
  HostOperands operands;
  ProductSample reference;
};
// Every mode's inputs and reference, on up to `threads` threads.
std::vector<PreparedSmoke> prepare_smoke(const std::vector<Mode>& modes, bool gpu,
                                         std::uint64_t seed, unsigned threads);
// Runs a prepared smoke test on the device and checks it against the reference.
SmokeOutcome execute_smoke(const PreparedSmoke& prepared, const Target& target);
// The device's whole result `got` [m, n] against the reference: every element finite and within
// its bound, the sampled rows within the tolerance (exactly equal where it is 0, int8's); fills
// `o`'s rel_error, ok and error.
void judge_smoke(SmokeOutcome& o, const std::vector<double>& got, const PreparedSmoke& prepared);

// An operation run once, untimed, for the code it loads (the first use of a cuBLAS kernel makes
// the driver load its module; from threads of their own, the loads overlap).
using Preload = std::function<void()>;
// One per prepared smoke test, in its order; an empty one where the test will not run a kernel.
std::vector<Preload> smoke_preloads(const std::vector<PreparedSmoke>& prepared,
                                    const Target& target);
// Runs every preload at once, each on a thread of its own (this one where no more can start),
// and waits for all. A preload that throws is passed over: its check meets the error itself.
void run_preloads(const std::vector<Preload>& preloads);

// Preloads under way: every one started at once, each on a thread of its own (run at once on this
// thread where none can start), so that a check can begin as soon as its own are done while the
// others still load. wait(i) waits for the i-th alone; the destructor for all of them.
class PreloadsUnderWay {
 public:
  explicit PreloadsUnderWay(std::vector<Preload> preloads);
  PreloadsUnderWay(const PreloadsUnderWay&) = delete;
  PreloadsUnderWay& operator=(const PreloadsUnderWay&) = delete;
  ~PreloadsUnderWay();
  void wait(std::size_t i) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// --- Mixed-precision training (amp.cpp) -----------------------------------------------------

// The data and initial parameters every run starts from, drawn on the host.
struct AmpSetup {
  std::int64_t batch = 0;
  std::vector<float> x, onehot;          // [batch, in], [batch, classes]
  std::vector<std::vector<float>> init;  // W1 [hidden, in], b1, W2 [classes, hidden], b2
};
// The training's batch: 2048 on a GPU; on a CPU 256, or 64 where one CPU is usable (`cpus`: a
// pod's quota of one CPU, where the run's time is its CPU time and the CPU's training runs come
// after the GPUs' checks; docs/engine.md, "On one CPU").
std::int64_t amp_batch(bool gpu, unsigned cpus);
// The data and initial parameters for `batch` rows, drawn from `seed`.
AmpSetup prepare_amp(std::int64_t batch, std::uint64_t seed);
// How the CPU's training runs go: at once, each on a thread of its own, or one after another on
// the calling thread (beside each other on one CPU they only take turns, each with its tensors in
// a malloc arena of its own). A GPU's go at once always.
enum class CpuRuns { at_once, in_turn };

// The training runs for `modes`, each checked against an fp32 run of the same steps; a GPU's at
// once on threads of their own, the CPU's as `cpu_runs` says. The memory of one step is measured
// after them (GPUs).
PerMode<AmpOutcome> run_amp(const std::vector<Mode>& modes, const AmpSetup& setup,
                            const Target& target, CpuRuns cpu_runs);
// The operations of the training steps of `modes`, each once (GPUs; nothing on a CPU).
std::vector<Preload> amp_preloads(const std::vector<Mode>& modes, const AmpSetup& setup,
                                  const Target& target);
// How a release runs the training steps (each outcome's `method`).
std::string amp_method(Mode mode, const Torch& torch);

// --- Throughput (bench.cpp) -----------------------------------------------------------------

// A square GEMM of `size` right after warm-up (on GPUs after a rest, at boost clocks): random
// inputs rotated between calls, the median of the timed calls.
BenchOutcome run_bench(Mode mode, const Target& target, std::int64_t size);
// On GPUs, the throughput after a second of continuous load, added to a benchmark that passed.
void measure_sustained(Mode mode, const Target& target, BenchOutcome& outcome);

// --- The soak (soak.cpp) ----------------------------------------------------------------------

// The soak's modes prepared: each GEMM made and its golden result computed (cool).
struct SoakState;
std::shared_ptr<SoakState> prepare_soak(
    const WorkerPlan& plan, const std::vector<Mode>& modes, const Target& target,
    const std::function<void(Mode, const SoakOutcome&)>& report);
// The modes in turns for the plan's seconds; after each turn `report` gets that mode's outcome.
void run_soak(SoakState& state, const WorkerPlan& plan, const Target& target,
              const std::function<void(Mode, const SoakOutcome&)>& report);

// --- Collectives (nccl.cpp) -----------------------------------------------------------------

// All-reduce in fp32, fp16 and bf16 over the GPUs of `ordinals` (as the process numbers them, one
// rank each, in order) through the image's NCCL (its own C API), checked exactly, with the
// bandwidth of a `bytes`-sized message.
std::vector<CollectiveOutcome> run_collectives(const Torch& torch, const std::vector<int>& ordinals,
                                               std::int64_t bytes, std::string& nccl_version);

}  // namespace precision_probe::engine
