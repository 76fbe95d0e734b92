#pragma once
// The CI gate: --require against the selected devices, and the exit code (docs/exit-codes.md).

#include <string>
#include <vector>

#include "precision_probe/report.hpp"

namespace precision_probe {

// One line per required mode and selected device. Under --quick (no kernels) a mode whose
// hardware is native and that was simply not tested counts as met.
std::vector<RequirementResult> evaluate_requirements(const Report& report,
                                                     const std::vector<Mode>& required, bool quick);

struct ExitDecision {
  int code = 0;
  std::string reason;
};
// Precedence: usage error 2, internal error 4, silent data corruption 4, timed out or
// interrupted 5, environment 3, failed check 4, requirement not met 1, else 0. Everything it reads
// is in the report's JSON: a report read back is gated again to the code it says, but for exit 6
// and a signal during delivery (decided at delivery, error kind `output`).
ExitDecision decide_exit(const Report& report);

}  // namespace precision_probe
