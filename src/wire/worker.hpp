#pragma once
// What a worker is asked (its plan) and what it answered, as plain values: the two ends of the
// worker protocol (protocol.hpp), shared by the probe and the engine.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "precision_probe/report.hpp"

namespace precision_probe {

// What one plan of an engine session is asked to do: a device's checks (or the collective).
struct WorkerPlan {
  int slot = 0;  // the plan's number in its session: every line answering it names it
  DeviceKind kind = DeviceKind::cpu;
  int index = -1;                    // the visible GPU index in the report; -1 for the CPU
  std::string cuda_visible_devices;  // the GPU's UUID (or the collective's, comma separated): an
                                     // isolated session is started with it as its
                                     // CUDA_VISIBLE_DEVICES, and the GPU it runs on must be it
  std::vector<int> ordinals;         // the GPUs as the session's process numbers them (CUDA's
                                     // ordinals under its CUDA_VISIBLE_DEVICES): one for a GPU's
                                     // checks, the collective's ranks in order
  bool own_context = false;  // the GPU's checks in a context of their own, not its primary one:
                             // a copy of GPU 0 (PRECISION_PROBE_BENCH_GPU_COPIES, a bench switch)
  std::vector<Mode> smoke;   // matmul precisions to smoke-test
  std::vector<Mode> amp;     // mixed-precision training modes to run
  std::uint64_t seed = 0;    // random inputs are drawn from this seed
  std::int64_t bench_size = 0;  // > 0: benchmark every smoke mode that passed, at this size
  int collective_ranks = 0;     // > 0: this plan runs the NCCL all-reduce over that many
                                // GPUs (`ordinals`) and nothing else
  double soak_seconds = 0.0;    // > 0: soak these modes for that long (and nothing else)
  std::vector<Mode> soak_modes;
  std::int64_t soak_size = 0;   // the soak's GEMM size, M = N = K
  std::uint64_t soak_seed = 0;  // the run's: like GPUs multiply the same inputs
  // PRECISION_PROBE_INJECT_FAULT: flip one bit of this mode's result at this iteration (0: none).
  Mode inject_mode = Mode::fp32;
  std::int64_t inject_iteration = 0;
};

// What one worker answered. A worker that died or ran out of time still yields a result: the
// checks it did not finish are absent from `smoke` and `problem` says why.
struct WorkerResult {
  DeviceKind kind = DeviceKind::cpu;
  int index = -1;
  std::optional<StackInfo> stack;
  std::string device_name;  // the device as LibTorch names it
  std::string device_uuid;  // the GPU the worker ran on ("GPU-..."), when it said
  PerMode<SmokeOutcome> smoke;
  PerMode<AmpOutcome> amp;
  PerMode<BenchOutcome> bench;
  std::vector<CollectiveOutcome> collectives;
  PerMode<SoakOutcome> soak;  // the latest line of each mode
  std::string nccl_version;
  bool finished = false;                // the worker said "done"
  ErrorKind problem = ErrorKind::none;  // timed_out, crashed or runtime (could not start)
  std::string problem_message;
  std::optional<EngineRerun> rerun;  // it ran again in an isolated session: why the shared one went
};

}  // namespace precision_probe
