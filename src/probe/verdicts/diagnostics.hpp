#pragma once
// Diagnostics: what is wrong with the container or the stack, and how to fix it. Each code is
// stable and documented in docs/diagnostics.md.

#include <optional>
#include <vector>

#include "probe/driver/driver.hpp"
#include "precision_probe/report.hpp"
#include "probe/platform/system.hpp"

namespace precision_probe {

struct DiagnosticContext {
  const System& system;
  const NvmlSnapshot& nvml;
  const std::optional<CudaSnapshot>& cuda;  // absent when cuInit was not called (--quick)
  const VisibleDevicesSpec& visible;
  bool engine_installed = true;
  bool gpu_wanted = false;  // a mode is required of GPUs, or GPUs were named with --device
};

// Looks at the finished report (facts, stack, statuses) and the context; never throws.
std::vector<Diagnostic> diagnose(const Report& report, const DiagnosticContext& context);

}  // namespace precision_probe
