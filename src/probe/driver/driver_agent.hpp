#pragma once
// The driver is the least trusted component: an NVML or CUDA call can hang (a GPU fallen off the
// bus) or crash (a broken driver library) exactly when a probe is run. So the probe never calls it
// in its own process: each query runs in a short-lived child, the probe's own executable started
// as `precision-probe --driver-agent nvml|cuda`, which prints the snapshot as JSON and exits. The
// probe waits for it within the run's deadlines and its signals; a child that does not answer in
// time is killed and the query reported as hung, one that dies as crashed. The soak's telemetry
// (`--driver-agent telemetry`, telemetry.hpp) is a long-lived agent of the same kind.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "probe/driver/driver.hpp"

namespace precision_probe {

class System;

// The argument that makes the probe's executable a driver agent.
inline constexpr std::string_view kDriverAgentFlag = "--driver-agent";

// What a driver may take to answer its first query where it starts its GPUs then (persistence
// mode off): 1-3 s a GPU (ECC scrubbing; NVIDIA's Driver Persistence guide), the upper figure.
inline constexpr std::chrono::milliseconds kDriverStartPerGpu{3000};

// How long a driver query may take: --check-timeout, or the run's --timeout when that is shorter.
// Running out of either is proof of a hang only where the limit is --check-timeout and it is no
// shorter than `driver_start`; otherwise the query is out of time and the message names the
// setting, never the driver.
struct DriverQueryLimit {
  std::chrono::milliseconds timeout{45000};
  bool by_run_timeout = false;  // --timeout is the limit: running out of it is not proof of a hang
  std::chrono::milliseconds driver_start{0};  // kDriverStartPerGpu for each GPU of the machine
};

// The probe's driver: each query in a child (`self_exe` is the probe's own executable), killed
// at the limit or when an interrupt arrives. A child that writes more than 4 MiB is ended too.
std::unique_ptr<DriverApi> make_contained_driver(const System& system, std::string self_exe,
                                                 DriverQueryLimit limit);

// The child's side: queries `which` ("nvml", "cuda" or "telemetry") in this process, prints the
// snapshot, and returns the exit code. It ends with its parent (PR_SET_PDEATHSIG).
int run_driver_agent(std::string_view which);

}  // namespace precision_probe
