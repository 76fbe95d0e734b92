#pragma once
// The run's fourth phase: the report, assembled from what the run read (run_facts.hpp), planned
// (plan.hpp) and found (execute.hpp). Plain data in, the report out; nothing here reads the
// machine or waits. The verdicts that rest on the whole report (the soak's, the requirements, the
// diagnostics, the exit code) follow in judge().

#include <functional>
#include <optional>
#include <string>

#include "precision_probe/report.hpp"
#include "probe/cli/options.hpp"
#include "probe/run/execute.hpp"
#include "probe/run/plan.hpp"
#include "probe/run/run_facts.hpp"
#include "probe/verdicts/diagnostics.hpp"

namespace precision_probe {

// This build of the tool: its version, and the LibTorch releases its engine loads.
ToolInfo this_tool();

// A report that carries only a usage error (exit 2), for the JSON form of bad input.
Report usage_error_report(const std::string& message, const HostInfo& host);
Report usage_error_report(const std::string& message, const System& system);

// Why a device's checks of one kind (matmul or training) did not run, where they did not.
struct NotRun {
  enum class Kind {
    skipped,                 // on purpose: --quick, --no-amp, a device not selected
    unavailable,             // kept from running by the machine, on the modes the hardware has
    unavailable_everywhere,  // the same on every mode: the hardware is not known
  };
  std::string reason;
  Kind kind = Kind::skipped;
};

using SupportFn = std::function<HardwareVerdict(Mode)>;

// A device's precisions, each from its hardware (`support`) and, where a worker was asked for it,
// that worker's answer (`work`: a plan and its result, one device's workers together); where none
// was, why not. And its recommendation.
void fill_precisions(DeviceReport& d, const SupportFn& support,
                     const std::optional<WorkerRun>& work, const NotRun& matmul,
                     const NotRun& training);

// Where no kernel runs (--quick, arch), what the stack alone says against a GPU: not known, or
// no kernels for it ("" when nothing, or when no stack was to be looked for).
std::string stack_says_against(const DeviceReport& d, const StackInfo& stack);

// The report of a run, less its verdicts.
Report assemble(const Options& options, const StartFacts& facts, const DriverAnswers& driver,
                const StartPlan& start, const GpuPlan& gpus, const RunResults& results);

// The verdicts of an assembled report: the soak's across devices, the requirements, the
// diagnostics, the exit code; then what came from outside is made printable.
void judge(Report& report, const Options& options, const DiagnosticFacts& facts);

}  // namespace precision_probe
