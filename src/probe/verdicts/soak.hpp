#pragma once
// --soak's verdicts (docs/soak.md): a result that differed from its golden one fails its mode on
// its device; the golden results of like GPUs are compared with each other; a GPU well below the
// throughput of its like is a straggler. And the fault injector's specification.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "precision_probe/expected.hpp"
#include "precision_probe/report.hpp"

namespace precision_probe {

// PRECISION_PROBE_INJECT_FAULT=MODE:ITERATION[:DEVICE]: one bit of that mode's result flipped at
// that iteration of the soak, on DEVICE (a visible GPU index or "cpu"; absent: every device).
struct FaultInjection {
  Mode mode = Mode::fp32;
  std::int64_t iteration = 0;
  std::string device;  // "" (every selected device), "cpu", or a GPU index ("0")

  bool applies_to(const DeviceReport& d) const;
  bool applies_to(DeviceKind kind, int index) const;
};
inline constexpr std::string_view kInjectFaultVariable = "PRECISION_PROBE_INJECT_FAULT";
Expected<FaultInjection> parse_fault_injection(std::string_view text);

// Applies the soak of every device to the report: mismatches fail their mode, golden results
// are compared among like GPUs (same model, compute capability and SM count, one LibTorch) and
// stragglers named. Each device's soak says what was found; the diagnostics repeat it.
void judge_soak(Report& report);

// The first silent data corruption the soak found ("" when none): it decides the exit code
// before anything else does (never hidden behind a timeout or an interrupt).
std::string soak_corruption(const Report& report);

}  // namespace precision_probe
