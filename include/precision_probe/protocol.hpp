#pragma once
// The wire between the probe and an engine worker: the plan goes in as one JSON document on
// stdin; results come back as JSON lines on stdout, one per finished check, so that a worker that
// hangs or dies mid-way still leaves every finished result behind. Versioned; the probe never
// trusts a line blindly (a malformed line is a crashed worker).

#include <string>
#include <string_view>

#include "precision_probe/engine.hpp"

namespace precision_probe {

inline constexpr int kProtocolVersion = 1;

std::string encode_plan(const WorkerPlan& plan);
// Parses a plan; on bad input returns false and sets `error`.
bool decode_plan(std::string_view text, WorkerPlan& plan, std::string& error);

// Result lines (each one line of JSON, no newline inside).
std::string encode_hello(const StackInfo& stack);
std::string encode_device(const std::string& name);
std::string encode_smoke(Mode mode, const SmokeOutcome& outcome);
std::string encode_amp(Mode mode, const AmpOutcome& outcome);
std::string encode_bench(Mode mode, const BenchOutcome& outcome);
std::string encode_collective(const CollectiveOutcome& outcome, const std::string& nccl_version);
std::string encode_done();

// The stack alone (engine --describe and the build cache).
std::string encode_stack(const StackInfo& stack);
bool decode_stack(std::string_view text, StackInfo& stack, std::string& error);

// Applies one result line to `result`. Returns false and sets `error` on a malformed line.
bool apply_result_line(std::string_view line, WorkerResult& result, std::string& error);

}  // namespace precision_probe
