// The Prometheus text exposition format, for node_exporter's textfile collector: one probe per
// node writes precision_probe.prom; dashboards read the gauges. docs/prometheus.md lists them.

#include <array>
#include <cctype>
#include <cmath>
#include <ostream>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "probe/verdicts/exit_codes.hpp"
#include "probe/outputs/printers.hpp"

namespace precision_probe {

namespace {

// Label values escape backslash, double quote and newline (the exposition format's rules).
std::string escape(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

// One metric family: its samples are written together (the exposition format wants each family as
// one group), after its HELP and TYPE lines; an empty family is left out.
struct Family {
  std::string name;
  std::string help;
  std::ostringstream samples;
  void add(const std::string& labels, double value) {
    samples << name;
    if (!labels.empty()) samples << '{' << labels << '}';
    samples << ' ' << number(value) << '\n';
  }
};

// The families, in the order they were first asked for.
class Exposition {
 public:
  Family& family(const std::string& name, const std::string& help) {
    families_.push_back(std::make_unique<Family>());
    families_.back()->name = name;
    families_.back()->help = help;
    return *families_.back();
  }
  void write(std::ostream& out) const {
    for (const auto& f : families_) {
      if (f->samples.tellp() == 0) continue;
      out << "# HELP " << f->name << ' ' << f->help << "\n# TYPE " << f->name << " gauge\n"
          << f->samples.str();
    }
  }

 private:
  std::vector<std::unique_ptr<Family>> families_;
};

// The device label's one spelling, dcgm-exporter's for GPUs: "nvidia0"; "cpu"; "arch" (`arch CC`).
std::string device_value(const DeviceReport& d) {
  if (d.kind == DeviceKind::cpu) return "cpu";
  return d.index >= 0 ? fmt::format("nvidia{}", d.index) : "arch";
}

// A PCI bus id as NVML and dcgm-exporter write it: an 8-digit domain, upper-case hex
// ("00000000:1B:00.0"); the driver's facts have "0000:1b:00.0".
std::string dcgm_bus_id(const std::string& bus_id) {
  const std::size_t colon = bus_id.find(':');
  if (bus_id.empty() || colon == std::string::npos || colon > 8) return bus_id;
  std::string id = std::string(8 - colon, '0') + bus_id;
  for (char& c : id) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return id;
}

// Labels named as dcgm-exporter names them where they mean the same, so that a dashboard joins
// the probe's series with DCGM's on UUID (docs/prometheus.md); `kind` is the probe's own.
std::string device_labels(const Report& r, const DeviceReport* d) {
  const GpuInfo* gpu = d != nullptr && d->gpu ? &*d->gpu : nullptr;
  return fmt::format(
      R"(gpu="{}",UUID="{}",pci_bus_id="{}",device="{}",modelName="{}",Hostname="{}",)"
      R"(DCGM_FI_DRIVER_VERSION="{}",kind="{}")",
      d != nullptr && d->kind == DeviceKind::cuda && d->index >= 0 ? std::to_string(d->index) : "",
      escape(gpu != nullptr ? gpu->uuid : ""),
      escape(gpu != nullptr ? dcgm_bus_id(gpu->pci_bus_id) : ""),
      d != nullptr ? device_value(*d) : "none", escape(d != nullptr ? d->name : ""),
      escape(r.host.node()), escape(r.driver.version), d != nullptr ? to_string(d->kind) : "");
}

// A requirement's device labels: the device it was checked on, or device="none".
std::string requirement_labels(const Report& r, const RequirementResult& q) {
  for (const DeviceReport& d : r.devices) {
    if (d.label() == q.device) return device_labels(r, &d);
  }
  return device_labels(r, nullptr);
}

std::string exit_code_help() {
  std::string help = "The probe's exit code:";
  for (const exit_code::Meaning& m : exit_code::kMeanings) {
    help += fmt::format(" {} {};", m.code, m.meaning);
  }
  help.back() = '.';
  return help;
}

void add_info(Exposition& e, const Report& r) {
  Family& info =
      e.family("precision_probe_info",
               "Build and stack of the probe (the value is always 1; the facts are labels).");
  info.add(
      fmt::format(
          R"(version="{}",libtorch="{}",cuda="{}",driver="{}",driver_cuda="{}",Hostname="{}")",
          escape(r.tool.version),
          r.stack.available ? escape(r.stack.libtorch_version) : std::string("unknown"),
          r.stack.available ? version_or_empty(r.stack.cuda_version) : std::string("unknown"),
          escape(r.driver.version), version_or_empty(r.driver.cuda_version), escape(r.host.node())),
      1);
}

// Per device and mode: natively usable, the status, the hardware's verdict; per device, gated.
void add_verdicts(Exposition& e, const Report& r) {
  Family& native =
      e.family("precision_probe_native",
               "1 if the precision is natively usable on the device (status native), else 0.");
  Family& status =
      e.family("precision_probe_status",
               "The precision's status on the device: 1 for the current status, 0 for the others.");
  Family& hardware = e.family(
      "precision_probe_hardware_native",
      "1 if the device's hardware runs the precision natively (the architecture's verdict, "
      "also under --quick), else 0.");
  Family& selected =
      e.family("precision_probe_device_selected", "1 if the device is gated by --require.");
  for (const DeviceReport& d : r.devices) {
    const std::string labels = device_labels(r, &d);
    selected.add(labels, d.selected ? 1 : 0);
    for (const auto& [mode, p] : d.precisions) {
      const std::string ml = fmt::format(R"({},mode="{}")", labels, mode_key(mode));
      native.add(ml, p.status == Status::native ? 1 : 0);
      hardware.add(ml, p.hardware == Hardware::native ? 1 : 0);
      for (const StatusInfo& st : kStatuses) {
        status.add(fmt::format(R"({},status="{}")", ml, st.key), p.status == st.status ? 1 : 0);
      }
    }
  }
}

// Per device and mode: the measured figures, where there are some.
void add_measurements(Exposition& e, const Report& r) {
  Family& rel =
      e.family("precision_probe_smoke_relative_error",
               "Relative Frobenius error of the matmul smoke test against a float64 reference.");
  Family& tol = e.family("precision_probe_smoke_tolerance", "The smoke test's tolerance.");
  Family& tflops = e.family("precision_probe_bench_tflops",
                            "Measured dense GEMM throughput (--bench), TFLOP/s (int8: TOPS).");
  Family& sustained = e.family(
      "precision_probe_bench_sustained_tflops",
      "GEMM throughput after a second of continuous load (--bench, GPUs), TFLOP/s (int8: TOPS).");
  Family& peak =
      e.family("precision_probe_bench_peak_ratio",
               "Measured throughput as a fraction of the datasheet dense peak (--bench).");
  Family& loss =
      e.family("precision_probe_amp_loss_relative_difference",
               "Final training loss under AMP relative to the fp32 run of the same steps.");
  Family& mem = e.family("precision_probe_amp_peak_memory_bytes",
                         "Peak device memory of one training step under AMP (GPUs).");
  for (const DeviceReport& d : r.devices) {
    const std::string labels = device_labels(r, &d);
    for (const auto& [mode, p] : d.precisions) {
      const std::string ml = fmt::format(R"({},mode="{}")", labels, mode_key(mode));
      if (p.smoke.ran && p.smoke.rel_error) {
        rel.add(ml, *p.smoke.rel_error);
        tol.add(ml, p.smoke.tolerance);
      }
      const BenchOutcome* b = p.bench ? &p.bench->outcome : nullptr;
      if (b != nullptr && b->tflops) tflops.add(ml, *b->tflops);
      if (b != nullptr && b->sustained_tflops) sustained.add(ml, *b->sustained_tflops);
      if (p.bench && p.bench->percent_of_peak) peak.add(ml, *p.bench->percent_of_peak / 100.0);
      if (p.amp && p.amp->loss_rel_diff) loss.add(ml, *p.amp->loss_rel_diff);
      if (p.amp && p.amp->peak_bytes) mem.add(ml, static_cast<double>(*p.amp->peak_bytes));
    }
  }
}

// Per device and mode: what --soak found.
void add_soak(Exposition& e, const Report& r) {
  Family& results = e.family("precision_probe_soak_results",
                             "Results compared bit for bit with the golden one under --soak.");
  Family& mismatches = e.family("precision_probe_soak_mismatches",
                                "Results that differed from the golden one under --soak (silent "
                                "data corruption; injected faults included).");
  Family& tflops =
      e.family("precision_probe_soak_tflops", "Throughput under --soak, TFLOP/s (int8: TOPS).");
  Family& injected =
      e.family("precision_probe_soak_injected", "1 if a fault was injected (a detector test).");
  for (const DeviceReport& d : r.devices) {
    if (!d.soak) continue;
    const std::string labels = device_labels(r, &d);
    injected.add(labels, d.soak->injected ? 1 : 0);
    for (const auto& [mode, o] : d.soak->modes) {
      if (!o.ran) continue;
      const std::string ml = fmt::format(R"({},mode="{}")", labels, mode_key(mode));
      results.add(ml, static_cast<double>(o.iterations));
      mismatches.add(ml, static_cast<double>(o.mismatches));
      if (o.tflops) tflops.add(ml, *o.tflops);
    }
  }
}

// Per GPU: what NVML said during --soak (docs/soak.md), one family per fact.
void add_soak_telemetry(Exposition& e, const Report& r) {
  Family& temperature = e.family("precision_probe_soak_max_temperature_celsius",
                                 "The GPU's highest temperature during --soak.");
  Family& clock =
      e.family("precision_probe_soak_min_sm_clock_mhz", "The GPU's lowest SM clock during --soak.");
  Family& power =
      e.family("precision_probe_soak_max_power_watts", "The GPU's highest power during --soak.");
  Family& events = e.family("precision_probe_soak_clock_event",
                            "1 for each clock-event (throttle) reason NVML gave during --soak.");
  Family& increases =
      e.family("precision_probe_soak_error_events_increase",
               "Growth of the GPU's error counters from the soak's first NVML sample to its last.");
  Family& xids =
      e.family("precision_probe_soak_xid_events", "Xid errors NVML delivered during --soak.");
  for (const DeviceReport& d : r.devices) {
    if (!d.soak || !d.soak->telemetry || d.soak->telemetry->samples == 0) continue;
    const SoakTelemetry& t = *d.soak->telemetry;
    const std::string labels = device_labels(r, &d);
    if (t.max_temperature_c) temperature.add(labels, *t.max_temperature_c);
    if (t.min_sm_mhz) clock.add(labels, *t.min_sm_mhz);
    if (t.max_power_w) power.add(labels, *t.max_power_w);
    for (const std::string& reason : t.clock_events) {
      events.add(fmt::format(R"({},reason="{}")", labels, escape(reason)), 1);
    }
    const std::array<std::pair<const char*, const std::optional<std::int64_t>*>, 4> deltas = {
        {{"ecc_corrected", &t.ecc_corrected_delta},
         {"ecc_uncorrected", &t.ecc_uncorrected_delta},
         {"remapped_rows", &t.remapped_rows_delta},
         {"retired_pages", &t.retired_pages_delta}}};
    for (const auto& [source, delta] : deltas) {
      if (*delta)
        increases.add(fmt::format(R"({},source="{}")", labels, source),
                      static_cast<double>(**delta));
    }
    xids.add(labels, static_cast<double>(t.xids.size()));
  }
}

// The run as a whole: requirements, diagnostics, GPUs, duration.
void add_run(Exposition& e, const Report& r) {
  Family& met = e.family("precision_probe_requirement_met",
                         "1 if --require's mode is met natively on the device.");
  for (const RequirementResult& q : r.requirements) {
    met.add(fmt::format(R"({},mode="{}")", requirement_labels(r, q), mode_key(q.mode)),
            q.met ? 1 : 0);
  }
  Family& diag = e.family("precision_probe_diagnostics", "Number of diagnostics of each severity.");
  for (Severity sev : {Severity::error, Severity::warning, Severity::info}) {
    int n = 0;
    for (const Diagnostic& dg : r.diagnostics) n += dg.severity == sev ? 1 : 0;
    diag.add(fmt::format(R"(severity="{}")", to_string(sev)), n);
  }
  Family& gpus = e.family("precision_probe_gpus", "Number of GPUs visible to CUDA.");
  int n = 0;
  for (const DeviceReport& d : r.devices) n += d.kind == DeviceKind::cuda ? 1 : 0;
  gpus.add("", n);
  Family& duration = e.family("precision_probe_duration_seconds", "Wall time of the probe.");
  duration.add("", r.duration_ms / 1000.0);
}

class PrometheusPrinter final : public Printer {
  void do_print(const Report& r, std::ostream& out) const override {
    Exposition e;
    add_info(e, r);
    if (has_findings(r)) {
      add_verdicts(e, r);
      add_measurements(e, r);
      add_soak(e, r);
      add_soak_telemetry(e, r);
      add_run(e, r);
    }
    Family& exit = e.family("precision_probe_exit_code", exit_code_help());
    exit.add("", r.exit_code);
    e.write(out);
  }
};

}  // namespace

std::unique_ptr<Printer> make_prometheus_printer() { return std::make_unique<PrometheusPrinter>(); }

}  // namespace precision_probe
