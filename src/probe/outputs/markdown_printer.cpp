// Markdown for CI job summaries ($GITHUB_STEP_SUMMARY, GitLab notes): the verdict first, one table
// of devices by precision, then requirements and diagnostics.

#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include "strings/strings.hpp"
#include "probe/outputs/printers.hpp"

namespace precision_probe {

namespace {

std::string cell_text(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string_view mark(Status s) {
  switch (s) {
    case Status::native: return "✅";
    case Status::emulated: return "⚠️";
    case Status::unsupported: return "➖";
    case Status::failed: return "❌";
    case Status::cannot_run:
    case Status::refused: return "🚫";
    case Status::out_of_time:
    case Status::interrupted: return "⏱️";
    case Status::not_tested: return "⏭️";
  }
  return "";
}

// --soak: a row per device and mode.
void soak_section(const Report& r, std::ostream& out) {
  bool any = false;
  for (const DeviceReport& d : r.devices) any = any || d.soak.has_value();
  if (!any) return;
  out << "\n### Soak\n\n| device | mode | results | mismatches | first mismatch | TFLOP/s | note "
         "|\n|---|---|---|---|---|---|---|\n";
  for (const DeviceReport& d : r.devices) {
    if (!d.soak) continue;
    for (const auto& [mode, o] : d.soak->modes) {
      const std::string first =
          o.first_mismatch
              ? fmt::format("#{} at {:.1f} s, {} element(s)", o.first_mismatch->iteration,
                            o.first_mismatch->seconds, o.first_mismatch->elements)
              : "-";
      out << fmt::format(
          "| {} | {} | {} | {} {} | {} | {} | {} |\n", d.label(), mode_key(mode),
          o.ran ? std::to_string(o.iterations) : "-", o.mismatches > 0 ? "❌" : (o.ran ? "✅" : ""),
          o.ran ? std::to_string(o.mismatches) : "-", first,
          o.tflops ? fmt::format("{:.4g}", *o.tflops) : "-",
          cell_text(o.error.empty() ? (o.injected ? "fault injected" : "") : o.error));
    }
  }
  std::string telemetry;
  for (const DeviceReport& d : r.devices) {
    if (d.soak && d.soak->telemetry) {
      telemetry +=
          fmt::format("- {}: {}\n", d.label(), cell_text(telemetry_summary(*d.soak->telemetry)));
    }
  }
  if (!telemetry.empty()) out << "\nTelemetry during the soak (NVML):\n\n" << telemetry;
}

// Why a mode is not native on a gated device, each reason once: with the modes it explains and
// the devices where it explains the same modes ("GPU 0-7 mxfp8, nvfp4, mxfp4").
void why_not_native(const Report& r, std::ostream& out) {
  struct Entry {
    Status status;
    std::string reason;
    std::vector<std::string> modes;
    std::vector<const DeviceReport*> devices;
  };
  std::vector<Entry> entries;
  for (const DeviceReport& d : r.devices) {
    if (!d.selected) continue;
    std::vector<Entry> own;  // this device's reasons, with their modes
    for (const auto& [mode, p] : d.precisions) {
      if (p.status == Status::native || p.reason.empty()) continue;
      const PrecisionResult& result = p;
      auto same = std::find_if(own.begin(), own.end(), [&result](const Entry& e) {
        return e.status == result.status && e.reason == result.reason;
      });
      if (same == own.end()) same = own.insert(own.end(), Entry{p.status, p.reason, {}, {}});
      same->modes.emplace_back(mode_key(mode));
    }
    for (Entry& e : own) {
      auto same = std::find_if(entries.begin(), entries.end(), [&](const Entry& x) {
        return x.status == e.status && x.reason == e.reason && x.modes == e.modes;
      });
      if (same == entries.end()) same = entries.insert(entries.end(), std::move(e));
      same->devices.push_back(&d);
    }
  }
  if (entries.empty()) return;
  out << "\n### Why not native\n\n";
  for (const Entry& e : entries) {
    out << fmt::format("- **{} {}** ({}): {}\n", device_labels(e.devices), join(e.modes, ", "),
                       to_string(e.status), cell_text(e.reason));
  }
}

class MarkdownPrinter final : public Printer {
  void do_print(const Report& r, std::ostream& out) const override {
    if (!has_findings(r)) {
      out << fmt::format("## precision-probe: ❌ {} error (exit {})\n\n", to_string(r.error->kind),
                         r.exit_code)
          << cell_text(r.error->message) << "\n";
      return;
    }
    out << fmt::format("## precision-probe: {} exit {}\n\n", r.exit_code == 0 ? "✅" : "❌",
                       r.exit_code);
    out << cell_text(r.exit_reason) << "\n\n";
    // An image whose stack is not known says so, as the text and JSON reports do.
    const std::string stack = !r.stack.available ? std::string("unknown")
                              : r.stack.cuda_built
                                  ? cell_text(r.stack.libtorch_version) + " (CUDA " +
                                        version_or_empty(r.stack.cuda_version) + ")"
                                  : cell_text(r.stack.libtorch_version) + " (CPU only)";
    out << fmt::format("`{}` · {} · LibTorch {} · driver {}\n\n", cell_text(r.host.node()),
                       cell_text(r.host.os), stack,
                       r.driver.status == DriverStatus::ok
                           ? r.driver.version
                           : std::string(to_string(r.driver.status)));
    out << "| device |";
    for (Mode m : all_modes()) out << ' ' << mode_key(m) << " |";
    out << " recommendation |\n|---|";
    for (std::size_t i = 0; i < all_modes().size(); ++i) out << "---|";
    out << "---|\n";
    for (const DeviceReport& d : r.devices) {
      std::string name = d.label() + " " + d.name;
      if (d.gpu && d.gpu->cc) name += " (cc " + d.gpu->cc->to_string() + ")";
      if (!d.selected) name += " · not gated";
      out << "| " << cell_text(name) << " |";
      for (Mode m : all_modes()) {
        const PrecisionResult* p = d.find(m);
        if (p == nullptr) {
          out << " |";
          continue;
        }
        out << ' ' << mark(p->status) << ' ' << to_string(p->status);
        if (p->bench && p->bench->outcome.tflops)
          out << fmt::format(" · {:.4g} TF/s", *p->bench->outcome.tflops);
        out << " |";
      }
      out << ' ' << to_string(d.recommendation.dtype)
          << (d.recommendation.loss_scaling ? " + loss scaling" : "") << " |\n";
    }
    if (!r.requirements.empty()) {
      out << "\n### Requirements\n\n| mode | device | met | status | reason "
             "|\n|---|---|---|---|---|\n";
      for (const RequirementResult& q : r.requirements) {
        out << fmt::format("| {} | {} | {} | {} | {} |\n", mode_key(q.mode),
                           cell_text(q.device.empty() ? "none" : q.device), q.met ? "✅" : "❌",
                           to_string(q.status), cell_text(q.reason));
      }
    }
    soak_section(r, out);
    why_not_native(r, out);
    if (!r.diagnostics.empty()) {
      out << "\n### Diagnostics\n\n";
      for (const Diagnostic& dg : r.diagnostics) {
        out << fmt::format("- **{}** `{}`: {}", to_string(dg.severity), dg.code,
                           cell_text(dg.message));
        if (!dg.hint.empty()) out << " — fix: " << cell_text(dg.hint);
        out << '\n';
      }
    }
    out << fmt::format("\n<sub>precision-probe {} · {:.2f} s · seed {}</sub>\n", r.tool.version,
                       r.duration_ms / 1000.0, r.run.seed);
  }
};

}  // namespace

std::unique_ptr<Printer> make_markdown_printer() { return std::make_unique<MarkdownPrinter>(); }

}  // namespace precision_probe
