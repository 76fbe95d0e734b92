#include "precision_probe/diagnostics.hpp"

#include <fmt/format.h>

namespace precision_probe {

namespace {

void add(std::vector<Diagnostic>& out, std::string code, Severity severity, std::string message,
         std::string hint) {
  out.push_back({std::move(code), severity, std::move(message), std::move(hint)});
}

bool any_gpu(const Report& report) {
  for (const DeviceReport& d : report.devices) {
    if (d.kind == DeviceKind::cuda) return true;
  }
  return false;
}

}  // namespace

std::vector<Diagnostic> diagnose(const Report& report, const DiagnosticContext& context) {
  std::vector<Diagnostic> out;
  const DriverInfo& driver = report.driver;

  if (driver.status == DriverStatus::not_found) {
    add(out, "driver-library-not-found", context.gpu_wanted ? Severity::error : Severity::info,
        "no NVIDIA driver library can be loaded (" + driver.message + ")",
        "in a container, start it with GPUs: `docker run --gpus all ...` (NVIDIA Container "
        "Toolkit), `runtime: nvidia` in Compose, or a `nvidia.com/gpu` resource limit in "
        "Kubernetes; on a host, install the NVIDIA driver");
  }

  if (!context.engine_installed) {
    add(out, "engine-not-installed", Severity::warning,
        "the kernel engine (precision-probe-engine) is not installed next to the probe: no "
        "smoke test ran",
        "build precision-probe with LibTorch (./dev probe) or set PRECISION_PROBE_ENGINE to the "
        "engine's path");
  }

  if (report.stack.available && !report.stack.cuda_built) {
    if (any_gpu(report)) {
      add(out, "libtorch-without-cuda", Severity::error,
          fmt::format(
              "LibTorch {} was built without CUDA, but this machine has GPUs: no GPU kernel "
              "can run",
              report.stack.libtorch_version),
          "use a CUDA build of PyTorch/LibTorch (for example a pytorch/pytorch:*-cuda* image or a "
          "cu12x/cu13x wheel) and rebuild the probe against it");
    } else {
      add(out, "libtorch-without-cuda", Severity::info,
          fmt::format("LibTorch {} is a CPU-only build (and no GPU is visible)",
                      report.stack.libtorch_version),
          "nothing to do for CPU work; for GPUs, use a CUDA build of LibTorch");
    }
  }

  for (const DeviceReport& d : report.devices) {
    if (!d.kernels || d.kernels->covered) continue;
    add(out, "arch-not-in-build", Severity::error, d.label() + ": " + d.kernels->reason,
        "use a LibTorch/PyTorch build that lists this architecture in "
        "torch.cuda.get_arch_list() (or build it with TORCH_CUDA_ARCH_LIST including it)");
  }
  return out;
}

}  // namespace precision_probe
