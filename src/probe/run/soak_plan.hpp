#pragma once
// --soak in a run (docs/soak.md): what each device's worker is asked, and its soak section from
// what the worker answered.

#include <cstdint>
#include <functional>
#include <optional>

#include "arch/arch.hpp"
#include "wire/worker.hpp"
#include "probe/cli/options.hpp"
#include "probe/verdicts/soak.hpp"

namespace precision_probe {

// Adds the soak to a selected device's plan: the modes (--soak-modes, or every mode native on the
// device) among those its checks run, the GEMM size (from a GPU's `memory_total` when
// --bench-size does not say), and an injected fault when one applies. Every device soaks the same
// inputs (from `run_seed`), so that like GPUs' golden results agree.
void plan_soak(WorkerPlan& plan, const Options& options,
               const std::function<HardwareVerdict(Mode)>& support,
               const std::optional<FaultInjection>& inject, std::uint64_t run_seed,
               std::optional<std::uint64_t> memory_total = std::nullopt);

// The device's soak section: each planned mode's latest outcome, or why it has none; the modes
// --soak-modes named that the device could not run, with the reason.
std::optional<SoakReport> soak_report(const Options& options, const WorkerPlan& plan,
                                      const WorkerResult* result, bool interrupted);

// PRECISION_PROBE_INJECT_FAULT that no device's plan took (`planned` false: its DEVICE is not
// soaked in this run, no such GPU, or no soaked device runs its MODE): nothing was injected, and
// every device that soaked says so in its injection_note (docs/soak.md).
void note_unplaced_injection(std::vector<DeviceReport>& devices,
                             const std::optional<FaultInjection>& inject, bool planned);

}  // namespace precision_probe
