#pragma once
// The probe: options -> facts -> verdicts -> (kernels, when asked) -> report, with the gate's
// exit code. Nothing here prints.

#include "probe/driver/driver.hpp"
#include "probe/run/engine_client.hpp"
#include "probe/cli/options.hpp"
#include "precision_probe/report.hpp"
#include "probe/facts/torch_files.hpp"
#include "probe/platform/system.hpp"

#include <functional>
#include <optional>

namespace precision_probe {

struct ProbeDeps {
  const System& system;
  DriverApi& driver;
  Engine& engine;
  // The image's PyTorch, read from its files (facts/torch_files.hpp); tests give their own.
  std::function<std::optional<StackInfo>(const System&)> find_torch = find_image_torch;
};

// The full probe (or --quick). Never throws for hardware or engine trouble: it ends up in the
// report. A --device index that does not exist gives a report with `error` set (exit 2).
Report run_probe(const Options& options, ProbeDeps deps);

// `precision-probe arch CC`: the matrix for a compute capability, offline.
Report run_arch(const Options& options, const ProbeDeps& deps);

// A report that carries only a usage error (exit 2), for the JSON form of bad input.
Report usage_error_report(const std::string& message, const System& system);

HostInfo collect_host(const System& system);

// This build of the tool: its version, and the LibTorch releases its engine loads.
ToolInfo this_tool();

// How many GPU workers are worth starting before the driver answers: the GPUs' device nodes
// (/dev/nvidiaN), narrowed by CUDA_VISIBLE_DEVICES and --device. A wrong guess costs little: a
// worker too many is stopped unused, one too few is started once the plan is known.
int expected_gpu_workers(const System& system, const VisibleDevicesSpec& visible,
                         const DeviceSelection& selection);

}  // namespace precision_probe
