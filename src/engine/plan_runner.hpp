#pragma once
// One plan of an engine session, run on the session's loaded LibTorch: a device's smoke tests,
// training runs, benchmarks and soak, or the collective. Every answer is a line on stdout naming
// the plan's slot (wire/protocol.hpp), written whole: the session's plans run on threads of
// their own.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wire/worker.hpp"
#include "engine/checks/checks.hpp"
#include "engine/cuda/driver.hpp"
#include "engine/torch/torch.hpp"

namespace precision_probe::engine {

// Writes one line to stdout and flushes it; lines from several threads never interleave.
void emit(const std::string& line);

// What a plan's checks need before the first one runs, drawn on the host while LibTorch loads.
struct Prepared {
  std::vector<PreparedSmoke> smoke;
  AmpSetup amp;
};
Prepared prepare_plan(const WorkerPlan& plan);

// How a plan's checks load their kernels (PRECISION_PROBE_ENGINE_PRELOAD): all at once, each on a
// thread of its own, each check starting as soon as its own are loaded ("overlap") or once all are
// ("first"), or each check loading its own ("none").
enum class PreloadWay { overlap, first, none };
// The way a session takes: `setting` (PRECISION_PROBE_ENGINE_PRELOAD) where given, else none where
// one CPU is usable (`cpus`: the preloads' threads would only take turns, each with a cuBLAS handle
// of its own; docs/engine.md, "On one CPU") and overlap where more are.
PreloadWay preload_way(const std::optional<std::string>& setting, unsigned cpus);

// How a session's plans run their checks (its settings: docs/engine.md).
struct CheckWays {
  PreloadWay preload = PreloadWay::overlap;
  CpuRuns cpu_training = CpuRuns::at_once;
};
// The CPU's training runs one after another where one CPU is usable (`cpus`), at once where more
// are, unless `setting` (PRECISION_PROBE_ENGINE_CPU_TRAINING: "in-turn" or "at-once") says (another
// value is as none).
CpuRuns cpu_training_way(const std::optional<std::string>& setting, unsigned cpus);

// Whether the CPU's checks in a GPU session wait until no GPU plan is under way
// (PRECISION_PROBE_ENGINE_CPU_CHECKS): "after-gpus" or "beside" where given, else after the GPUs'
// where one CPU is usable (`cpus`: beside them they only take the GPUs' turns; docs/engine.md,
// "Under a CPU quota") and beside them where more are (another value is as none).
bool cpu_checks_after_gpus(const std::optional<std::string>& setting, unsigned cpus);

// What a GPU session has seen of its plans while its CPU's checks wait for the GPUs'.
struct GpuPlansSeen {
  int started = 0;       // GPU plans started, ended or not
  int under_way = 0;     // started and not yet ended
  bool measure = false;  // a plan of the session measures (--bench, --soak)
};
// Whether the CPU's checks that wait for the GPUs' may go: where a GPU plan has come and none is
// under way, or none can come (`none_to_come`: stdin has ended, or the session's driver did not
// start); at once where a plan measures (waiting, they would run inside the GPUs' measurements:
// they go beside the GPUs' checks instead). The probe sends the CPU's plan first and the GPUs' once
// the driver has answered, so none started is not yet none to wait for.
bool cpu_checks_may_go(const GpuPlansSeen& seen, bool none_to_come);

// Runs a device's plan: its GPU is bound first (`cuda` null for the CPU's).
void run_device_plan(const WorkerPlan& plan, const Torch& torch, const CudaDriver* cuda,
                     const Prepared& prepared, const CheckWays& ways);
// Runs the collective over the plan's ordinals.
void run_collective_plan(const WorkerPlan& plan, const Torch& torch);
// Every check of the plan answered as not run, of `kind`, with `why` (LibTorch or the GPU could
// not be had).
void answer_unavailable(const WorkerPlan& plan, ErrorKind kind, const std::string& why);

// Why a plan cannot be run in this process ("" when it can): a plan's device kind is the session's,
// no session has LibTorch's TF32 override on (it would make fp32's checks TF32), and tf32 is a
// GPU's check.
std::string plan_problem(const WorkerPlan& plan, DeviceKind session_kind);

}  // namespace precision_probe::engine
