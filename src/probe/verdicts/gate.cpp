#include "probe/verdicts/gate.hpp"

#include "probe/verdicts/soak.hpp"

#include <algorithm>

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
      r.device.clear();
      r.status = Status::not_tested;
      r.reason = report.driver.status == DriverStatus::ok
                     ? "no device selected"
                     : "no usable GPU: " + report.driver.message;
      results.push_back(std::move(r));
    }
  }
  return results;
}

namespace {

// What the checks of the selected devices and the collective found: the first of each kind, as
// the reason the exit code gives.
struct Findings {
  std::string timed_out;              // a check, benchmark or collective that timed out (5)
  std::string unrunnable;             // a stack that cannot run on a device (3)
  std::string collective_unrunnable;  // a collective kept from running (3, said first)
  std::string failed;                 // a failed check (4)
  std::string other;                  // a failed benchmark or collective (4)
};

void keep_first(std::string& slot, const std::string& why) {
  if (slot.empty()) slot = why;
}

void scan_device(const DeviceReport& device, Findings& f) {
  for (const auto& [mode, p] : device.precisions) {
    const std::string what = fmt::format("{} {}", device.label(), mode_key(mode));
    const ErrorKind bench_kind = p.bench ? p.bench->outcome.error_kind : ErrorKind::none;
    if (p.bench && !p.bench->outcome.ok && bench_kind != ErrorKind::not_run &&
        bench_kind != ErrorKind::none && bench_kind != ErrorKind::unavailable) {
      const std::string why = what + " benchmark: " + p.bench->outcome.error;
      const bool cut = bench_kind == ErrorKind::timed_out || bench_kind == ErrorKind::out_of_time ||
                       bench_kind == ErrorKind::interrupted;
      keep_first(cut ? f.timed_out : f.other, why);
    }
    switch (p.status) {
      case Status::failed:
        if (p.failure == ErrorKind::timed_out) keep_first(f.timed_out, what + ": " + p.reason);
        keep_first(f.failed, what + " failed: " + p.reason);
        break;
      case Status::out_of_time:
      case Status::interrupted: keep_first(f.timed_out, what + ": " + p.reason); break;
      case Status::cannot_run:
        keep_first(f.unrunnable, device.label() + " cannot run this stack: " + p.reason);
        break;
      case Status::refused:
        keep_first(f.unrunnable, device.label() + " refused the checks: " + p.reason);
        break;
      case Status::native:
      case Status::emulated:
      case Status::unsupported:
      case Status::not_tested: break;
    }
  }
}

Findings scan(const Report& report) {
  Findings f;
  for (const DeviceReport& device : report.devices) {
    if (device.selected) scan_device(device, f);
  }
  if (const auto& c = report.collectives; c && c->requested) {
    const std::string why = "--nccl: " + c->reason;
    if (c->status == Status::out_of_time || c->status == Status::interrupted ||
        c->failure == ErrorKind::timed_out) {
      keep_first(f.timed_out, why);
    }
    if (c->failure == ErrorKind::environment || c->status == Status::refused) {
      f.collective_unrunnable = why;
    }
    if (c->status == Status::failed) keep_first(f.other, why);
  }
  return f;
}

// The machine kept a requirement from being checked: a crashed driver, GPUs asked for that are
// not there, nothing selected, or a check that could not run ("" when none of these).
std::string environment_problem(const Report& report) {
  if (report.run.gpus_selected && report.driver.status == DriverStatus::crashed) {
    return "the NVIDIA driver crashed: " + report.driver.message;
  }
  if (!report.run.unavailable_selection.empty()) return report.run.unavailable_selection;
  // Nothing selected where the CPU is there to be gated (a CI step on a machine without a GPU).
  const bool cpu_reported =
      std::any_of(report.devices.begin(), report.devices.end(),
                  [](const DeviceReport& d) { return d.kind == DeviceKind::cpu && !d.selected; });
  for (const RequirementResult& r : report.requirements) {
    if (r.device.empty()) {
      return fmt::format("--require {}: {}{}", mode_key(r.mode), r.reason,
                         cpu_reported ? "; to gate the CPU, add --device cpu" : "");
    }
    if (!r.met && r.failure == ErrorKind::unavailable) {
      return fmt::format("--require {} on {}: not tested: {}", mode_key(r.mode), r.device,
                         r.reason);
    }
  }
  return "";
}

ExitDecision requirements_verdict(const Report& report) {
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

}  // namespace

ExitDecision decide_exit(const Report& report) {
  if (report.error && report.error->kind == FailureKind::usage) {
    return {exit_code::kUsage, report.error->message};
  }
  if (report.error && report.error->kind == FailureKind::internal) {
    return {exit_code::kCheckFailed, report.error->message};
  }
  // Silent data corruption is never hidden behind an interrupt or a timeout.
  if (std::string corruption = soak_corruption(report); !corruption.empty()) {
    return {exit_code::kCheckFailed, corruption};
  }
  if (!report.run.interrupted.empty()) {
    return {exit_code::kTimedOut,
            "interrupted by " + report.run.interrupted + "; the report is partial"};
  }
  // The image's PyTorch not read within the run's time (a file system that does not answer).
  if (report.image_stack && report.image_stack->read_failure == ErrorKind::timed_out) {
    return {exit_code::kTimedOut, report.image_stack->error};
  }
  // A driver that hangs is a hung GPU (5); one whose library crashes, a broken environment (3):
  // wherever GPUs are selected, whether or not a mode was required.
  if (report.run.gpus_selected && report.driver.status == DriverStatus::hung) {
    return {exit_code::kTimedOut, "the NVIDIA driver hangs: " + report.driver.message};
  }
  if (report.run.gpus_selected && report.driver.status == DriverStatus::out_of_time) {
    return {
        exit_code::kTimedOut,
        "the NVIDIA driver did not answer in the time this run gave it: " + report.driver.message};
  }
  const Findings f = scan(report);
  if (!f.timed_out.empty()) return {exit_code::kTimedOut, f.timed_out};
  if (!f.collective_unrunnable.empty()) return {exit_code::kEnvironment, f.collective_unrunnable};
  if (std::string why = environment_problem(report); !why.empty()) {
    return {exit_code::kEnvironment, why};
  }
  if (!f.unrunnable.empty()) return {exit_code::kEnvironment, f.unrunnable};
  if (!f.failed.empty()) return {exit_code::kCheckFailed, f.failed};
  if (!f.other.empty()) return {exit_code::kCheckFailed, f.other};
  return requirements_verdict(report);
}

}  // namespace precision_probe
