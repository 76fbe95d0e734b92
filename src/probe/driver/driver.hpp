#pragma once
// The NVIDIA driver, queried without LibTorch: NVML (fast, no CUDA context) and the CUDA driver
// API (authoritative for what CUDA_VISIBLE_DEVICES leaves visible). Both libraries are loaded at
// run time, never linked, so the probe starts where no driver is present.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch.hpp"
#include "precision_probe/expected.hpp"
#include "precision_probe/report.hpp"

namespace precision_probe {

class System;

// --- What the two driver libraries report, as raw snapshots -----------------------------------

// A driver query runs in a process of its own (driver_agent.hpp): whether it answered.
enum class QueryFault {
  none,
  hung,         // no answer within the deadline (a GPU fallen off the bus: Xid 79)
  crashed,      // the query process died (a driver library that segfaults), or answered garbage
  out_of_time,  // no answer within a limit too short to prove a hang (the run's --timeout,
                // or a --check-timeout below what the driver may take to start its GPUs):
                // slow or hung, not known which
};
std::string_view to_string(QueryFault fault);

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

struct CudaDevice {
  std::string name;
  std::string uuid;  // "GPU-..." or "MIG-..."
  std::string pci_bus_id;
  std::optional<ComputeCapability> cc;
  std::optional<int> sm_count;
  std::optional<std::uint64_t> memory_total;
  std::optional<int> compute_mode;
  std::optional<double> clock_ghz;  // maximum SM clock (CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
};

struct CudaSnapshot {
  QueryFault fault = QueryFault::none;
  std::string fault_message;
  bool loaded = false;  // libcuda could be opened
  std::string library;  // the path that was loaded
  std::string load_error;
  int init_result = -1;  // cuInit's CUresult (0 success, 100 no device, 35 insufficient driver)
  std::string init_error_name;                 // "CUDA_ERROR_NO_DEVICE"
  std::string init_error_string;               // "no CUDA-capable device is detected"
  std::optional<Version> driver_cuda_version;  // cuDriverGetVersion's 13000: 13.0
  std::vector<CudaDevice> devices;             // the visible devices, in CUDA's order
  std::vector<PeerLink> peers;                 // every ordered pair of visible devices
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

// The snapshots as the driver agent sends them (one JSON document each).
std::string encode_nvml_snapshot(const NvmlSnapshot& snapshot);
std::string encode_cuda_snapshot(const CudaSnapshot& snapshot);
// The snapshots read back, or why the text is not one (one line).
Expected<NvmlSnapshot> decode_nvml_snapshot(std::string_view text);
Expected<CudaSnapshot> decode_cuda_snapshot(std::string_view text);

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
