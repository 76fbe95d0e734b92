#pragma once
// The wire between the probe and an engine worker: the plan goes in as one JSON document on
// stdin; results come back as JSON lines on stdout, one per finished check, so that a worker that
// hangs or dies mid-way still leaves every finished result behind. Versioned; the probe never
// trusts a line blindly (a malformed line is a crashed worker).

#include <string>
#include <string_view>

#include "common/worker.hpp"

namespace precision_probe {

// 2: the plan carries the worker's CUDA_VISIBLE_DEVICES (workers start before their plan).
inline constexpr int kProtocolVersion = 2;

std::string encode_plan(const WorkerPlan& plan);
// Parses a plan; on bad input returns false and sets `error`.
bool decode_plan(std::string_view text, WorkerPlan& plan, std::string& error);

// Result lines (each one line of JSON, no newline inside).
std::string encode_hello(const StackInfo& stack);
// The device a worker runs on: its name, and its UUID ("GPU-...", "" for the CPU).
std::string encode_device(const std::string& name, const std::string& uuid);
std::string encode_smoke(Mode mode, const SmokeOutcome& outcome);
std::string encode_amp(Mode mode, const AmpOutcome& outcome);
std::string encode_bench(Mode mode, const BenchOutcome& outcome);
std::string encode_collective(const CollectiveOutcome& outcome, const std::string& nccl_version);
std::string encode_done();
// A check that finished without a result of its own yet (a benchmark's first figure): it resets
// the probe's per-check watchdog.
std::string encode_progress(std::string_view what);

// The stack alone (engine --describe and the build cache).
std::string encode_stack(const StackInfo& stack);
bool decode_stack(std::string_view text, StackInfo& stack, std::string& error);

// Applies one result line to `result`. Returns false and sets `error` on a malformed line.
bool apply_result_line(std::string_view line, WorkerResult& result, std::string& error);

}  // namespace precision_probe
