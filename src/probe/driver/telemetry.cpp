#include "probe/driver/telemetry.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "probe/platform/system.hpp"
#include "report/json_fields.hpp"

namespace precision_probe {
namespace json_fields {

// A sample on the agent's line; what NVML did not answer is left out.
template <class V, class S>
std::enable_if_t<is<S, GpuSample>> fields(V& v, S& g) {
  v("uuid", g.uuid);
  v.omit_unless(g.temperature_c.has_value(), "temp_c", g.temperature_c);
  v.omit_unless(g.sm_mhz.has_value(), "sm_mhz", g.sm_mhz);
  v.omit_unless(g.power_w.has_value(), "power_w", g.power_w);
  v.omit_unless(g.clock_reasons.has_value(), "clock_reasons", g.clock_reasons);
  v.omit_unless(g.ecc_corrected.has_value(), "ecc_corrected", g.ecc_corrected);
  v.omit_unless(g.ecc_uncorrected.has_value(), "ecc_uncorrected", g.ecc_uncorrected);
  v.omit_unless(g.remapped_rows.has_value(), "remapped_rows", g.remapped_rows);
  v.omit_unless(g.remap_failure.has_value(), "remap_failure", g.remap_failure);
  v.omit_unless(g.retired_pages.has_value(), "retired_pages", g.retired_pages);
}

template <class V, class S>
std::enable_if_t<is<S, XidEvent>> fields(V& v, S& x) {
  v("uuid", x.uuid);
  v("xid", x.xid);
}

template <class V, class S>
std::enable_if_t<is<S, TelemetrySample>> fields(V& v, S& s) {
  v("t", s.boot_s);
  v("gpus", s.gpus);
  v("xids", s.xids);
}

}  // namespace json_fields

std::string encode_sample(const TelemetrySample& sample) {
  return json_fields::encode(sample).dump(-1, ' ', false,
                                          json_fields::json::error_handler_t::replace);
}

std::optional<TelemetrySample> decode_sample(std::string_view line) {
  json_fields::JsonDocument doc;
  if (!doc.parse(line) || !doc.root().is_object()) return std::nullopt;
  const auto t = doc.root().find("t");
  if (!t || !t->is_number()) return std::nullopt;
  TelemetrySample s;
  try {
    json_fields::decode(doc.root(), s, "", json_fields::ReadLimits{});
  } catch (const json_fields::FieldError&) {
    return std::nullopt;  // not what the agent writes: dropped, as a line cut short is
  }
  return s;
}

std::vector<std::string> clock_event_names(std::uint64_t reasons) {
  // nvmlClocksEventReason*: the ones that hold a loaded GPU below its clocks.
  constexpr std::array<std::pair<std::uint64_t, const char*>, 5> kSlowdowns = {{
      {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},
      {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"},
      {0x80, "hw_power_brake_slowdown"},
  }};
  std::vector<std::string> names;
  for (const auto& [bit, name] : kSlowdowns) {
    if ((reasons & bit) != 0) names.emplace_back(name);
  }
  return names;
}

namespace {

template <class T>
void keep_max(std::optional<T>& into, const std::optional<T>& v) {
  if (v && (!into || *v > *into)) into = v;
}
template <class T>
void keep_min(std::optional<T>& into, const std::optional<T>& v) {
  if (v && (!into || *v < *into)) into = v;
}

// Last minus first of a counter over the samples that have it.
std::optional<std::int64_t> growth(const std::vector<const GpuSample*>& gpu,
                                   std::optional<std::int64_t> GpuSample::*counter) {
  std::optional<std::int64_t> first;
  std::optional<std::int64_t> last;
  for (const GpuSample* g : gpu) {
    if (!(g->*counter)) continue;
    if (!first) first = g->*counter;
    last = g->*counter;
  }
  if (!first) return std::nullopt;
  return *last - *first;
}

}  // namespace

SoakTelemetry summarise(const std::vector<TelemetrySample>& samples, const std::string& uuid) {
  SoakTelemetry t;
  std::vector<const GpuSample*> gpu;
  std::uint64_t reasons = 0;
  for (const TelemetrySample& s : samples) {
    for (const GpuSample& g : s.gpus) {
      if (g.uuid != uuid) continue;
      gpu.push_back(&g);
      keep_max(t.max_temperature_c, g.temperature_c);
      keep_min(t.min_sm_mhz, g.sm_mhz);
      keep_max(t.max_sm_mhz, g.sm_mhz);
      keep_max(t.max_power_w, g.power_w);
      reasons |= g.clock_reasons.value_or(0);
      t.remap_failure = t.remap_failure || g.remap_failure.value_or(false);
    }
    for (const auto& [id, xid] : s.xids) {
      if (id == uuid) t.xids.push_back(xid);
    }
  }
  t.samples = static_cast<int>(gpu.size());
  t.clock_events = clock_event_names(reasons);
  t.ecc_corrected_delta = growth(gpu, &GpuSample::ecc_corrected);
  t.ecc_uncorrected_delta = growth(gpu, &GpuSample::ecc_uncorrected);
  t.remapped_rows_delta = growth(gpu, &GpuSample::remapped_rows);
  t.retired_pages_delta = growth(gpu, &GpuSample::retired_pages);
  if (gpu.empty()) t.note = "NVML gave no sample of this GPU";
  return t;
}

std::optional<int> temperature_at(const std::vector<TelemetrySample>& samples,
                                  const std::string& uuid, double boot_s) {
  constexpr double kWithin = 5.0;
  std::optional<int> best;
  double distance = kWithin;
  for (const TelemetrySample& s : samples) {
    for (const GpuSample& g : s.gpus) {
      if (g.uuid != uuid || !g.temperature_c) continue;
      const double d = std::fabs(s.boot_s - boot_s);
      if (d <= distance) {
        distance = d;
        best = g.temperature_c;
      }
    }
  }
  return best;
}

TelemetryRecorder::~TelemetryRecorder() { (void)stop(); }

Expected<void> TelemetryRecorder::start(const std::string& self_exe) {
  const std::vector<std::string> env =
      environment_with({"PRECISION_PROBE_PARENT=" + std::to_string(::getpid())});
  if (Expected<void> started = child_.start({self_exe, "--driver-agent", "telemetry"}, env, "");
      !started) {
    return started;
  }
  started_ = true;
  if (Expected<void> reading = reader_.start([this] { read_lines(); }); !reading) {
    (void)stop();
    return Unexpected{"its lines cannot be read: " + reading.error()};
  }
  return {};
}

void TelemetryRecorder::read_lines() {
  LineBuffer lines(std::size_t{1} << 20);  // a line longer than that is garbage, dropped
  const auto take = [&](std::string_view data) {
    lines.append(data);
    while (std::optional<std::string> line = lines.next()) {
      if (auto sample = decode_sample(*line)) samples_.push_back(std::move(*sample));
    }
  };
  // Its stderr is read too (and dropped), so that a chatty driver never blocks the agent.
  std::vector<Watched> watched = {{&child_, true, true}};
  while (!stopping_.load() && watched[0].out) {
    for (const ChildOutput& got : read_children(watched, std::chrono::milliseconds(200))) {
      take(got.out);
      if (got.exited && watched[0].out) {
        // The agent is gone: what it wrote before is read, whatever still holds its pipe.
        std::string rest;
        drain_available(child_.stdout_fd(), rest, std::size_t{1} << 20);
        take(rest);
        return;
      }
    }
  }
}

std::vector<TelemetrySample> TelemetryRecorder::stop() {
  if (!started_) return {};
  started_ = false;
  stopping_ = true;
  reader_.join();  // what it threw (an allocation) is dropped: the samples read so far count
  child_.kill_group();
  if (!child_.wait_for(std::chrono::milliseconds(500))) child_.release();
  return std::move(samples_);
}

}  // namespace precision_probe
