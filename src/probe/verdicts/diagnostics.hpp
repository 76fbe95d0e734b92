#pragma once
// Diagnostics: what is wrong with the container or the stack, and how to fix it. Each code is
// stable and documented in docs/diagnostics.md.

#include <array>
#include <string_view>
#include <optional>
#include <vector>

#include "precision_probe/report.hpp"
#include "probe/driver/driver.hpp"
#include "probe/facts/machine.hpp"

namespace precision_probe {

// Every diagnostic the probe can give, in the order of docs/diagnostics.md (a section each).
enum class DiagnosticCode {
  driver_library_not_found,
  cuda_library_not_found,
  device_nodes_missing,
  device_nodes_inaccessible,
  nvidia_visible_devices_none,
  nvidia_visible_devices_unset,
  cuda_visible_devices_empty,
  cuda_visible_devices_invalid,
  driver_too_old,
  cuinit_failed,
  no_cuda_device,
  engine_not_installed,
  libtorch_not_found,
  libtorch_too_old,
  libtorch_load_failed,
  libtorch_version_mismatch,
  libtorch_untested_release,
  operator_schema_mismatch,
  libtorch_without_cuda,
  torch_file_refused,
  arch_not_in_build,
  arch_via_ptx,
  mig_enabled,
  compute_mode_prohibited,
  compute_mode_exclusive_busy,
  gpu_memory_busy,
  bf16_emulated,
  tf32_off_by_default,
  tf32_override,
  devices_disagree,
  ungated_device_failed,
  cpu_blas_slow,
  driver_hung,
  driver_out_of_time,
  driver_crashed,
  engine_session_lost,
  silent_data_corruption,
  soak_golden_disagrees,
  soak_straggler,
  soak_fault_injected,
  soak_gpu_health,
};

struct DiagnosticInfo {
  DiagnosticCode code;
  std::string_view name;  // the report's `code`: stable, kebab-case
};

inline constexpr std::array<DiagnosticInfo, 41> kDiagnosticCodes = {{
    {DiagnosticCode::driver_library_not_found, "driver-library-not-found"},
    {DiagnosticCode::cuda_library_not_found, "cuda-library-not-found"},
    {DiagnosticCode::device_nodes_missing, "device-nodes-missing"},
    {DiagnosticCode::device_nodes_inaccessible, "device-nodes-inaccessible"},
    {DiagnosticCode::nvidia_visible_devices_none, "nvidia-visible-devices-none"},
    {DiagnosticCode::nvidia_visible_devices_unset, "nvidia-visible-devices-unset"},
    {DiagnosticCode::cuda_visible_devices_empty, "cuda-visible-devices-empty"},
    {DiagnosticCode::cuda_visible_devices_invalid, "cuda-visible-devices-invalid"},
    {DiagnosticCode::driver_too_old, "driver-too-old"},
    {DiagnosticCode::cuinit_failed, "cuinit-failed"},
    {DiagnosticCode::no_cuda_device, "no-cuda-device"},
    {DiagnosticCode::engine_not_installed, "engine-not-installed"},
    {DiagnosticCode::libtorch_not_found, "libtorch-not-found"},
    {DiagnosticCode::libtorch_too_old, "libtorch-too-old"},
    {DiagnosticCode::libtorch_load_failed, "libtorch-load-failed"},
    {DiagnosticCode::libtorch_version_mismatch, "libtorch-version-mismatch"},
    {DiagnosticCode::libtorch_untested_release, "libtorch-untested-release"},
    {DiagnosticCode::operator_schema_mismatch, "operator-schema-mismatch"},
    {DiagnosticCode::libtorch_without_cuda, "libtorch-without-cuda"},
    {DiagnosticCode::torch_file_refused, "torch-file-refused"},
    {DiagnosticCode::arch_not_in_build, "arch-not-in-build"},
    {DiagnosticCode::arch_via_ptx, "arch-via-ptx"},
    {DiagnosticCode::mig_enabled, "mig-enabled"},
    {DiagnosticCode::compute_mode_prohibited, "compute-mode-prohibited"},
    {DiagnosticCode::compute_mode_exclusive_busy, "compute-mode-exclusive-busy"},
    {DiagnosticCode::gpu_memory_busy, "gpu-memory-busy"},
    {DiagnosticCode::bf16_emulated, "bf16-emulated"},
    {DiagnosticCode::tf32_off_by_default, "tf32-off-by-default"},
    {DiagnosticCode::tf32_override, "tf32-override"},
    {DiagnosticCode::devices_disagree, "devices-disagree"},
    {DiagnosticCode::ungated_device_failed, "ungated-device-failed"},
    {DiagnosticCode::cpu_blas_slow, "cpu-blas-slow"},
    {DiagnosticCode::driver_hung, "driver-hung"},
    {DiagnosticCode::driver_out_of_time, "driver-out-of-time"},
    {DiagnosticCode::driver_crashed, "driver-crashed"},
    {DiagnosticCode::engine_session_lost, "engine-session-lost"},
    {DiagnosticCode::silent_data_corruption, "silent-data-corruption"},
    {DiagnosticCode::soak_golden_disagrees, "soak-golden-disagrees"},
    {DiagnosticCode::soak_straggler, "soak-straggler"},
    {DiagnosticCode::soak_fault_injected, "soak-fault-injected"},
    {DiagnosticCode::soak_gpu_health, "soak-gpu-health"},
}};

std::string_view to_string(DiagnosticCode code);

// What the diagnostics look at besides the report: facts the run read from the machine and the
// driver before (run/run_facts.hpp). Diagnosing reads nothing more.
struct DiagnosticFacts {
  const MachineFacts& machine;  // the environment, the device nodes, the driver's files
  const NvmlSnapshot& nvml;
  const std::optional<CudaSnapshot>& cuda;  // absent when cuInit was not called (--quick)
  VisibleDevicesSpec visible;
  bool engine_installed = true;
  bool gpu_wanted = false;     // a mode is required of GPUs, or GPUs were named with --device
  std::string engine_missing;  // why there is no engine, where the run knows ("" else)
};

// Looks at the finished report (facts, stack, statuses) and the facts; a pure function.
std::vector<Diagnostic> diagnose(const Report& report, const DiagnosticFacts& facts);

}  // namespace precision_probe
