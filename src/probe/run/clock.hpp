#pragma once
// The run's one clock: started once (app.cpp, as the run begins), it bounds the image's reading,
// the workers, and the delivery of the report.

#include <algorithm>
#include <chrono>

#include "probe/cli/options.hpp"

namespace precision_probe {

struct RunClock {
  using Clock = std::chrono::steady_clock;

  Clock::time_point started;
  std::chrono::milliseconds timeout{0};  // --timeout
  std::chrono::milliseconds soak{0};     // --soak, which the run's budget adds to --timeout

  static RunClock start(const Options& o, Clock::time_point now = Clock::now()) {
    return {now, std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000.0)),
            std::chrono::milliseconds(static_cast<long long>(o.soak_s * 1000.0))};
  }
  // --timeout after the start: what reading the machine's files may take (before any soak).
  Clock::time_point timeout_at() const { return started + timeout; }
  // The end of the run's budget: --timeout and the soak's length.
  Clock::time_point deadline() const { return started + timeout + soak; }
  std::chrono::milliseconds left(Clock::time_point now = Clock::now()) const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline() - now);
  }
  double elapsed_ms(Clock::time_point now = Clock::now()) const {
    return std::chrono::duration<double, std::milli>(now - started).count();
  }
  // Delivering the report: within what is left of the budget, and a few seconds at least.
  Clock::time_point delivery_deadline(Clock::time_point now = Clock::now()) const {
    return std::max(deadline(), now + std::chrono::seconds(5));
  }
};

}  // namespace precision_probe
