// The human report: a header, one table per device, diagnostics, requirements and the verdict.

#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include "probe/outputs/printers.hpp"
#include "common/strings.hpp"

namespace precision_probe {

namespace {

// The mode column is 13 wide ({:<13} below): the longest key, fp8_blockwise.
constexpr std::size_t longest_mode_key() {
  std::size_t n = 0;
  for (const ModeInfo& info : kModeTable) n = info.key.size() > n ? info.key.size() : n;
  return n;
}
static_assert(longest_mode_key() <= 13, "a mode key is wider than the text report's column");

class Paint {
 public:
  explicit Paint(bool enabled) : enabled_(enabled) {}
  std::string operator()(std::string_view text, std::string_view code) const {
    if (!enabled_ || code.empty()) return std::string(text);
    return fmt::format("\033[{}m{}\033[0m", code, text);
  }
  std::string status(Status s, int width) const {
    std::string padded = fmt::format("{:<{}}", to_string(s), width);
    switch (s) {
      case Status::native: return (*this)(padded, "32");
      case Status::emulated: return (*this)(padded, "33");
      case Status::failed: return (*this)(padded, "1;31");
      case Status::unsupported:
      case Status::not_tested: return (*this)(padded, "2");
    }
    return padded;
  }
  std::string bold(std::string_view text) const { return (*this)(text, "1"); }

 private:
  bool enabled_;
};

std::string bytes_gib(std::uint64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string device_heading(const DeviceReport& d) {
  std::vector<std::string> parts;
  if (d.gpu) {
    const GpuInfo& g = *d.gpu;
    if (g.cc) parts.push_back(fmt::format("cc {} {}", g.cc->to_string(), architecture_name(*g.cc)));
    if (g.sm_count) parts.push_back(fmt::format("{} SMs", *g.sm_count));
    if (g.memory_total) {
      parts.push_back(g.memory_free ? fmt::format("{} ({} free)", bytes_gib(*g.memory_total),
                                                  bytes_gib(*g.memory_free))
                                    : bytes_gib(*g.memory_total));
    }
    if (g.mig_instance) parts.emplace_back("MIG instance");
    if (!g.pci_bus_id.empty()) parts.push_back(g.pci_bus_id);
  }
  if (d.cpu) {
    parts.push_back(d.cpu->architecture);
    parts.push_back(fmt::format("{} threads", d.cpu->logical_cores));
  }
  if (d.index >= 0 || d.kind == DeviceKind::cpu) {
    parts.emplace_back(d.selected ? "selected" : "reported, not gated");
  }
  std::string out = d.name;
  for (const std::string& p : parts) out += " · " + p;
  return out;
}

std::string number_cell(const std::optional<double>& v, const char* spec_text, double scale = 1.0) {
  if (!v) return "-";
  return fmt::format(fmt::runtime(spec_text), *v * scale);
}

// Writes lines of fixed-width table cells and free text that wraps at the width.
class Writer {
 public:
  Writer(std::ostream& out, PrintStyle style)
      : out_(out), width_(static_cast<std::size_t>(style.width)), paint_(style.color) {}

  const Paint& paint() const { return paint_; }
  std::ostream& raw() { return out_; }

  // Cells followed by a note: on the same line where it fits, else wrapped in the note's column,
  // else beneath the row, indented.
  void row(const std::string& cells, const std::string& note) {
    const std::size_t used = visible_width(cells) + 2;
    if (note.empty()) {
      line(cells);
    } else if (used + visible_width(note) <= width_) {
      line(cells + "  " + note);
    } else if (width_ >= used + kMinNoteColumn) {
      const auto lines = wrap(note, width_ - used);
      line(cells + "  " + lines.front());
      for (std::size_t i = 1; i < lines.size(); ++i) line(std::string(used, ' ') + lines[i]);
    } else {
      line(cells);
      text(std::string(kNoteIndent, ' '), note, kNoteIndent);
    }
  }

  // Free text after `prefix`, its continuation lines indented by `indent`.
  void text(const std::string& prefix, const std::string& body, std::size_t indent) {
    const std::size_t first = visible_width(prefix);
    const std::size_t room = width_ > first + 20 ? width_ - first : 20;
    const auto first_lines = wrap(body, room);
    line(prefix + first_lines.front());
    if (first_lines.size() < 2) return;
    // The rest, rewrapped at the continuation width.
    std::string rest;
    for (std::size_t i = 1; i < first_lines.size(); ++i)
      rest += (i > 1 ? " " : "") + first_lines[i];
    const std::size_t cont = width_ > indent + 20 ? width_ - indent : 20;
    for (const std::string& l : wrap(rest, cont)) line(std::string(indent, ' ') + l);
  }

  // One line, without trailing spaces.
  void line(const std::string& text) {
    std::size_t end = text.size();
    while (end > 0 && text[end - 1] == ' ') --end;
    out_ << std::string_view(text).substr(0, end) << '\n';
  }

 private:
  static constexpr std::size_t kMinNoteColumn = 30;
  static constexpr std::size_t kNoteIndent = 6;
  std::ostream& out_;
  std::size_t width_;
  Paint paint_;
};

// --bench: one row per measured precision, then where the peaks come from. CPUs in GFLOP/s,
// where TFLOP/s would print 0.00; int8 counts integer operations (TOPS), as its datasheet peak
// does. 80 columns: a row's note goes beneath it.
void print_bench(const DeviceReport& d, Writer& w) {
  bool any = false;
  for (const auto& [mode, p] : d.precisions) any = any || p.bench.has_value();
  if (!any) return;
  const bool giga = d.kind == DeviceKind::cpu;
  const double scale = giga ? 1000.0 : 1.0;
  w.line(fmt::format("  {:<13} {:>9} {:>9} {:>8} {:>9} {:>8} {:>6} {:>9}", "bench",
                     giga ? "GFLOP/s" : "TFLOP/s", "sustained", "vs fp32", "peak", "of peak",
                     "size", "ms/GEMM"));
  std::vector<std::string> sources;
  for (const auto& [mode, p] : d.precisions) {
    if (!p.bench) continue;
    const BenchResult& b = *p.bench;
    const BenchOutcome& o = b.outcome;
    if (!b.peak_source.empty() &&
        std::find(sources.begin(), sources.end(), b.peak_source) == sources.end()) {
      sources.push_back(b.peak_source);
    }
    const bool integer = mode_info(mode).peak == PeakColumn::int8;
    w.row(fmt::format(
              "  {:<13} {:>9} {:>9} {:>8} {:>9} {:>8} {:>6} {:>9}", mode_key(mode),
              number_cell(o.tflops, "{:.4g}", scale),
              number_cell(o.sustained_tflops, "{:.4g}", scale),
              number_cell(b.ratio_to_fp32, "{:.2f}x"), number_cell(b.peak_tflops, "{:.4g}", scale),
              number_cell(b.percent_of_peak, "{:.1f}%"), o.size, number_cell(o.ms, "{:.3f}")),
          !o.ok      ? o.error
          : !integer ? ""
          : giga     ? "integer ops: GOPS, not GFLOP/s"
                     : "integer ops: TOPS, not TFLOP/s");
  }
  if (!sources.empty()) w.text("  peaks: ", join(sources, "; "), 4);
}

std::string soak_first(const SoakOutcome& o) {
  if (!o.first_mismatch) return "-";
  return fmt::format("#{} at {:.1f}s", o.first_mismatch->iteration, o.first_mismatch->seconds);
}

// --soak: one row per mode soaked, then what comparing the devices found.
void print_soak(const DeviceReport& d, Writer& w) {
  if (!d.soak) return;
  const SoakReport& s = *d.soak;
  w.line(fmt::format("  {:<13} {:>10} {:>10} {:>14} {:>9} {:>7}  {}", "soak", "results",
                     "mismatches", "first mismatch",
                     d.kind == DeviceKind::cpu ? "GFLOP/s" : "TFLOP/s", "hot s", "note"));
  if (s.injected) {
    w.text("  ", "a fault was injected (PRECISION_PROBE_INJECT_FAULT): the detector's own test", 4);
  }
  const double scale = d.kind == DeviceKind::cpu ? 1000.0 : 1.0;
  for (const auto& [mode, o] : s.modes) {
    const std::string mismatches = o.ran ? std::to_string(o.mismatches) : "-";
    w.row(fmt::format("  {:<13} {:>10} {:>10} {:>14} {:>9} {:>7}", mode_key(mode),
                      o.ran ? std::to_string(o.iterations) : "-", mismatches, soak_first(o),
                      number_cell(o.tflops, "{:.4g}", scale), number_cell(o.seconds, "{:.1f}")),
          o.error);
  }
  const bool all_identical = std::all_of(s.modes.begin(), s.modes.end(), [](const auto& m) {
    return m.value.ran && m.value.ok && m.value.error.empty();
  });
  if (all_identical && !s.modes.empty()) {
    w.line("  every result bit-identical to its mode's golden result");
  }
  if (s.telemetry) w.text("  telemetry: ", telemetry_summary(*s.telemetry), 4);
  if (!s.golden_disagreement.empty()) w.text("  golden: ", s.golden_disagreement, 4);
  if (!s.straggler.empty()) w.text("  straggler: ", s.straggler, 4);
}

std::string mib(std::int64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

void print_collectives(const CollectivesReport& c, Writer& w) {
  std::string heading = w.paint().bold("collectives") +
                        (c.nccl_version.empty() ? "" : " (NCCL " + c.nccl_version + ")");
  if (!c.devices.empty()) {
    std::vector<std::string> ids;
    for (int d : c.devices) ids.push_back(std::to_string(d));
    heading += " · GPUs " + join(ids, ",");
  }
  w.text("", heading, 4);
  if (c.requested) {
    w.row("  all_reduce  " + w.paint().status(c.status, 12), c.reason);
    if (!c.all_reduce.empty()) {
      w.line(fmt::format("  {:<6} {:<6} {:>9} {:>10} {:>12} {:>12}  {}", "dtype", "exact", "size",
                         "time", "algbw GB/s", "busbw GB/s", "note"));
    }
    for (const CollectiveOutcome& a : c.all_reduce) {
      w.row(fmt::format("  {:<6} {:<6} {:>9} {:>10} {:>12} {:>12}", to_string(a.dtype),
                        a.ran ? (a.ok ? "yes" : "NO") : "-", mib(a.bytes),
                        number_cell(a.time_ms, "{:.3f} ms"), number_cell(a.algbw_gbps, "{:.1f}"),
                        number_cell(a.busbw_gbps, "{:.1f}")),
            a.error);
    }
  }
  for (const PeerLink& p : c.peers) {
    w.line(fmt::format(
        "  peer access GPU {} -> GPU {}: {}{}{}", p.from, p.to, p.access ? "yes" : "no",
        p.performance_rank ? fmt::format(", performance rank {}", *p.performance_rank) : "",
        p.native_atomics ? ", native atomics" : ""));
  }
  w.line("");
}

// How far a training run's loss ended from fp32's: "0.4% (<=2%)"; no exponent however far.
std::string loss_distance(const AmpOutcome& a) {
  if (!a.loss_rel_diff) return "-";
  const double percent = *a.loss_rel_diff * 100.0;
  return fmt::format(percent < 10.0 ? "{:.2g}% (<={:.0f}%)" : "{:.0f}% (<={:.0f}%)", percent,
                     a.loss_tolerance * 100.0);
}

// A training run's loss scaling and peak memory, the row's second line.
std::string amp_details(const AmpOutcome& a) {
  std::vector<std::string> parts;
  if (a.final_scale) {
    parts.push_back(fmt::format("loss scale {:.0f} ({} skipped)", *a.final_scale, a.skipped_steps));
  }
  if (a.peak_bytes && a.fp32_peak_bytes && *a.fp32_peak_bytes > 0) {
    parts.push_back(
        fmt::format("peak memory {} ({:.2f}x fp32)", mib(*a.peak_bytes),
                    static_cast<double>(*a.peak_bytes) / static_cast<double>(*a.fp32_peak_bytes)));
  }
  return join(parts, " · ");
}

// The training runs: loss from first to last step and its distance to the fp32 run; beneath,
// loss scaling and peak memory against fp32, then the note. 80 columns.
void print_amp(const DeviceReport& d, Writer& w) {
  w.line(fmt::format("  {:<13} {:<12} {:<12} {:>5}  {:<17} {}", "training", "hardware", "status",
                     "steps", "loss first->last", "vs fp32"));
  for (const auto& [mode, p] : d.precisions) {
    if (!is_amp_mode(mode)) continue;
    const AmpOutcome a = p.amp.value_or(AmpOutcome{});
    const std::string steps = a.ran ? std::to_string(a.steps) : "-";
    const std::string loss = a.loss_start && a.loss_end
                                 ? fmt::format("{:.3f} -> {:.3f}", *a.loss_start, *a.loss_end)
                                 : "-";
    w.row(fmt::format("  {:<13} {:<12} ", mode_key(mode), to_string(p.hardware)) +
              w.paint().status(p.status, 12) +
              fmt::format(" {:>5}  {:<17} {}", steps, loss, loss_distance(a)),
          "");
    if (const std::string details = amp_details(a); !details.empty()) w.text("      ", details, 6);
    if (!p.reason.empty()) w.text("      ", p.reason, 6);
  }
}

void print_device(const DeviceReport& d, Writer& w) {
  const std::string label = d.index < 0 && d.kind == DeviceKind::cuda ? "ARCH" : d.label();
  w.text(w.paint().bold(fmt::format("{:<6}", label)), device_heading(d), 6);
  if (d.cpu) {
    w.text("      ISA: ",
           d.cpu->features.empty() ? std::string("(none of note)") : join(d.cpu->features, " "),
           11);
  }
  if (d.kernels) {
    w.text("      kernels: ",
           d.kernels->covered
               ? d.kernels->via + " in this LibTorch build"
               : w.paint()("none in this LibTorch build", "1;31") + " (" + d.kernels->reason + ")",
           15);
  }
  w.line(fmt::format("  {:<13} {:<12} {:<12} {:>10} {:>10} {:>9}  {}", "mode", "hardware", "status",
                     "rel.error", "tolerance", "time", "note"));
  bool any_amp = false;
  for (const auto& [mode, p] : d.precisions) {
    if (is_amp_mode(mode)) {
      any_amp = true;
      continue;
    }
    const std::string rel = p.smoke.ran ? number_cell(p.smoke.rel_error, "{:.2e}") : "-";
    const std::string tol = p.smoke.ran ? fmt::format("{:.1e}", p.smoke.tolerance) : "-";
    const std::string ms = p.smoke.ran ? number_cell(p.smoke.ms, "{:.1f} ms") : "-";
    w.row(fmt::format("  {:<13} {:<12} ", mode_key(mode), to_string(p.hardware)) +
              w.paint().status(p.status, 12) + fmt::format(" {:>10} {:>10} {:>9}", rel, tol, ms),
          p.reason);
  }
  if (any_amp) print_amp(d, w);
  print_bench(d, w);
  print_soak(d, w);
  if (d.recommendation.dtype != DType::none) {
    w.text("  recommendation: ",
           fmt::format("{}{} ({})", w.paint().bold(std::string(to_string(d.recommendation.dtype))),
                       d.recommendation.loss_scaling ? " with dynamic loss scaling" : "",
                       d.recommendation.reason),
           4);
  }
  w.line("");
}

// "LibTorch 2.11.0+cu130 (CUDA 13.0, cuDNN 9.19.0, kernels: sm_80 sm_90; extras: sm_89) · loaded
// from /usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so" (where a worker loaded it; "read
// from the image's files: DIR" where none did)
std::string stack_line(const StackInfo& s, const std::string& what) {
  std::string line =
      fmt::format("{} {} ({}{}{}{})", what, s.libtorch_version,
                  s.cuda_built ? "CUDA " + version_or_empty(s.cuda_version)
                               : (s.rocm_version.empty() ? "CPU only" : "ROCm " + s.rocm_version),
                  s.cudnn_version.empty() ? "" : ", cuDNN " + s.cudnn_version,
                  s.arch_list.empty() ? "" : ", kernels: " + join(s.arch_list, " "),
                  s.arch_extras.empty() ? "" : "; extras: " + join(s.arch_extras, " "));
  if (!s.library.empty() && s.load_error.empty()) {
    line += " · loaded from " + s.library;
  } else if (s.source == "image files") {
    line += " · read from the image's files: " + s.location;
  }
  return line;
}

void print_header(const Report& r, Writer& w) {
  // The node, and the kernel's hostname where it is another (a Kubernetes pod's name).
  const std::string hostname =
      r.host.node() != r.host.hostname ? "hostname " + r.host.hostname + ", " : "";
  std::string first = w.paint().bold(fmt::format("{} {}", r.tool.name, r.tool.version)) + " on " +
                      r.host.node() + " (" + hostname +
                      (r.host.os.empty() ? r.host.machine : r.host.os) +
                      (r.host.container ? ", container" : "") + ")";
  if (r.run.command == Command::probe) first += fmt::format(" · {:.2f} s", r.duration_ms / 1000.0);
  w.text("", first, 4);
  if (r.stack.available) {
    w.text("", stack_line(r.stack, "LibTorch"), 4);
  } else {
    w.text("LibTorch: ", r.stack.error.empty() ? "unknown" : r.stack.error, 4);
  }
  // The image's own PyTorch, where it is not what the verdicts rest on.
  if (r.image_stack && r.image_stack->available && r.stack.source != "image files") {
    w.text("", stack_line(*r.image_stack, "this image's PyTorch"), 4);
  }
  if (r.run.command == Command::probe) {
    if (r.driver.status == DriverStatus::ok) {
      w.text("",
             fmt::format("driver {} (supports CUDA {}) · {}", r.driver.version,
                         r.driver.cuda_version ? r.driver.cuda_version->to_string() : "?",
                         r.driver.message),
             4);
    } else {
      w.text("driver: ", fmt::format("{} · {}", to_string(r.driver.status), r.driver.message), 4);
    }
  }
  w.line("");
}

void print_diagnostics(const Report& r, Writer& w) {
  if (r.diagnostics.empty()) return;
  w.line(w.paint().bold("diagnostics"));
  for (const Diagnostic& d : r.diagnostics) {
    const char* color = d.severity == Severity::error     ? "1;31"
                        : d.severity == Severity::warning ? "33"
                                                          : "36";
    w.text("  " + w.paint()(fmt::format("{:<8}", to_string(d.severity)), color),
           d.code + ": " + d.message, 10);
    if (!d.hint.empty()) w.text("           fix: ", d.hint, 16);
  }
  w.line("");
}

void print_requirements(const Report& r, Writer& w) {
  if (r.requirements.empty()) return;
  w.line(w.paint().bold("requirements"));
  for (const RequirementResult& q : r.requirements) {
    w.text(
        fmt::format("  {:<13} on {:<7} ", mode_key(q.mode), q.device.empty() ? "none" : q.device) +
            w.paint()(q.met ? "met    " : "NOT MET", q.met ? "32" : "1;31") + " ",
        fmt::format("({}){}", to_string(q.status), q.reason.empty() ? "" : ": " + q.reason), 4);
  }
  w.line("");
}

class TextPrinter final : public Printer {
 public:
  explicit TextPrinter(PrintStyle style) : style_(style) {}

 private:
  void do_print(const Report& r, std::ostream& out) const override {
    if (!has_findings(r)) return;  // usage errors go to stderr as one line
    Writer w(out, style_);
    print_header(r, w);
    for (const DeviceReport& d : r.devices) print_device(d, w);
    if (r.collectives) print_collectives(*r.collectives, w);
    print_diagnostics(r, w);
    print_requirements(r, w);
    if (r.run.command == Command::probe || !r.requirements.empty()) {
      w.text(w.paint().bold(fmt::format("exit {}", r.exit_code)) + ": ", r.exit_reason, 4);
    }
  }

  PrintStyle style_;
};

}  // namespace

std::unique_ptr<Printer> make_text_printer(PrintStyle style) {
  return std::make_unique<TextPrinter>(style);
}

}  // namespace precision_probe
