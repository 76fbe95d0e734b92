#pragma once
// The wire between the probe and an engine worker: the plan goes in as one JSON document on
// stdin; results come back as JSON lines on stdout, one per finished check, so that a worker that
// hangs or dies mid-way still leaves every finished result behind. Versioned; the probe never
// trusts a line blindly (a malformed line is a crashed worker).

#include <string>
#include <string_view>

#include "common/worker.hpp"
#include "precision_probe/expected.hpp"

namespace precision_probe {

// 2: the plan carries the worker's CUDA_VISIBLE_DEVICES (workers start before their plan).
// 3: outcomes carry the report's JSON of their struct (report/json_fields.hpp).
// 4: the soak. 5: the engine loads the image's LibTorch (the library and its release in the
// hello), the TF32 process and the hold before measurements; the plan is one line.
inline constexpr int kProtocolVersion = 5;

std::string encode_plan(const WorkerPlan& plan);
Expected<WorkerPlan> decode_plan(std::string_view text);

// Result lines (each one line of JSON, no newline inside).
std::string encode_hello(const StackInfo& stack);
// The device a worker runs on: its name, and its UUID ("GPU-...", "" for the CPU).
std::string encode_device(const std::string& name, const std::string& uuid);
std::string encode_smoke(Mode mode, const SmokeOutcome& outcome);
std::string encode_amp(Mode mode, const AmpOutcome& outcome);
std::string encode_bench(Mode mode, const BenchOutcome& outcome);
std::string encode_soak(Mode mode, const SoakOutcome& outcome);
std::string encode_collective(const CollectiveOutcome& outcome, const std::string& nccl_version);
std::string encode_done();
// A check that finished without a result of its own yet (a benchmark's first figure): it resets
// the probe's per-check watchdog.
std::string encode_progress(std::string_view what);

// The stack alone (engine --describe and the build cache).
std::string encode_stack(const StackInfo& stack);
Expected<StackInfo> decode_stack(std::string_view text);

// Applies one result line to `result`, its figures checked (worker_checks.hpp). A malformed line
// (not JSON, an unknown type or mode, a value of the wrong type) is an error: a broken worker.
Expected<void> apply_result_line(std::string_view line, WorkerResult& result);

}  // namespace precision_probe
