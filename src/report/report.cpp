#include "precision_probe/report.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "strings/strings.hpp"

namespace precision_probe {

std::string DeviceReport::label() const {
  if (kind == DeviceKind::cpu) return "CPU";
  if (index >= 0) return fmt::format("GPU {}", index);
  // `arch CC`: the compute capability asked about.
  if (gpu && gpu->source == "arch" && gpu->cc) return "cc " + gpu->cc->to_string();
  return "GPU";
}

std::string_view to_string(DriverStatus status) {
  switch (status) {
    case DriverStatus::ok: return "ok";
    case DriverStatus::not_found: return "not_found";
    case DriverStatus::init_failed: return "init_failed";
    case DriverStatus::no_devices: return "no_devices";
    case DriverStatus::hung: return "hung";
    case DriverStatus::crashed: return "crashed";
    case DriverStatus::out_of_time: return "out_of_time";
  }
  return "?";
}

std::string compute_mode_name(int mode) {
  switch (mode) {
    case 0: return "default";
    case 1: return "exclusive_thread";
    case 2: return "prohibited";
    case 3: return "exclusive_process";
    default: return fmt::format("unknown ({})", mode);
  }
}

std::optional<int> parse_compute_mode(std::string_view name) {
  for (int mode = 0; mode <= 3; ++mode) {
    if (compute_mode_name(mode) == name) return mode;
  }
  return std::nullopt;
}

std::string_view to_string(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::cuda: return "cuda";
  }
  return "?";
}

std::string_view to_string(Command command) {
  switch (command) {
    case Command::probe: return "probe";
    case Command::arch: return "arch";
  }
  return "?";
}

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::error: return "error";
    case Severity::warning: return "warning";
    case Severity::info: return "info";
  }
  return "?";
}

std::string_view to_string(FailureKind kind) {
  switch (kind) {
    case FailureKind::usage: return "usage";
    case FailureKind::output: return "output";
    case FailureKind::internal: return "internal";
  }
  return "?";
}

namespace {

void safe(std::string& s) { s = terminal_safe(s); }

void make_printable(PrecisionResult& p) {
  for (std::string* s : {&p.hardware_reason, &p.reason, &p.smoke.method, &p.smoke.error}) safe(*s);
  if (p.amp) {
    safe(p.amp->error);
  }
  if (p.bench) {
    for (std::string* s : {&p.bench->outcome.error, &p.bench->outcome.note, &p.bench->outcome.timer,
                           &p.bench->peak_source}) {
      safe(*s);
    }
  }
}

void make_printable(DeviceReport& d) {
  safe(d.name);
  if (d.gpu) {
    for (std::string* s : {&d.gpu->name, &d.gpu->uuid, &d.gpu->pci_bus_id, &d.gpu->source})
      safe(*s);
    for (GpuProcess& p : d.gpu->processes) safe(p.name);
  }
  if (d.cpu) {
    safe(d.cpu->model);
    safe(d.cpu->architecture);
  }
  if (d.kernels) {
    safe(d.kernels->via);
    safe(d.kernels->reason);
  }
  for (auto [mode, p] : d.precisions) make_printable(p);
  safe(d.recommendation.reason);
  if (d.engine_rerun) {
    for (std::string* s :
         {&d.engine_rerun->why, &d.engine_rerun->signal, &d.engine_rerun->hung_device}) {
      safe(*s);
    }
  }
}

}  // namespace

void make_printable(Report& r) {
  for (std::string* s :
       {&r.host.hostname, &r.host.node_name, &r.host.os, &r.host.kernel, &r.host.machine,
        &r.stack.source, &r.stack.libtorch_version, &r.stack.cudnn_version, &r.stack.error,
        &r.driver.version, &r.driver.message, &r.driver.libcuda_path, &r.driver.cu_init_error_name,
        &r.run.unavailable_selection, &r.exit_reason}) {
    safe(*s);
  }
  for (std::string& a : r.stack.arch_list) safe(a);
  for (DeviceReport& d : r.devices) make_printable(d);
  for (Diagnostic& d : r.diagnostics) {
    safe(d.message);
    safe(d.hint);
  }
  for (RequirementResult& q : r.requirements) safe(q.reason);
  if (r.collectives) {
    safe(r.collectives->reason);
    safe(r.collectives->nccl_version);
    for (CollectiveOutcome& a : r.collectives->all_reduce) safe(a.error);
  }
  if (r.error) safe(r.error->message);
}

bool has_findings(const Report& report) {
  return !report.error || report.error->kind == FailureKind::output;
}

std::string_view overall_severity(const Report& report) {
  const auto has = [&report](Severity severity) {
    return std::any_of(report.diagnostics.begin(), report.diagnostics.end(),
                       [severity](const Diagnostic& d) { return d.severity == severity; });
  };
  if (report.exit_code >= 2 || has(Severity::error)) return "error";
  if (report.exit_code == 1 || has(Severity::warning)) return "warning";
  return "ok";
}

}  // namespace precision_probe
