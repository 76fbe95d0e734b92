#include "precision_probe/report_json.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace precision_probe {

// ordered_json: fields come out in the order written here, as a reader expects them.
using json = nlohmann::ordered_json;

namespace {

json number_or_null(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

template <typename T>
json optional_or_null(const std::optional<T>& v) {
  if (!v) return nullptr;
  return *v;
}

json cuda_version_json(const std::optional<int>& v) {
  if (!v) return nullptr;
  return cuda_version_text(*v);
}

json smoke_json(const SmokeOutcome& s) {
  return json{{"ran", s.ran},
              {"ok", s.ok},
              {"rel_error", number_or_null(s.rel_error)},
              {"tolerance", s.ran ? json(s.tolerance) : json(nullptr)},
              {"ms", number_or_null(s.ms)},
              {"size", s.ran ? json{{"m", s.m}, {"n", s.n}, {"k", s.k}} : json(nullptr)},
              {"method", s.method},
              {"error", s.error}};
}

json precision_json(const PrecisionResult& p) {
  return json{{"hardware", std::string(to_string(p.hardware))},
              {"hardware_reason", p.hardware_reason},
              {"status", std::string(to_string(p.status))},
              {"reason", p.reason},
              {"failure", p.status == Status::failed ? json(std::string(to_string(p.failure)))
                                                     : json(nullptr)},
              {"smoke", smoke_json(p.smoke)}};
}

json amp_json(const PrecisionResult& p) {
  const AmpOutcome a = p.amp.value_or(AmpOutcome{});
  std::optional<double> ratio;
  if (a.peak_bytes && a.fp32_peak_bytes && *a.fp32_peak_bytes > 0) {
    ratio = static_cast<double>(*a.peak_bytes) / static_cast<double>(*a.fp32_peak_bytes);
  }
  return json{
      {"hardware", std::string(to_string(p.hardware))},
      {"hardware_reason", p.hardware_reason},
      {"status", std::string(to_string(p.status))},
      {"reason", p.reason},
      {"failure",
       p.status == Status::failed ? json(std::string(to_string(p.failure))) : json(nullptr)},
      {"ran", a.ran},
      {"steps", a.ran ? json(a.steps) : json(nullptr)},
      {"loss_start", number_or_null(a.loss_start)},
      {"loss_end", number_or_null(a.loss_end)},
      {"fp32_loss_end", number_or_null(a.fp32_loss_end)},
      {"loss_rel_diff", number_or_null(a.loss_rel_diff)},
      {"loss_tolerance", a.ran ? json(a.loss_tolerance) : json(nullptr)},
      {"params_changed", a.params_changed},
      {"dtypes", a.ran ? json{{"matmul", a.matmul_dtype},
                              {"layer_norm", a.layer_norm_dtype},
                              {"softmax", a.softmax_dtype},
                              {"loss", a.loss_dtype}}
                       : json(nullptr)},
      {"loss_scaling", a.initial_scale ? json{{"initial_scale", *a.initial_scale},
                                              {"final_scale", number_or_null(a.final_scale)},
                                              {"skipped_steps", a.skipped_steps},
                                              {"injected_overflow_step",
                                               optional_or_null(a.injected_overflow_step)},
                                              {"overflow_handled", a.overflow_handled}}
                                       : json(nullptr)},
      {"memory", a.peak_bytes ? json{{"peak_bytes", *a.peak_bytes},
                                     {"fp32_peak_bytes", optional_or_null(a.fp32_peak_bytes)},
                                     {"ratio_to_fp32", number_or_null(ratio)}}
                              : json(nullptr)},
      {"ms", number_or_null(a.ms)},
      {"error", a.error}};
}

json bench_json(const BenchResult& b) {
  const BenchOutcome& o = b.outcome;
  return json{{"ok", o.ok},
              {"tflops", number_or_null(o.tflops)},
              {"sustained_tflops", number_or_null(o.sustained_tflops)},
              {"ratio_to_fp32", number_or_null(b.ratio_to_fp32)},
              {"peak_tflops", number_or_null(b.peak_tflops)},
              {"peak_source", b.peak_source},
              {"percent_of_peak", number_or_null(b.percent_of_peak)},
              {"size", o.size},
              {"ms", number_or_null(o.ms)},
              {"sustained_ms", number_or_null(o.sustained_ms)},
              {"reps", o.reps},
              {"timer", o.timer},
              {"note", o.note},
              {"error", o.error}};
}

json gpu_json(const GpuInfo& g) {
  json processes = json::array();
  for (const GpuProcess& p : g.processes) {
    processes.push_back(
        {{"pid", p.pid}, {"used_bytes", optional_or_null(p.used_bytes)}, {"name", p.name}});
  }
  return json{
      {"uuid", g.uuid},
      {"pci_bus_id", g.pci_bus_id},
      {"compute_capability", g.cc ? json(g.cc->to_string()) : json(nullptr)},
      {"architecture", g.cc ? json(architecture_name(*g.cc)) : json(nullptr)},
      {"sm_count", optional_or_null(g.sm_count)},
      {"memory_total_bytes", optional_or_null(g.memory_total)},
      {"memory_free_bytes", optional_or_null(g.memory_free)},
      {"memory_used_bytes", optional_or_null(g.memory_used)},
      {"mig_enabled", optional_or_null(g.mig_enabled)},
      {"mig_instance", g.mig_instance},
      {"compute_mode", g.compute_mode ? json(compute_mode_name(*g.compute_mode)) : json(nullptr)},
      {"max_clock_ghz", number_or_null(g.clock_ghz)},
      {"processes", processes},
      {"source", g.source}};
}

json cpu_json(const CpuInfo& c) {
  return json{{"model", c.model},
              {"architecture", c.architecture},
              {"logical_cores", c.logical_cores},
              {"isa_features", c.features}};
}

json device_json(const DeviceReport& d) {
  json precisions = json::object();
  json amp = json::object();
  json bench = json::object();
  for (const auto& [mode, p] : d.precisions) {
    if (is_amp_mode(mode)) {
      amp[std::string(mode_key(mode))] = amp_json(p);
    } else {
      precisions[std::string(mode_key(mode))] = precision_json(p);
    }
    if (p.bench) bench[std::string(mode_key(mode))] = bench_json(*p.bench);
  }
  json j{{"index", d.index >= 0 ? json(d.index) : json(nullptr)},
         {"kind", std::string(to_string(d.kind))},
         {"name", d.name},
         {"selected", d.selected},
         {"precisions", precisions},
         {"amp", amp},
         {"recommendation",
          {{"dtype", d.recommendation.dtype},
           {"loss_scaling", d.recommendation.loss_scaling},
           {"reason", d.recommendation.reason}}}};
  if (!bench.empty()) j["bench"] = bench;
  if (d.gpu) j["gpu"] = gpu_json(*d.gpu);
  if (d.cpu) j["cpu"] = cpu_json(*d.cpu);
  if (d.kernels) {
    j["kernels"] = {
        {"covered", d.kernels->covered}, {"via", d.kernels->via}, {"reason", d.kernels->reason}};
  } else if (d.kind == DeviceKind::cuda) {
    j["kernels"] = nullptr;
  }
  return j;
}

json collectives_json(const CollectivesReport& c) {
  json all_reduce = json::array();
  for (const CollectiveOutcome& a : c.all_reduce) {
    all_reduce.push_back({{"dtype", a.dtype},
                          {"ok", a.ok},
                          {"ranks", a.ranks},
                          {"bytes", a.bytes},
                          {"time_ms", number_or_null(a.time_ms)},
                          {"algbw_gbps", number_or_null(a.algbw_gbps)},
                          {"busbw_gbps", number_or_null(a.busbw_gbps)},
                          {"error", a.error}});
  }
  json peers = json::array();
  for (const PeerLink& p : c.peers) {
    peers.push_back({{"from", p.from},
                     {"to", p.to},
                     {"access", p.access},
                     {"performance_rank", optional_or_null(p.performance_rank)},
                     {"native_atomics", p.native_atomics}});
  }
  return json{{"requested", c.requested}, {"status", std::string(to_string(c.status))},
              {"reason", c.reason},       {"nccl_version", c.nccl_version},
              {"devices", c.devices},     {"all_reduce", all_reduce},
              {"peer_access", peers}};
}

json report_json(const Report& r) {
  json j;
  j["schema_version"] = r.schema_version;
  j["tool"] = {
      {"name", r.tool.name},
      {"version", r.tool.version},
      {"built_with", {{"libtorch", r.tool.built_with_libtorch}, {"cuda", r.tool.built_with_cuda}}}};
  j["host"] = {{"hostname", r.host.hostname},
               {"os", r.host.os},
               {"kernel", r.host.kernel},
               {"machine", r.host.machine},
               {"container", r.host.container}};
  if (r.error) j["error"] = {{"kind", to_string(r.error->kind)}, {"message", r.error->message}};
  if (!has_findings(r)) {
    j["exit_code"] = r.exit_code;
    j["exit_reason"] = r.exit_reason;
    return j;
  }
  json required = json::array();
  for (const std::string& m : r.run.required) required.push_back(m);
  j["run"] = {{"command", r.run.command}, {"quick", r.run.quick},         {"bench", r.run.bench},
              {"seed", r.run.seed},       {"timeout_s", r.run.timeout_s}, {"required", required},
              {"devices", r.run.devices}};
  j["stack"] = {{"available", r.stack.available},
                {"source", r.stack.source},
                {"libtorch_version", r.stack.libtorch_version},
                {"cuda_built", r.stack.cuda_built},
                {"cuda_version", r.stack.cuda_version},
                {"cudnn_version", r.stack.cudnn_version},
                {"arch_list", r.stack.arch_list},
                {"cpu_threads", r.stack.cpu_threads},
                {"error", r.stack.error}};
  j["driver"] = {{"status", std::string(to_string(r.driver.status))},
                 {"version", r.driver.version},
                 {"cuda_version", cuda_version_json(r.driver.cuda_version)},
                 {"message", r.driver.message},
                 {"libcuda_path", r.driver.libcuda_path},
                 {"nvml", r.driver.nvml_loaded},
                 {"cuda_queried", r.driver.cuda_queried},
                 {"cu_init", r.driver.cu_init_result ? json{{"result", *r.driver.cu_init_result},
                                                            {"name", r.driver.cu_init_error_name}}
                                                     : json(nullptr)}};
  json devices = json::array();
  for (const DeviceReport& d : r.devices) devices.push_back(device_json(d));
  j["devices"] = devices;
  json diagnostics = json::array();
  for (const Diagnostic& d : r.diagnostics) {
    diagnostics.push_back({{"code", d.code},
                           {"severity", std::string(to_string(d.severity))},
                           {"message", d.message},
                           {"hint", d.hint}});
  }
  j["diagnostics"] = diagnostics;
  json requirements = json::array();
  for (const RequirementResult& q : r.requirements) {
    requirements.push_back({{"mode", std::string(mode_key(q.mode))},
                            {"device", q.device},
                            {"met", q.met},
                            {"status", std::string(to_string(q.status))},
                            {"reason", q.reason}});
  }
  j["requirements"] = requirements;
  if (r.collectives) j["collectives"] = collectives_json(*r.collectives);
  j["exit_code"] = r.exit_code;
  j["exit_reason"] = r.exit_reason;
  j["duration_ms"] = std::round(r.duration_ms * 10.0) / 10.0;
  return j;
}

}  // namespace

std::string report_to_json(const Report& report) {
  // Invalid UTF-8 (from a driver string, say) is replaced rather than thrown on.
  return report_json(report).dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace precision_probe
