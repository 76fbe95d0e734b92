#include "probe/verdicts/soak.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "strings/strings.hpp"
#include "probe/verdicts/verdict.hpp"

namespace precision_probe {

bool FaultInjection::applies_to(DeviceKind kind, int index) const {
  if (device.empty()) return true;
  return kind == DeviceKind::cpu ? device == "cpu" : device == std::to_string(index);
}

bool FaultInjection::applies_to(const DeviceReport& d) const { return applies_to(d.kind, d.index); }

Expected<FaultInjection> parse_fault_injection(std::string_view text) {
  const std::vector<std::string> parts = split(text, ':');
  const std::string usage =
      fmt::format("{}='{}' is not MODE:ITERATION[:DEVICE] (e.g. bf16:100:0 or fp32:5:cpu)",
                  kInjectFaultVariable, printable(text, 60));
  if (parts.size() < 2 || parts.size() > 3) return Unexpected{usage};
  FaultInjection f;
  const auto mode = parse_mode(to_lower(trim(parts[0])));
  if (!mode || is_amp_mode(*mode))
    return Unexpected{usage + ": no matmul mode '" + printable(parts[0], 20) + "'"};
  f.mode = *mode;
  const auto iteration = parse_int(trim(parts[1]));
  if (!iteration || *iteration < 1) return Unexpected{usage + ": the iteration counts from 1"};
  f.iteration = *iteration;
  if (parts.size() == 3) {
    f.device = to_lower(trim(parts[2]));
    const auto index = parse_int(f.device);
    if (f.device != "cpu" && (!index || *index < 0 || *index > 1023)) {
      return Unexpected{usage + ": DEVICE is a visible GPU index or cpu"};
    }
    if (index) f.device = std::to_string(*index);
  }
  return f;
}

namespace {

// A soak result fails its mode: a mismatch always; an error other than not running or the
// machine's want of memory.
void apply_to_precisions(DeviceReport& d) {
  for (const auto& [mode, o] : d.soak->modes) {
    PrecisionResult* p = d.find(mode);
    if (p == nullptr) continue;
    const bool broke = o.error_kind != ErrorKind::none && o.error_kind != ErrorKind::not_run &&
                       o.error_kind != ErrorKind::unavailable;
    if (o.mismatches == 0 && !broke) continue;
    p->failure = o.mismatches > 0 ? ErrorKind::wrong_result : o.error_kind;
    p->status = status_of_broken_check(p->failure);
    p->reason = "soak: " + o.error;
  }
}

// GPUs that should compute the same bits: one model, compute capability and SM count.
std::string likeness(const DeviceReport& d) {
  return fmt::format("{}|{}|{}", d.name, d.gpu && d.gpu->cc ? d.gpu->cc->to_string() : "?",
                     d.gpu ? d.gpu->sm_count.value_or(0) : 0);
}

std::map<std::string, std::vector<DeviceReport*>> like_groups(Report& report) {
  std::map<std::string, std::vector<DeviceReport*>> groups;
  for (DeviceReport& d : report.devices) {
    if (d.kind == DeviceKind::cuda && d.soak && d.gpu) groups[likeness(d)].push_back(&d);
  }
  return groups;
}

std::string labels(const std::vector<DeviceReport*>& devices) {
  std::vector<std::string> names;
  names.reserve(devices.size());
  for (const DeviceReport* d : devices) names.push_back(d->label());
  return join(names, ", ");
}

void append(std::string& text, const std::string& more) {
  text += text.empty() ? more : "; " + more;
}

void fail_mode(DeviceReport& d, Mode mode, const std::string& why) {
  if (PrecisionResult* p = d.find(mode)) {
    p->status = Status::failed;
    p->failure = ErrorKind::wrong_result;
    p->reason = why;
  }
}

// Which of two suspects also failed on its own: its float64 check or its own golden.
std::string also_failed(const DeviceReport& d, Mode mode) {
  const PrecisionResult* p = d.find(mode);
  const SoakOutcome* o = d.soak->modes.find(mode);
  if (o != nullptr && o->mismatches > 0) return d.label() + " also differed from its own golden";
  if (p != nullptr && p->smoke.ran && !p->smoke.ok) {
    return d.label() + " also failed its float64 check";
  }
  return "";
}

void compare_goldens(std::vector<DeviceReport*>& group, Mode mode) {
  std::map<std::string, std::vector<DeviceReport*>> by_checksum;
  for (DeviceReport* d : group) {
    const SoakOutcome* o = d->soak->modes.find(mode);
    if (o != nullptr && o->ran && !o->golden_checksum.empty()) {
      by_checksum[fmt::format("{}/{}", o->size, o->golden_checksum)].push_back(d);
    }
  }
  if (by_checksum.size() < 2) return;
  const auto majority = std::max_element(
      by_checksum.begin(), by_checksum.end(),
      [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  std::size_t compared = 0;
  for (const auto& [sum, devices] : by_checksum) compared += devices.size();
  const bool clear = 2 * majority->second.size() > compared;
  for (auto& [sum, devices] : by_checksum) {
    if (clear && sum == majority->first) continue;
    for (DeviceReport* d : devices) {
      std::string why =
          clear ? fmt::format(
                      "{}: its golden result differs from that of {} like GPUs ({}): it "
                      "computes wrong numbers",
                      mode_key(mode), majority->second.size(), labels(majority->second))
                : fmt::format(
                      "{}: the golden results of the like GPUs differ ({} checksums among "
                      "{}): one of them computes wrong numbers, each is a suspect",
                      mode_key(mode), by_checksum.size(), labels(group));
      if (std::string own = also_failed(*d, mode); !clear && !own.empty()) why += " (" + own + ")";
      append(d->soak->golden_disagreement, why);
      fail_mode(*d, mode, "soak: " + why);
    }
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// More than 10 % below the median of the like GPUs (with two: below the other).
constexpr double kStragglerShare = 0.9;

void find_stragglers(std::vector<DeviceReport*>& group, Mode mode) {
  std::vector<std::pair<DeviceReport*, double>> figures;
  for (DeviceReport* d : group) {
    const SoakOutcome* o = d->soak->modes.find(mode);
    if (o != nullptr && o->tflops && *o->tflops > 0.0) figures.emplace_back(d, *o->tflops);
  }
  if (figures.size() < 2) return;
  for (const auto& [d, tflops] : figures) {
    std::vector<double> others;
    for (const auto& [other, t] : figures) {
      if (other != d) others.push_back(t);
    }
    const double reference = figures.size() == 2 ? others[0] : median(others);
    if (tflops >= kStragglerShare * reference) continue;
    append(d->soak->straggler,
           fmt::format("{}: {:.4g} TFLOP/s under load, {:.0f} % below the {} {:.4g} of the like "
                       "GPUs",
                       mode_key(mode), tflops, 100.0 * (1.0 - tflops / reference),
                       figures.size() == 2 ? "other's" : "median", reference));
  }
}

}  // namespace

void judge_soak(Report& report) {
  for (DeviceReport& d : report.devices) {
    if (d.soak) apply_to_precisions(d);
  }
  for (auto& [key, group] : like_groups(report)) {
    if (group.size() < 2) continue;
    for (Mode mode : matmul_modes()) {
      compare_goldens(group, mode);
      find_stragglers(group, mode);
    }
  }
}

std::string soak_corruption(const Report& report) {
  for (const DeviceReport& d : report.devices) {
    if (!d.soak || !d.selected) continue;
    for (const auto& [mode, o] : d.soak->modes) {
      if (o.mismatches > 0) return fmt::format("{} {}: {}", d.label(), mode_key(mode), o.error);
    }
    if (!d.soak->golden_disagreement.empty()) {
      return d.label() + ": " + d.soak->golden_disagreement;
    }
  }
  return "";
}

}  // namespace precision_probe
