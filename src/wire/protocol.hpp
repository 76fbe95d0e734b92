#pragma once
// The wire between the probe and an engine session: one engine process loads the image's LibTorch
// once and runs several plans at once, a device each (its slot). Plans go in as JSON lines on
// stdin, and the end of stdin says no more plans come; results come back as JSON lines on stdout,
// each naming its slot, one per finished check, so that a session that hangs or dies mid-way
// still leaves every finished result behind. Versioned; the probe never trusts a line blindly (a
// malformed line is a crashed session).

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "wire/cuda_snapshot.hpp"
#include "wire/worker.hpp"
#include "precision_probe/expected.hpp"

namespace precision_probe {

// 2: the plan carries the worker's CUDA_VISIBLE_DEVICES (workers start before their plan).
// 3: outcomes carry the report's JSON of their struct (report/json_fields.hpp).
// 4: the soak. 5: the engine loads the image's LibTorch (the library and its release in the
// hello), the TF32 process and the hold before measurements; the plan is one line.
// 6: sessions: several plans in one engine process, each line of a plan naming its slot; a plan
// names its GPUs by the session's device ordinals; "go SLOT".
// 7: no TF32 process: a GPU's tf32 is in its plan (cuBLAS asked for TF32 by name); no hold
// before measurements (the plan's "hold", "go SLOT", the "holding" progress line), which only
// the TF32 process needed.
// 8: a GPU session sends cuInit's answer ("cuda", wire/cuda_snapshot.hpp) once its driver has
// started: the probe asks the driver's agent only where no session did.
inline constexpr int kProtocolVersion = 8;

std::string encode_plan(const WorkerPlan& plan);
Expected<WorkerPlan> decode_plan(std::string_view text);

// Result lines (each one line of JSON, no newline inside). All but the session's own (its hello,
// cuInit's answer) name the slot of the plan they answer.
std::string encode_hello(const StackInfo& stack);
// cuInit's answer in a GPU session: the driver's CUDA version, the devices the session sees (the
// probe's own CUDA_VISIBLE_DEVICES in a shared session), their peer links.
std::string encode_cuda_answer(const CudaSnapshot& snapshot);
// The device a plan runs on: its name, and its UUID ("GPU-...", "" for the CPU).
std::string encode_device(int slot, const std::string& name, const std::string& uuid);
std::string encode_smoke(int slot, Mode mode, const SmokeOutcome& outcome);
std::string encode_amp(int slot, Mode mode, const AmpOutcome& outcome);
std::string encode_bench(int slot, Mode mode, const BenchOutcome& outcome);
std::string encode_soak(int slot, Mode mode, const SoakOutcome& outcome);
std::string encode_collective(int slot, const CollectiveOutcome& outcome,
                              const std::string& nccl_version);
std::string encode_done(int slot);
// A check that finished without a result of its own yet (a benchmark's first figure): it resets
// the probe's per-check watchdog.
std::string encode_progress(int slot, std::string_view what);

// The stack alone (engine --describe and the build cache).
std::string encode_stack(const StackInfo& stack);
Expected<StackInfo> decode_stack(std::string_view text);

// What a session has said of itself: its hello (the LibTorch it loaded) and cuInit's answer.
struct SessionFacts {
  std::optional<StackInfo> hello;
  std::optional<CudaSnapshot> cuda;
};

// What a line says of its plan besides the result it carries.
struct LineNote {
  std::optional<int> slot;  // the plan it answers; none for the session's own (hello, cuda)
  bool done = false;        // the plan is finished
};

// Applies one line of a session: the hello and cuInit's answer to `session`, a plan's line to
// `result_of(slot)`'s result, its figures checked (worker_checks.hpp). A malformed line (not
// JSON, an unknown type, mode or slot, a value of the wrong type) is an error: a broken session.
Expected<LineNote> apply_engine_line(std::string_view line,
                                     const std::function<WorkerResult*(int)>& result_of,
                                     SessionFacts& session);

// The same for a session of one plan, whatever its slot: the hello goes to `result.stack`,
// cuInit's answer nowhere.
Expected<void> apply_result_line(std::string_view line, WorkerResult& result);

}  // namespace precision_probe
