#pragma once
// A CPU plan for the real engine, and its answer read back by the probe's reader: shared by the
// engine binary's tests and the aarch64 engine's under emulation.

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "wire/protocol.hpp"

namespace precision_probe::testing {

inline WorkerPlan cpu_plan(std::vector<Mode> smoke, std::vector<Mode> amp) {
  WorkerPlan plan;
  plan.smoke = std::move(smoke);
  plan.amp = std::move(amp);
  plan.seed = 1;
  return plan;
}

// Every line of `out` applied as the probe applies it; a line it refuses fails the test.
inline WorkerResult read_lines(const std::string& out) {
  WorkerResult result;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    const Expected<void> applied = apply_result_line(line, result);
    EXPECT_TRUE(applied) << line << ": " << applied.error();
  }
  return result;
}

}  // namespace precision_probe::testing
