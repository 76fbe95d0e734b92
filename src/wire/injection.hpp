#pragma once
// PRECISION_PROBE_INJECT_HANG: a check made to hang on purpose, a test of the probe's watchdog and
// of the isolation of a device whose check hangs (docs/reliability.md). The probe refuses a value
// it cannot read (a usage error); the engine's session hangs the plan's thread at that check.

#include <string>
#include <string_view>

#include "precision_probe/expected.hpp"
#include "precision_probe/modes.hpp"
#include "precision_probe/report.hpp"

namespace precision_probe {

inline constexpr std::string_view kInjectHangVariable = "PRECISION_PROBE_INJECT_HANG";

// MODE[:DEVICE]: MODE's smoke test on DEVICE (a visible GPU index, or cpu; every device where
// none is named) never returns.
struct HangInjection {
  Mode mode = Mode::fp32;
  std::string device;  // "" (every device), "cpu" or a GPU index
  bool applies_to(DeviceKind kind, int index) const;
};

Expected<HangInjection> parse_hang_injection(std::string_view text);

}  // namespace precision_probe
