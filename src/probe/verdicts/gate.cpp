#include "probe/verdicts/gate.hpp"

#include <fmt/format.h>

#include "probe/verdicts/exit_codes.hpp"

namespace precision_probe {

std::vector<RequirementResult> evaluate_requirements(const Report& report,
                                                     const std::vector<Mode>& required,
                                                     bool quick) {
  std::vector<RequirementResult> results;
  for (Mode mode : required) {
    bool any_selected = false;
    for (const DeviceReport& device : report.devices) {
      if (!device.selected) continue;
      any_selected = true;
      RequirementResult r;
      r.mode = mode;
      r.device = device.label();
      const PrecisionResult* p = device.find(mode);
      if (p == nullptr) {
        r.status = Status::not_tested;
        r.reason = "not checked on this device";
      } else {
        r.status = p->status;
        r.failure = p->failure;
        r.met = p->status == Status::native ||
                (quick && p->status == Status::not_tested && p->hardware == Hardware::native &&
                 p->failure != ErrorKind::unavailable);
        r.reason = r.met && p->status == Status::not_tested
                       ? std::string("hardware support only (") +
                             (report.run.command == Command::arch ? "arch" : "--quick") +
                             ": no kernel ran)"
                   : !r.met && p->status == Status::not_tested && p->hardware != Hardware::native &&
                           p->failure != ErrorKind::unavailable
                       ? "the hardware is " + std::string(to_string(p->hardware)) +
                             (p->hardware_reason.empty() ? "" : ": " + p->hardware_reason)
                       : p->reason;
      }
      results.push_back(std::move(r));
    }
    if (!any_selected) {
      RequirementResult r;
      r.mode = mode;
      r.device = "none";
      r.status = Status::not_tested;
      r.reason = report.driver.status == DriverStatus::ok
                     ? "no device selected"
                     : "no usable GPU: " + report.driver.message;
      results.push_back(std::move(r));
    }
  }
  return results;
}

ExitDecision decide_exit(const Report& report) {
  if (report.error && report.error->kind == FailureKind::usage) {
    return {exit_code::kUsage, report.error->message};
  }
  if (!report.run.interrupted.empty()) {
    return {exit_code::kTimedOut,
            "interrupted by " + report.run.interrupted + "; the report is partial"};
  }
  // A driver that hangs is a hung GPU (5); one whose library crashes, a broken environment (3):
  // wherever GPUs are selected, whether or not a mode was required.
  if (report.run.gpus_selected && report.driver.status == DriverStatus::hung) {
    return {exit_code::kTimedOut, "the NVIDIA driver hangs: " + report.driver.message};
  }
  const bool driver_crashed =
      report.run.gpus_selected && report.driver.status == DriverStatus::crashed;
  const PrecisionResult* environment = nullptr;
  const DeviceReport* environment_device = nullptr;
  const PrecisionResult* failed = nullptr;
  const DeviceReport* failed_device = nullptr;
  Mode failed_mode = Mode::fp32;
  std::string other_failure;
  for (const DeviceReport& device : report.devices) {
    if (!device.selected) continue;
    for (const auto& [mode, p] : device.precisions) {
      const ErrorKind bench_kind = p.bench ? p.bench->outcome.error_kind : ErrorKind::none;
      if (p.bench && !p.bench->outcome.ok && bench_kind != ErrorKind::not_run &&
          bench_kind != ErrorKind::none && bench_kind != ErrorKind::unavailable) {
        const std::string why = fmt::format("{} {} benchmark: {}", device.label(), mode_key(mode),
                                            p.bench->outcome.error);
        if (p.bench->outcome.error_kind == ErrorKind::timed_out) return {exit_code::kTimedOut, why};
        if (other_failure.empty()) other_failure = why;
      }
      if (p.status != Status::failed) continue;
      if (p.failure == ErrorKind::timed_out) {
        return {exit_code::kTimedOut,
                fmt::format("{} {}: {}", device.label(), mode_key(mode), p.reason)};
      }
      if (p.failure == ErrorKind::environment && environment == nullptr) {
        environment = &p;
        environment_device = &device;
      } else if (failed == nullptr) {
        failed = &p;
        failed_device = &device;
        failed_mode = mode;
      }
    }
  }
  if (const auto& c = report.collectives; c && c->requested) {
    const std::string why = "--nccl: " + c->reason;
    if (c->failure == ErrorKind::timed_out) return {exit_code::kTimedOut, why};
    if (c->failure == ErrorKind::environment) return {exit_code::kEnvironment, why};
    if (c->status == Status::failed && other_failure.empty()) other_failure = why;
  }
  if (driver_crashed) {
    return {exit_code::kEnvironment, "the NVIDIA driver crashed: " + report.driver.message};
  }
  if (!report.run.unavailable_selection.empty()) {
    return {exit_code::kEnvironment, report.run.unavailable_selection};
  }
  for (const RequirementResult& r : report.requirements) {
    if (r.device == "none") {
      return {exit_code::kEnvironment, fmt::format("--require {}: {}", mode_key(r.mode), r.reason)};
    }
    if (!r.met && r.failure == ErrorKind::unavailable) {
      return {exit_code::kEnvironment, fmt::format("--require {} on {}: not tested: {}",
                                                   mode_key(r.mode), r.device, r.reason)};
    }
  }
  if (environment != nullptr) {
    return {exit_code::kEnvironment, fmt::format("{} cannot run this stack: {}",
                                                 environment_device->label(), environment->reason)};
  }
  if (failed != nullptr) {
    return {exit_code::kCheckFailed, fmt::format("{} {} failed: {}", failed_device->label(),
                                                 mode_key(failed_mode), failed->reason)};
  }
  if (!other_failure.empty()) return {exit_code::kCheckFailed, other_failure};
  for (const RequirementResult& r : report.requirements) {
    if (!r.met) {
      return {exit_code::kRequirementNotMet,
              fmt::format("{} on {} is {}{}", mode_key(r.mode), r.device, to_string(r.status),
                          r.reason.empty() ? "" : ": " + r.reason)};
    }
  }
  if (report.requirements.empty()) return {exit_code::kOk, "no requirement given; nothing failed"};
  return {exit_code::kOk, "every requirement met natively; nothing failed"};
}

}  // namespace precision_probe
