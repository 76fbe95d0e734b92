#pragma once
// The probe: options -> facts -> plans -> workers -> report -> verdicts, with the gate's exit
// code (docs/architecture.md, "From argv to the exit code"). Nothing here prints.

#include "precision_probe/report.hpp"
#include "probe/cli/options.hpp"
#include "probe/driver/driver.hpp"
#include "probe/facts/torch_files.hpp"
#include "probe/platform/system.hpp"
#include "probe/run/assemble.hpp"
#include "probe/run/clock.hpp"
#include "probe/run/engine_client.hpp"
#include "probe/run/run_facts.hpp"

namespace precision_probe {

struct ProbeDeps {
  const System& system;
  DriverApi& driver;
  Engine& engine;
  // The image's PyTorch, read from its files (facts/torch_files.hpp); tests give their own.
  FindTorch find_torch = find_image_torch;
};

// The full probe (or --quick), within `clock`'s budget. Never throws for hardware or engine
// trouble: it ends up in the report. Bad input found on the way (a --device index that does not
// exist, a malformed PRECISION_PROBE_INJECT_FAULT) gives a report with `error` set (exit 2).
Report run_probe(const Options& options, ProbeDeps deps, const RunClock& clock);
Report run_probe(const Options& options, ProbeDeps deps);  // its clock started now

// `precision-probe arch CC`: the matrix for a compute capability, offline.
Report run_arch(const Options& options, const ProbeDeps& deps, const RunClock& clock);
Report run_arch(const Options& options, const ProbeDeps& deps);

}  // namespace precision_probe
