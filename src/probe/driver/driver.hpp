#pragma once
// The NVIDIA driver, queried without LibTorch: NVML (fast, no CUDA context) and the CUDA driver
// API (authoritative for what CUDA_VISIBLE_DEVICES leaves visible). Both libraries are loaded at
// run time, never linked, so the probe starts where no driver is present.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "precision_probe/expected.hpp"
#include "precision_probe/report.hpp"
#include "wire/cuda_snapshot.hpp"

namespace precision_probe {

class System;

// --- What the two driver libraries report, as raw snapshots -----------------------------------

struct NvmlDevice {
  std::string name;
  std::string uuid;        // "GPU-..."
  std::string pci_bus_id;  // "0000:17:00.0"
  std::optional<ComputeCapability> cc;
  std::optional<std::uint64_t> memory_total, memory_free, memory_used;
  std::optional<bool> mig_enabled;      // nullopt: the GPU has no MIG
  std::optional<int> compute_mode;      // 0 default, 2 prohibited, 3 exclusive process
  std::optional<double> max_clock_ghz;  // maximum SM clock
  std::vector<GpuProcess> processes;    // compute processes holding its memory
};

struct NvmlSnapshot {
  QueryFault fault = QueryFault::none;
  std::string fault_message;            // what happened to the query, when it faulted
  bool loaded = false;                  // libnvidia-ml could be opened
  std::string load_error;               // dlerror() text
  int init_result = -1;                 // nvmlInit_v2's return (0 success)
  std::string init_error;               // nvmlErrorString
  std::string driver_version;           // "580.159.04"
  std::optional<Version> cuda_version;  // 13.0 (NVML's 13000)
  std::vector<NvmlDevice> devices;      // every GPU of the machine, in NVML (PCI) order
};

// The driver behind a small interface: the real one loads the libraries, tests use a fake.
struct TelemetrySample;

// Telemetry being recorded (telemetry.hpp): stop() ends it and returns the samples.
class TelemetryRecording {
 public:
  virtual ~TelemetryRecording() = default;
  virtual std::vector<TelemetrySample> stop() = 0;
};

class DriverApi {
 public:
  virtual ~DriverApi() = default;
  virtual NvmlSnapshot query_nvml() = 0;
  virtual CudaSnapshot query_cuda() = 0;
  // cuInit asked late in a run, `left` of its time still to go: the query's limit is the shorter
  // of its own and that (the contained driver's; the others take no time to speak of).
  virtual CudaSnapshot query_cuda_within(std::chrono::milliseconds /*left*/) {
    return query_cuda();
  }
  // NVML sampled every second until stop() (the soak's telemetry); where it is not offered or
  // cannot start, why.
  virtual Expected<std::unique_ptr<TelemetryRecording>> record_telemetry() {
    return Unexpected{"NVML telemetry is not offered here"};
  }
};

// The real driver, called in this process. Library names come from PRECISION_PROBE_LIBNVML /
// PRECISION_PROBE_LIBCUDA when set (a test hook, documented in docs/diagnostics.md), else
// libnvidia-ml.so.1 / libcuda.so.1. Only the driver agent (driver_agent.hpp) calls it.
std::unique_ptr<DriverApi> make_system_driver(const System& system);
// The NVML library the probe loads: PRECISION_PROBE_LIBNVML, else libnvidia-ml.so.1.
std::string nvml_library(const System& system);

// NVML's snapshot as the driver agent sends it (one JSON document), and read back, or why the text
// is not one (one line). CUDA's is the wire's (wire/cuda_snapshot.hpp): an engine session sends
// it too.
std::string encode_nvml_snapshot(const NvmlSnapshot& snapshot);
Expected<NvmlSnapshot> decode_nvml_snapshot(std::string_view text);

// --- The merged view the report uses -----------------------------------------------------------

// CUDA_VISIBLE_DEVICES as CUDA reads it: entries up to the first invalid one.
struct VisibleDevicesSpec {
  bool set = false;                  // the variable exists
  std::vector<std::string> entries;  // kept entries: "0", "GPU-8f3a...", "MIG-..."
  std::string invalid_entry;         // the first entry CUDA would stop at, if any
  bool repeated = false;             // invalid_entry repeats an earlier entry
  std::string raw;
};
VisibleDevicesSpec parse_cuda_visible_devices(const std::optional<std::string>& value);

struct GpuFacts {
  DriverInfo driver;
  std::vector<GpuInfo> gpus;      // visible GPUs, indexed as the user sees them
  std::vector<PeerLink> peers;    // between visible GPUs (needs cuInit)
  bool order_is_reliable = true;  // false when only NVML answered and CUDA could order them
                                  // differently (MIG, mixed models): ask CUDA before trusting
                                  // explicit indices
};

// Whether a driver query hung or crashed (DriverStatus hung or crashed).
bool driver_faulted(const DriverInfo& driver);

// Merges the snapshots. Without a CUDA snapshot, CUDA_VISIBLE_DEVICES is applied to NVML's list.
GpuFacts merge_gpu_facts(const NvmlSnapshot& nvml, const std::optional<CudaSnapshot>& cuda,
                         const VisibleDevicesSpec& visible,
                         const std::optional<std::string>& proc_driver_version_text);

}  // namespace precision_probe
