#include "precision_probe/report.hpp"

#include <fmt/format.h>

#include "common/strings.hpp"

namespace precision_probe {

std::string DeviceReport::label() const {
  if (kind == DeviceKind::cpu) return "CPU";
  if (index >= 0) return fmt::format("GPU {}", index);
  // `arch CC`: the compute capability asked about.
  if (gpu && gpu->source == "arch" && gpu->cc) return "cc " + gpu->cc->to_string();
  return "GPU";
}

const PrecisionResult* DeviceReport::find(Mode mode) const {
  for (const auto& [m, p] : precisions) {
    if (m == mode) return &p;
  }
  return nullptr;
}

PrecisionResult* DeviceReport::find(Mode mode) {
  for (auto& [m, p] : precisions) {
    if (m == mode) return &p;
  }
  return nullptr;
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
    for (std::string* s : {&p.amp->error, &p.amp->matmul_dtype, &p.amp->layer_norm_dtype,
                           &p.amp->softmax_dtype, &p.amp->loss_dtype}) {
      safe(*s);
    }
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
  for (auto& [mode, p] : d.precisions) make_printable(p);
  safe(d.recommendation.reason);
}

}  // namespace

void make_printable(Report& r) {
  for (std::string* s :
       {&r.host.hostname, &r.host.os, &r.host.kernel, &r.host.machine, &r.stack.source,
        &r.stack.libtorch_version, &r.stack.cuda_version, &r.stack.cudnn_version, &r.stack.error,
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

std::string cuda_version_text(int version) {
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

bool has_findings(const Report& report) {
  return !report.error || report.error->kind == FailureKind::output;
}

}  // namespace precision_probe
