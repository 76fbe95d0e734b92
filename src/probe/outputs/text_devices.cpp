// The devices' part of the text report. Identical GPUs (the same model and the same verdicts)
// share one table, which shows each mode's largest relative error and longest time of the group;
// each reason is said once, after the first table whose modes it explains; a device reported but
// not gated, beside gated ones, gets a summary of its verdicts.

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

#include "strings/strings.hpp"
#include "probe/outputs/text_writer.hpp"

namespace precision_probe::text {

namespace {

// The mode column is 13 wide ({:<13} below): the longest key, fp8_blockwise.
constexpr std::size_t longest_mode_key() {
  std::size_t n = 0;
  for (const ModeInfo& info : kModeTable) n = info.key.size() > n ? info.key.size() : n;
  return n;
}
static_assert(longest_mode_key() <= 13, "a mode key is wider than the text report's column");

using Group = std::vector<const DeviceReport*>;

// --- Which devices share a table: those whose tables would say the same but for the figures ---

void key_precision(std::string& k, Mode mode, const PrecisionResult& p) {
  auto out = std::back_inserter(k);
  fmt::format_to(out, "\x1f{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", mode_key(mode), to_string(p.hardware),
                 p.hardware_reason, to_string(p.status), p.reason, to_string(p.failure),
                 p.smoke.ran, p.smoke.ok, p.smoke.tolerance, p.smoke.error);
  if (p.amp) {
    const AmpOutcome& a = *p.amp;
    fmt::format_to(out, "|amp {}|{}|{}|{}|{}|{}|{}|{}|{}", a.ran, a.ok, a.steps, a.loss_tolerance,
                   a.skipped_steps, a.final_scale.value_or(-1.0), a.peak_bytes.value_or(-1),
                   a.fp32_peak_bytes.value_or(-1), a.error);
  }
  if (p.bench) {
    const BenchResult& b = *p.bench;
    fmt::format_to(out, "|bench {}|{}|{}|{}|{}|{}|{}", b.outcome.ran, b.outcome.ok, b.outcome.error,
                   b.outcome.size, b.outcome.note, b.peak_tflops.value_or(-1.0), b.peak_source);
  }
}

void key_soak(std::string& k, const SoakReport& s) {
  auto out = std::back_inserter(k);
  fmt::format_to(out, "\x1esoak {}|{}|{}|{}|{}|{}", s.seconds, s.injected, s.injection_note,
                 s.golden_disagreement, s.straggler, s.telemetry.has_value());
  for (const auto& [mode, o] : s.modes) {
    fmt::format_to(out, "|{} {} {} {} {} {}", mode_key(mode), o.ran, o.ok, o.mismatches, o.size,
                   o.error);
  }
}

// Everything a GPU's table shows but its measured figures and the facts of the GPU itself (its
// PCI bus id, its free memory): the same model, the same verdicts, statuses and reasons per mode,
// the same kernels, soak findings and recommendation.
std::string table_key(const DeviceReport& d) {
  std::string k = fmt::format("{}|{}|{}", to_string(d.kind), d.name, d.selected);
  auto out = std::back_inserter(k);
  if (d.gpu) {
    const GpuInfo& g = *d.gpu;
    fmt::format_to(out, "|{}|{}|{}|{}", g.cc ? g.cc->to_string() : "", g.sm_count.value_or(-1),
                   g.memory_total.value_or(0), g.mig_instance);
  }
  if (d.kernels) {
    fmt::format_to(out, "|{}|{}|{}|{}", d.kernels->covered, d.kernels->via, d.kernels->reason,
                   d.kernels->ptx);
  }
  for (const auto& [mode, p] : d.precisions) key_precision(k, mode, p);
  if (d.soak) key_soak(k, *d.soak);
  fmt::format_to(out, "\x1drecommendation {}|{}|{}", to_string(d.recommendation.dtype),
                 d.recommendation.loss_scaling, d.recommendation.reason);
  return k;
}

// The devices in tables, in the report's order: visible GPUs with the same key share one.
std::vector<Group> group_devices(const std::vector<DeviceReport>& devices) {
  std::vector<std::pair<std::string, Group>> groups;
  for (const DeviceReport& d : devices) {
    std::string key = table_key(d);
    const bool joins = d.kind == DeviceKind::cuda && d.index >= 0;
    auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return joins && g.first == key && g.second.front()->index >= 0;
    });
    if (same == groups.end()) {
      groups.emplace_back(std::move(key), Group{&d});
    } else {
      same->second.push_back(&d);
    }
  }
  std::vector<Group> out;
  out.reserve(groups.size());
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  return out;
}

// "GPU 0", "GPU 0-7", "CPU", "ARCH" (`arch`'s device).
std::string group_label(const Group& g) {
  const DeviceReport& d = *g.front();
  if (d.index < 0 && d.kind == DeviceKind::cuda) return "ARCH";
  return device_labels(g);
}

// --- The heading --------------------------------------------------------------------------------

std::string bytes_gib(std::uint64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

// "141.0 GiB (139.6 GiB free)", with the free memory's range where the GPUs differ ("(120.5-139.6
// GiB free)").
std::string memory_part(const Group& g) {
  const GpuInfo& first = *g.front()->gpu;
  if (!first.memory_total) return "";
  std::uint64_t low = UINT64_MAX;
  std::uint64_t high = 0;
  for (const DeviceReport* d : g) {
    if (!d->gpu->memory_free) return bytes_gib(*first.memory_total);
    low = std::min(low, *d->gpu->memory_free);
    high = std::max(high, *d->gpu->memory_free);
  }
  const std::string from = bytes_gib(low);
  const std::string to = bytes_gib(high);
  return from == to ? fmt::format("{} ({} free)", bytes_gib(*first.memory_total), from)
                    : fmt::format("{} ({}-{} free)", bytes_gib(*first.memory_total),
                                  from.substr(0, from.find(' ')), to);
}

// "0000:{17,18,19,1a}:00.0": what the ids share written once, their own parts (between ':' and
// '.') in braces; the ids joined where they share no such part.
std::string brace_list(const std::vector<std::string>& ids) {
  const std::string& first = ids.front();
  std::size_t prefix = first.size();
  std::size_t suffix = first.size();
  for (const std::string& id : ids) {
    std::size_t p = 0;
    while (p < prefix && p < id.size() && id[p] == first[p]) ++p;
    prefix = p;
    std::size_t s = 0;
    while (s < suffix && s < id.size() && id[id.size() - 1 - s] == first[first.size() - 1 - s]) ++s;
    suffix = s;
  }
  const std::size_t cut = std::string_view(first).substr(0, prefix).find_last_of(":.");
  prefix = cut == std::string::npos ? 0 : cut + 1;
  const std::size_t tail = first.find_first_of(":.", first.size() - suffix);
  suffix = tail == std::string::npos || tail < prefix ? 0 : first.size() - tail;
  std::vector<std::string> own;
  for (const std::string& id : ids) {
    if (id.size() <= prefix + suffix || (prefix == 0 && suffix == 0)) return join(ids, ", ");
    own.push_back(id.substr(prefix, id.size() - prefix - suffix));
  }
  return first.substr(0, prefix) + "{" + join(own, ",") + "}" + first.substr(first.size() - suffix);
}

std::string pci_part(const Group& g) {
  std::vector<std::string> ids;
  for (const DeviceReport* d : g) {
    if (!d->gpu->pci_bus_id.empty()) ids.push_back(d->gpu->pci_bus_id);
  }
  if (ids.empty()) return "";
  return ids.size() == 1 ? ids.front() : brace_list(ids);
}

// "NVIDIA H200 ×8 · cc 9.0 Hopper · 132 SMs · 141.0 GiB (139.6 GiB free) · 0000:{17,18}:00.0 ·
// kernels sm_90 · selected": the facts the group shares, and those of each GPU (PCI bus ids, free
// memory) briefly.
std::string group_heading(const Group& g) {
  const DeviceReport& d = *g.front();
  std::vector<std::string> parts;
  if (d.gpu) {
    const GpuInfo& gpu = *d.gpu;
    if (gpu.cc) {
      parts.push_back(fmt::format("cc {} {}", gpu.cc->to_string(), architecture_name(*gpu.cc)));
    }
    if (gpu.sm_count) parts.push_back(fmt::format("{} SMs", *gpu.sm_count));
    if (std::string memory = memory_part(g); !memory.empty()) parts.push_back(std::move(memory));
    if (gpu.mig_instance) parts.emplace_back("MIG instance");
    if (std::string pci = pci_part(g); !pci.empty()) parts.push_back(std::move(pci));
  }
  if (d.kernels && d.kernels->covered) parts.push_back("kernels " + d.kernels->via);
  if (d.cpu) {
    parts.push_back(d.cpu->architecture);
    parts.push_back(fmt::format("{} threads", d.cpu->logical_cores));
  }
  if (d.index >= 0 || d.kind == DeviceKind::cpu) {
    parts.emplace_back(d.selected ? "selected" : "reported, not gated");
  }
  std::string out = g.size() > 1 ? fmt::format("{} ×{}", d.name, g.size()) : d.name;
  for (const std::string& p : parts) out += " · " + p;
  return out;
}

void print_heading(const Group& g, Writer& w) {
  const DeviceReport& d = *g.front();
  w.text(w.paint().bold(fmt::format("{:<6}", group_label(g) + " ")), group_heading(g), 6);
  if (d.cpu) {
    w.text("      ISA: ",
           d.cpu->features.empty() ? std::string("(none of note)") : join(d.cpu->features, " "),
           11);
  }
  if (d.kernels && !d.kernels->covered) {
    w.text("      kernels: ",
           w.paint()("none in this LibTorch build", "1;31") + " (" + d.kernels->reason + ")", 15);
  }
}

// --- The precisions' table ------------------------------------------------------------------

// A matmul mode the hardware lacks and that ran nowhere: no row, it is said with its reason.
bool folded(Mode mode, const PrecisionResult& p) {
  return !is_amp_mode(mode) && p.hardware == Hardware::unsupported && !p.smoke.ran && !p.bench;
}

// The largest value of a mode over the group (a NaN the largest of all); none where none has one.
template <class Get>
std::optional<double> largest(const Group& g, Mode mode, Get get) {
  std::optional<double> out;
  for (const DeviceReport* d : g) {
    const PrecisionResult* p = d->find(mode);
    if (p == nullptr) continue;
    const std::optional<double> v = get(*p);
    if (v && (!out || std::isnan(*v) || *v > *out)) out = v;
  }
  return out;
}

// "0.2 ms", "4.54 s": a time that fits the column.
std::string time_cell(const std::optional<double>& ms) {
  if (!ms) return "-";
  return *ms < 1000.0 ? fmt::format("{:.1f} ms", *ms) : fmt::format("{:.2f} s", *ms / 1000.0);
}

// A row's figures: a matmul's relative error against float64, a training run's final loss's
// relative distance from an fp32 run's, each with its tolerance, and the time it took; in a
// group, the largest error and the longest time of its devices.
std::array<std::string, 3> row_figures(const Group& g, Mode mode, const PrecisionResult& p) {
  if (is_amp_mode(mode)) {
    if (!p.amp || !p.amp->ran) return {"-", "-", "-"};
    const auto diff = largest(g, mode, [](const PrecisionResult& q) {
      return q.amp ? q.amp->loss_rel_diff : std::optional<double>();
    });
    const auto ms = largest(g, mode, [](const PrecisionResult& q) {
      return q.amp ? q.amp->ms : std::optional<double>();
    });
    return {number_cell(diff, "{:.2e}"), fmt::format("{:.1e}", p.amp->loss_tolerance),
            time_cell(ms)};
  }
  if (!p.smoke.ran) return {"-", "-", "-"};
  const auto rel = largest(g, mode, [](const PrecisionResult& q) { return q.smoke.rel_error; });
  const auto ms = largest(g, mode, [](const PrecisionResult& q) { return q.smoke.ms; });
  return {number_cell(rel, "{:.2e}"), fmt::format("{:.1e}", p.smoke.tolerance), time_cell(ms)};
}

// One row per mode that is not folded, the training runs' last; returns how many.
std::size_t print_rows(const Group& g, Writer& w) {
  const bool many = g.size() > 1;
  w.line(fmt::format("  {:<13} {:<12} {:<12} {:>10} {:>10} {:>9}", "mode", "hardware", "status",
                     many ? "max error" : "rel.error", "tolerance", many ? "max time" : "time"));
  std::size_t rows = 0;
  for (const auto& [mode, p] : g.front()->precisions) {
    if (folded(mode, p)) continue;
    ++rows;
    const auto [error, tolerance, time] = row_figures(g, mode, p);
    w.line(fmt::format("  {:<13} {:<12} ", mode_key(mode), to_string(p.hardware)) +
           w.paint().status(p.status, 12) +
           fmt::format(" {:>10} {:>10} {:>9}", error, tolerance, time));
  }
  return rows;
}

// --- Reasons, each said once ------------------------------------------------------------------

// A reason and the modes of a table it explains. Folded modes have no row to give their status:
// their entries carry it.
struct ReasonEntry {
  std::string reason;
  std::string status;
  std::vector<std::string> modes;
};

std::vector<ReasonEntry> reasons_of(const DeviceReport& d) {
  std::vector<ReasonEntry> rows;
  std::vector<ReasonEntry> folds;
  for (const auto& [mode, p] : d.precisions) {
    if (p.reason.empty()) continue;
    const bool fold = folded(mode, p);
    const std::string status = fold ? std::string(to_string(p.status)) : "";
    std::vector<ReasonEntry>& list = fold ? folds : rows;
    const std::string& reason = p.reason;
    auto same = std::find_if(list.begin(), list.end(), [&](const ReasonEntry& e) {
      return e.reason == reason && e.status == status;
    });
    if (same == list.end()) {
      list.push_back({p.reason, status, {std::string(mode_key(mode))}});
    } else {
      same->modes.emplace_back(mode_key(mode));
    }
  }
  rows.insert(rows.end(), folds.begin(), folds.end());
  return rows;
}

// "  fp16, amp_fp16: no AVX512-FP16 ...", "  unsupported mxfp8, nvfp4: cc 9.0: ...", or where the
// report said the reason before, where it did.
void print_reasons(const std::vector<ReasonEntry>& entries, std::size_t rows,
                   const std::string& label, Writer& w, SaidReasons& said) {
  for (const ReasonEntry& e : entries) {
    std::string modes = e.status.empty() && rows > 1 && e.modes.size() == rows
                            ? std::string("every mode above")
                            : join(e.modes, ", ");
    if (!e.status.empty()) modes.insert(0, e.status + " ");
    const auto before = said.find(e.reason);
    if (before == said.end()) {
      said.emplace(e.reason, label);
      w.text("  ", modes + ": " + e.reason, 6);
    } else {
      w.text("  ", modes + ": as for " + before->second + " above", 6);
    }
  }
}

// The recommendation's reason without the reasons said above, which it may quote in parentheses.
std::string without_reasons(std::string text, const std::vector<ReasonEntry>& entries) {
  for (const ReasonEntry& e : entries) {
    const std::string quoted = " (" + e.reason + ")";
    for (std::size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted)) {
      text.erase(at, quoted.size());
    }
  }
  return text;
}

// --- --bench ----------------------------------------------------------------------------------

// The benchmark of the group's slowest device in a mode (the first's where none has a figure).
const BenchResult* slowest_bench(const Group& g, Mode mode) {
  const BenchResult* out = nullptr;
  for (const DeviceReport* d : g) {
    const PrecisionResult* p = d->find(mode);
    if (p == nullptr || !p->bench) continue;
    const auto& t = p->bench->outcome.tflops;
    if (out == nullptr || (t && (!out->outcome.tflops || *t < *out->outcome.tflops))) {
      out = &*p->bench;
    }
  }
  return out;
}

// In a group, how far apart its devices' throughputs are: the modes more than 5 % apart, with
// the slowest and the fastest device.
std::string bench_spread(const Group& g) {
  std::vector<std::string> apart;
  for (const auto& [mode, p] : g.front()->precisions) {
    const DeviceReport* slow = nullptr;
    const DeviceReport* fast = nullptr;
    for (const DeviceReport* d : g) {
      const PrecisionResult* q = d->find(mode);
      if (q == nullptr || !q->bench || !q->bench->outcome.tflops) continue;
      const double t = *q->bench->outcome.tflops;
      if (slow == nullptr || t < *slow->find(mode)->bench->outcome.tflops) slow = d;
      if (fast == nullptr || t > *fast->find(mode)->bench->outcome.tflops) fast = d;
    }
    if (slow == nullptr) continue;
    const double low = *slow->find(mode)->bench->outcome.tflops;
    const double high = *fast->find(mode)->bench->outcome.tflops;
    if (low > 0.0 && high > low * 1.05) {
      apart.push_back(fmt::format("{} {:.4g} ({}) to {:.4g} ({})", mode_key(mode), low,
                                  slow->label(), high, fast->label()));
    }
  }
  const std::string each = fmt::format("each row the slowest of the {} GPUs", g.size());
  return apart.empty() ? each + "; the others within 5 % of it"
                       : each + "; more than 5 % apart: " + join(apart, ", ");
}

// --bench: one row per measured precision, then where the peaks come from. CPUs in GFLOP/s,
// where TFLOP/s would print 0.00; int8 counts integer operations (TOPS), as its datasheet peak
// does. 80 columns: a row's note goes beneath it.
void print_bench(const Group& g, Writer& w) {
  const DeviceReport& d = *g.front();
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
    const BenchResult* found = slowest_bench(g, mode);
    if (found == nullptr) continue;
    const BenchResult& b = *found;
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
  if (g.size() > 1) w.text("  ", bench_spread(g), 4);
  if (!sources.empty()) w.text("  peaks: ", join(sources, "; "), 4);
}

// --- --soak -----------------------------------------------------------------------------------

std::string soak_first(const SoakOutcome& o) {
  if (!o.first_mismatch) return "-";
  return fmt::format("#{} at {:.1f}s", o.first_mismatch->iteration, o.first_mismatch->seconds);
}

// One soak row; in a group, with the GPU's index (each GPU soaks on its own: its figures are
// its own).
void print_soak_row(const DeviceReport& d, Mode mode, const SoakOutcome& o, bool many, Writer& w) {
  const double scale = d.kind == DeviceKind::cpu ? 1000.0 : 1.0;
  const std::string mismatches = o.ran ? std::to_string(o.mismatches) : "-";
  const std::string results = o.ran ? std::to_string(o.iterations) : "-";
  const std::string rest =
      fmt::format(" {:>10} {:>14} {:>9} {:>7}", mismatches, soak_first(o),
                  number_cell(o.tflops, "{:.4g}", scale), number_cell(o.seconds, "{:.1f}"));
  w.row(many ? fmt::format("  {:<13} {:>3} {:>9}", mode_key(mode), d.index, results) + rest
             : fmt::format("  {:<13} {:>10}", mode_key(mode), results) + rest,
        o.error);
}

// --soak: one row per mode soaked (per GPU and mode in a group), then what comparing the devices
// found.
void print_soak(const Group& g, Writer& w) {
  const DeviceReport& d = *g.front();
  if (!d.soak) return;
  const bool many = g.size() > 1;
  const char* unit = d.kind == DeviceKind::cpu ? "GFLOP/s" : "TFLOP/s";
  w.line(many ? fmt::format("  {:<13} {:>3} {:>9} {:>10} {:>14} {:>9} {:>7}  {}", "soak", "GPU",
                            "results", "mismatches", "first mismatch", unit, "hot s", "note")
              : fmt::format("  {:<13} {:>10} {:>10} {:>14} {:>9} {:>7}  {}", "soak", "results",
                            "mismatches", "first mismatch", unit, "hot s", "note"));
  if (d.soak->injected) {
    w.text("  ", "a fault was injected (PRECISION_PROBE_INJECT_FAULT): the detector's own test", 4);
  }
  bool all_identical = true;
  for (const DeviceReport* member : g) {
    for (const auto& [mode, o] : member->soak->modes) {
      print_soak_row(*member, mode, o, many, w);
      all_identical = all_identical && o.ran && o.ok && o.error.empty();
    }
  }
  if (all_identical && !d.soak->modes.empty()) {
    w.line("  every result bit-identical to its mode's golden result");
  }
  for (const DeviceReport* member : g) {
    if (!member->soak->telemetry) continue;
    w.text(many ? "  telemetry " + member->label() + ": " : std::string("  telemetry: "),
           telemetry_summary(*member->soak->telemetry), 4);
  }
  if (!d.soak->golden_disagreement.empty()) w.text("  golden: ", d.soak->golden_disagreement, 4);
  if (!d.soak->straggler.empty()) w.text("  straggler: ", d.soak->straggler, 4);
}

// --- A device's table, or its summary ---------------------------------------------------------

void print_table(const Group& g, Writer& w, SaidReasons& said) {
  const DeviceReport& d = *g.front();
  print_heading(g, w);
  const std::size_t rows = print_rows(g, w);
  const std::vector<ReasonEntry> reasons = reasons_of(d);
  print_reasons(reasons, rows, group_label(g), w, said);
  print_bench(g, w);
  print_soak(g, w);
  if (d.recommendation.dtype != DType::none) {
    w.text("  recommendation: ",
           fmt::format("{}{} ({})", w.paint().bold(std::string(to_string(d.recommendation.dtype))),
                       d.recommendation.loss_scaling ? " with dynamic loss scaling" : "",
                       without_reasons(d.recommendation.reason, reasons)),
           4);
  }
  w.line("");
}

// A device reported beside gated ones and not gated itself, in a line or two: its modes by status
// (those the hardware lacks counted), its recommendation. The figures and reasons are in the JSON
// report, and in its table where it is gated.
void print_summary(const Group& g, Writer& w) {
  const DeviceReport& d = *g.front();
  struct Modes {
    Status status;
    std::vector<std::string> keys;
    bool all_folded = true;
  };
  std::vector<Modes> by_status;
  for (const auto& [mode, p] : d.precisions) {
    const Status status = p.status;
    auto same = std::find_if(by_status.begin(), by_status.end(),
                             [status](const Modes& m) { return m.status == status; });
    if (same == by_status.end()) same = by_status.insert(by_status.end(), Modes{status, {}});
    same->keys.emplace_back(mode_key(mode));
    same->all_folded = same->all_folded && folded(mode, p);
  }
  std::sort(by_status.begin(), by_status.end(),
            [](const Modes& a, const Modes& b) { return a.status < b.status; });
  std::vector<std::string> parts;
  parts.reserve(by_status.size() + 1);
  for (const Modes& m : by_status) {
    parts.push_back(m.all_folded && m.keys.size() > 1
                        ? fmt::format("{} {}", m.keys.size(), to_string(m.status))
                        : fmt::format("{} {}", to_string(m.status), join(m.keys, ", ")));
  }
  if (d.recommendation.dtype != DType::none) {
    parts.push_back(fmt::format("recommendation {}{}", to_string(d.recommendation.dtype),
                                d.recommendation.loss_scaling ? " with loss scaling" : ""));
  }
  w.text(w.paint().bold(fmt::format("{:<6}", group_label(g) + " ")),
         group_heading(g) + ": " + join(parts, " · "), 6);
  w.line("");
}

}  // namespace

std::string Paint::status(Status s, int width) const {
  std::string padded = fmt::format("{:<{}}", to_string(s), width);
  switch (s) {
    case Status::native: return (*this)(padded, "32");
    case Status::emulated: return (*this)(padded, "33");
    case Status::failed: return (*this)(padded, "1;31");
    case Status::cannot_run:
    case Status::refused: return (*this)(padded, "35");
    case Status::unsupported:
    case Status::out_of_time:
    case Status::interrupted:
    case Status::not_tested: return (*this)(padded, "2");
  }
  return padded;
}

void print_devices(const Report& r, Writer& w, SaidReasons& said) {
  const bool any_gated = std::any_of(r.devices.begin(), r.devices.end(),
                                     [](const DeviceReport& d) { return d.selected; });
  for (const Group& g : group_devices(r.devices)) {
    if (any_gated && !g.front()->selected) {
      print_summary(g, w);
    } else {
      print_table(g, w, said);
    }
  }
}

}  // namespace precision_probe::text
