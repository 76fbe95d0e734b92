#pragma once
// NVML telemetry while the soak runs (docs/soak.md): the driver agent samples every GPU every
// second and prints a line per sample; the probe reads them from a child it can kill at any time,
// so a driver that hangs costs samples, never the run. Each GPU's samples become its soak's
// telemetry summary.

#include <atomic>
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "threads/threads.hpp"
#include "precision_probe/expected.hpp"
#include "precision_probe/report.hpp"
#include "probe/driver/driver.hpp"
#include "process/process.hpp"

namespace precision_probe {

// One GPU in one sample; a value NVML did not give is absent.
struct GpuSample {
  std::string uuid;
  std::optional<int> temperature_c;
  std::optional<int> sm_mhz;
  std::optional<double> power_w;
  std::optional<std::uint64_t> clock_reasons;                  // nvmlClocksEventReason* bits
  std::optional<std::int64_t> ecc_corrected, ecc_uncorrected;  // volatile totals
  std::optional<std::int64_t> remapped_rows;                   // correctable + uncorrectable
  std::optional<bool> remap_failure;
  std::optional<std::int64_t> retired_pages;
};

// An Xid (the driver's error event) delivered for a GPU.
struct XidEvent {
  std::string uuid;
  int xid = 0;
};

struct TelemetrySample {
  double boot_s = 0.0;  // boot_clock_ms() / 1000: one clock for every process (trace/trace.hpp)
  std::vector<GpuSample> gpus;
  std::vector<XidEvent> xids;  // delivered since the last sample
};

std::string encode_sample(const TelemetrySample& sample);
std::optional<TelemetrySample> decode_sample(std::string_view line);

// The names of clock-event reasons that slow a GPU down ("sw_power_cap", "hw_slowdown", ...);
// idle, application clocks and sync boost are left out.
std::vector<std::string> clock_event_names(std::uint64_t reasons);

// A GPU's samples summed up: extremes, reasons seen, counters' growth, Xids.
SoakTelemetry summarise(const std::vector<TelemetrySample>& samples, const std::string& uuid);
// The temperature of the GPU at the sample nearest to `boot_s` (within 5 s).
std::optional<int> temperature_at(const std::vector<TelemetrySample>& samples,
                                  const std::string& uuid, double boot_s);

// The agent's side: samples NVML (`library`) every `period_s` until `emit` says stop.
// Returns the exit code.
int sample_nvml(const std::string& library, double period_s,
                const std::function<bool(const TelemetrySample&)>& emit);

// The probe's side: the agent as a child, its lines read in a thread until stop().
class TelemetryRecorder final : public TelemetryRecording {
 public:
  TelemetryRecorder() = default;
  TelemetryRecorder(const TelemetryRecorder&) = delete;
  TelemetryRecorder& operator=(const TelemetryRecorder&) = delete;
  ~TelemetryRecorder() override;
  // Starts `self_exe --driver-agent telemetry` and the thread that reads its lines; where either
  // cannot start, why (and nothing runs).
  Expected<void> start(const std::string& self_exe);
  // Ends the agent (killed: it may be stuck in the driver) and returns what it sampled.
  std::vector<TelemetrySample> stop() override;

 private:
  void read_lines();  // the reader's loop, until stop()

  ChildProcess child_;
  Threads reader_;
  std::atomic<bool> stopping_{false};
  std::vector<TelemetrySample> samples_;
  bool started_ = false;
};

}  // namespace precision_probe
