// The printer for each format; JSON is the report library's document as it is.

#include "probe/outputs/printers.hpp"

#include <array>
#include <ostream>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strings/strings.hpp"
#include "precision_probe/report_json.hpp"

namespace precision_probe {
namespace {

class JsonPrinter final : public Printer {
  void do_print(const Report& report, std::ostream& out) const override {
    out << report_to_json(report) << '\n';
  }
};

// "+N what", or nothing where NVML could not say.
void add_delta(std::vector<std::string>& parts, const std::optional<std::int64_t>& delta,
               const char* what) {
  if (delta) parts.push_back(fmt::format("{} +{}", what, *delta));
}

}  // namespace

std::string telemetry_summary(const SoakTelemetry& t) {
  std::vector<std::string> parts;
  parts.push_back(fmt::format("{} sample{}", t.samples, t.samples == 1 ? "" : "s"));
  if (t.max_temperature_c) parts.push_back(fmt::format("up to {} °C", *t.max_temperature_c));
  if (t.min_sm_mhz && t.max_sm_mhz) {
    parts.push_back(fmt::format("SM clock {}-{} MHz", *t.min_sm_mhz, *t.max_sm_mhz));
  }
  if (t.max_power_w) parts.push_back(fmt::format("up to {:.0f} W", *t.max_power_w));
  if (t.samples > 0) {
    parts.push_back(t.clock_events.empty() ? "no clock events"
                                           : "clock events: " + join(t.clock_events, ", "));
  }
  if (t.ecc_corrected_delta || t.ecc_uncorrected_delta) {
    parts.push_back(fmt::format("ECC errors +{} corrected, +{} uncorrectable",
                                t.ecc_corrected_delta.value_or(0),
                                t.ecc_uncorrected_delta.value_or(0)));
  }
  add_delta(parts, t.remapped_rows_delta, "remapped rows");
  add_delta(parts, t.retired_pages_delta, "retired pages");
  if (t.remap_failure) parts.emplace_back("a row-remapping failure");
  if (t.samples > 0) {
    std::vector<std::string> xids;
    xids.reserve(t.xids.size());
    for (int xid : t.xids) xids.push_back(std::to_string(xid));
    parts.push_back(xids.empty() ? "no Xid" : "Xid " + join(xids, ", "));
  }
  std::string line = join(parts, " · ");
  if (!t.note.empty()) line += " (" + t.note + ")";
  return line;
}

std::string device_labels(const std::vector<const DeviceReport*>& devices) {
  std::vector<int> gpus;
  std::vector<std::string> others;
  for (const DeviceReport* d : devices) {
    if (d->kind == DeviceKind::cuda && d->index >= 0) {
      gpus.push_back(d->index);
    } else {
      others.push_back(d->label());
    }
  }
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < gpus.size();) {
    std::size_t j = i;
    while (j + 1 < gpus.size() && gpus[j + 1] == gpus[j] + 1) ++j;
    if (j >= i + 2) {
      runs.push_back(fmt::format("{}-{}", gpus[i], gpus[j]));
    } else {
      for (std::size_t k = i; k <= j; ++k) runs.push_back(std::to_string(gpus[k]));
    }
    i = j + 1;
  }
  std::vector<std::string> parts;
  if (!runs.empty()) parts.push_back("GPU " + join(runs, ","));
  parts.insert(parts.end(), others.begin(), others.end());
  return join(parts, ", ");
}

// The formats' names, each format's own first; then the short names the command line takes too.
constexpr std::array<std::pair<Format, std::string_view>, 7> kFormatNames = {{
    {Format::text, "text"},
    {Format::json, "json"},
    {Format::markdown, "markdown"},
    {Format::prometheus, "prometheus"},
    {Format::nfd, "nfd"},
    {Format::markdown, "md"},
    {Format::prometheus, "prom"},
}};

std::string_view to_string(Format format) {
  for (const auto& [f, name] : kFormatNames) {
    if (f == format) return name;
  }
  return "text";
}

std::optional<Format> parse_format(std::string_view text) {
  const std::string lower = to_lower(text);  // JSON is json: a vocabulary's case is not its word
  for (const auto& [f, name] : kFormatNames) {
    if (name == lower) return f;
  }
  return std::nullopt;
}

std::unique_ptr<Printer> make_printer(Format format, PrintStyle style) {
  switch (format) {
    case Format::json: return std::make_unique<JsonPrinter>();
    case Format::markdown: return make_markdown_printer();
    case Format::prometheus: return make_prometheus_printer();
    case Format::nfd: return make_nfd_printer(style);
    case Format::text: return make_text_printer(style);
  }
  return make_text_printer(style);
}

}  // namespace precision_probe
