// The driver agent (driver_agent.hpp): the probe's driver queries, each in a child process.

#include "probe/driver/driver_agent.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "probe/driver/telemetry.hpp"
#include "process/io.hpp"
#include "process/process.hpp"
#include "strings/strings.hpp"
#include "probe/platform/system.hpp"
#include "trace/trace.hpp"

namespace precision_probe {

namespace {

constexpr const char* kParentVariable = "PRECISION_PROBE_PARENT";

// Runs the agent for `which` and reads its answer; a fault when it did not give one.
struct AgentAnswer {
  QueryFault fault = QueryFault::none;
  std::string message;  // the fault, in a line
  std::string text;     // the snapshot's JSON
};

// A snapshot of 8 GPUs with their processes is tens of kilobytes.
constexpr std::size_t kMaxAnswer = std::size_t{4} << 20U;

AgentAnswer ask_agent(const std::string& self, const std::string& which, const std::string& what,
                      DriverQueryLimit limit) {
  AgentAnswer answer;
  const ProcessOutput out = run_process(
      {self, std::string(kDriverAgentFlag), which},
      environment_with({std::string(kParentVariable) + "=" + std::to_string(::getpid())}), "",
      limit.timeout, kMaxAnswer);
  const std::string seconds =
      limit.timeout.count() < 1
          ? std::string("under 1 ms")
          : fmt::format("{:g} s", static_cast<double>(limit.timeout.count()) / 1000.0);
  if (out.timed_out && limit.by_run_timeout) {
    answer.fault = QueryFault::out_of_time;
    answer.message = fmt::format("{} had not answered when the run's time ran out ({}, --timeout)",
                                 what, seconds);
  } else if (out.timed_out && limit.timeout < limit.driver_start) {
    answer.fault = QueryFault::out_of_time;
    answer.message = fmt::format(
        "{} did not answer within {} (--check-timeout), less than the {:g} s a driver may take "
        "to start this machine's GPUs (up to {:g} s each where persistence mode is off): too "
        "short to tell a hang",
        what, seconds, static_cast<double>(limit.driver_start.count()) / 1000.0,
        static_cast<double>(kDriverStartPerGpu.count()) / 1000.0);
  } else if (out.timed_out) {
    answer.fault = QueryFault::hung;
    answer.message = fmt::format("{} did not answer within {} (--check-timeout): the driver hangs",
                                 what, seconds);
  } else if (out.overflowed) {
    answer.fault = QueryFault::crashed;
    answer.message = fmt::format("{} wrote more than {} MiB: the driver library is broken", what,
                                 kMaxAnswer >> 20U);
  } else if (out.interrupted) {
    answer.fault = QueryFault::hung;
    answer.message = fmt::format("{} had not answered when the run was interrupted", what);
  } else if (!out.start_error.empty()) {
    answer.fault = QueryFault::crashed;
    answer.message = "the driver query could not be started: " + out.start_error;
  } else if (out.term_signal != 0) {
    answer.fault = QueryFault::crashed;
    answer.message = fmt::format("{} crashed the process that called it ({})", what,
                                 signal_name(out.term_signal));
  } else if (out.exit_code != 0) {
    answer.fault = QueryFault::crashed;
    answer.message =
        fmt::format("the process that called {} exited with code {}{}", what, out.exit_code,
                    out.err.empty() ? "" : ": " + printable(out.err, 160));
  }
  answer.text = out.out;
  return answer;
}

// The snapshot `answer` carries; where it is garbage, none and the answer a crash.
template <class Snapshot>
Snapshot read_snapshot(AgentAnswer& answer, Expected<Snapshot> (*decode)(std::string_view),
                       const char* query) {
  if (answer.fault != QueryFault::none) return Snapshot{};
  Expected<Snapshot> read = decode(answer.text);
  if (read) return std::move(*read);
  answer.fault = QueryFault::crashed;
  answer.message =
      fmt::format("the {} query answered garbage ({})", query, printable(read.error(), 120));
  return Snapshot{};
}

class ContainedDriver final : public DriverApi {
 public:
  ContainedDriver(std::string self, DriverQueryLimit limit)
      : self_(std::move(self)), limit_(limit) {}

  NvmlSnapshot query_nvml() override {
    AgentAnswer answer = ask_agent(self_, "nvml", "NVML (nvmlInit and the device queries)", limit_);
    NvmlSnapshot snapshot = read_snapshot(answer, decode_nvml_snapshot, "NVML");
    snapshot.fault = answer.fault;
    snapshot.fault_message = answer.message;
    trace("NVML answered (driver agent)");
    return snapshot;
  }

  CudaSnapshot query_cuda() override { return ask_cuda(limit_); }

  // Late in a run: within what is left of it, where that is shorter than the query's own limit.
  CudaSnapshot query_cuda_within(std::chrono::milliseconds left) override {
    DriverQueryLimit limit = limit_;
    if (left < limit.timeout) {
      limit.timeout = std::max(left, std::chrono::milliseconds(0));
      limit.by_run_timeout = true;
    }
    return ask_cuda(limit);
  }

  Expected<std::unique_ptr<TelemetryRecording>> record_telemetry() override {
    auto recorder = std::make_unique<TelemetryRecorder>();
    if (Expected<void> started = recorder->start(self_); !started) {
      return Unexpected{"the telemetry agent could not start: " + started.error()};
    }
    return std::unique_ptr<TelemetryRecording>(std::move(recorder));
  }

 private:
  CudaSnapshot ask_cuda(DriverQueryLimit limit) const {
    AgentAnswer answer =
        ask_agent(self_, "cuda", "the CUDA driver (cuInit and the device queries)", limit);
    CudaSnapshot snapshot = read_snapshot(answer, decode_cuda_snapshot, "CUDA");
    snapshot.fault = answer.fault;
    snapshot.fault_message = answer.message;
    if (snapshot.fault != QueryFault::none) snapshot.loaded = true;  // it was there to hang
    return snapshot;
  }

  std::string self_;
  DriverQueryLimit limit_;
};

}  // namespace

std::unique_ptr<DriverApi> make_contained_driver(const System& /*system*/, std::string self_exe,
                                                 DriverQueryLimit limit) {
  return std::make_unique<ContainedDriver>(std::move(self_exe), limit);
}

int run_driver_agent(std::string_view which) {
  // Ends with the probe, even when the probe is killed; and not at all if it is already gone.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const auto system = make_real_system();
  const std::string parent = system->getenv(kParentVariable).value_or("");
  if (!parent.empty() && parent != std::to_string(::getppid())) return 1;
  if (which == "telemetry") {
    // A line per second until the probe stops reading (or kills it).
    return sample_nvml(nvml_library(*system), 1.0, [](const TelemetrySample& sample) {
      return static_cast<bool>(write_all(STDOUT_FILENO, encode_sample(sample) + "\n"));
    });
  }
  const auto driver = make_system_driver(*system);
  std::string text;
  if (which == "nvml") {
    text = encode_nvml_snapshot(driver->query_nvml());
  } else if (which == "cuda") {
    text = encode_cuda_snapshot(driver->query_cuda());
  } else {
    std::fprintf(stderr, "precision-probe: --driver-agent takes nvml, cuda or telemetry\n");
    return 2;
  }
  text += '\n';
  const Expected<void> written = write_all(STDOUT_FILENO, text);
  // Leave without unloading the driver (an initialised libcuda does not like being unloaded).
  std::_Exit(written ? 0 : 6);
}

}  // namespace precision_probe
