#pragma once
// The run's first phase: everything it reads from the machine, once (docs/architecture.md, "From
// argv to the exit code"). What the start needs is read before any worker starts; the driver is
// asked once the CPU's checks have begun (cuInit, where it is not needed to plan, alongside the
// workers: execute.hpp asks it there). The plans, the assembly and the diagnostics take these
// facts as plain data.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "precision_probe/report.hpp"
#include "probe/cli/options.hpp"
#include "probe/driver/driver.hpp"
#include "probe/facts/machine.hpp"
#include "probe/run/engine_client.hpp"

namespace precision_probe {

// When the run started and which it is: the report's header, and the seed where --seed does not
// give one.
struct RunStamp {
  std::string started_at;  // RFC 3339 in UTC, milliseconds
  std::string report_id;   // 32 random hex digits
  std::uint64_t random_seed = 0;
};
RunStamp stamp_now();

// What the start of a run knows: the machine, the image's PyTorch, the engine.
struct StartFacts {
  RunStamp stamp;
  MachineFacts machine;
  std::optional<StackInfo> image;           // the image's PyTorch, read from its files
  std::optional<std::string> inject_fault;  // PRECISION_PROBE_INJECT_FAULT as set
  std::optional<std::string> inject_hang;   // PRECISION_PROBE_INJECT_HANG as set
  std::optional<std::string> gpu_copies;    // PRECISION_PROBE_BENCH_GPU_COPIES as set
  std::optional<std::string> skip_cpu;      // PRECISION_PROBE_BENCH_SKIP_CPU as set
  // The engine's settings (wire/engine_settings.hpp) set to a value, by variable.
  std::map<std::string, std::string> engine_settings;
  bool engine_installed = false;
  std::string engine_missing;  // why there is no engine (engine_installed false)
};

using FindTorch = std::function<std::optional<StackInfo>(const System&)>;

StartFacts read_start_facts(const System& system, const Engine& engine,
                            const FindTorch& find_torch);

// CUDA_VISIBLE_DEVICES as CUDA reads it.
VisibleDevicesSpec visible_devices(const MachineFacts& machine);
// The GPUs' device nodes that CUDA_VISIBLE_DEVICES leaves in view: how many GPUs there are, as far
// as /dev can tell.
int visible_gpu_nodes(const DeviceNodes& nodes, const VisibleDevicesSpec& visible);

// What the driver answered: NVML first; cuInit now where planning needs it (no NVML, or an order
// of devices NVML cannot vouch for), else alongside the workers (`cuda_alongside`: from the
// engine's GPU session, or the driver's agent: execute.hpp), or not at all under --quick.
struct DriverAnswers {
  NvmlSnapshot nvml;
  std::optional<CudaSnapshot> cuda;
  bool cuda_alongside = false;
  std::map<unsigned int, ProcessSeen> processes;  // the processes NVML lists, as /proc shows them
  // PRECISION_PROBE_BENCH_GPU_COPIES, a bench switch: GPU 0 planned and reported as this many GPUs
  // (each copy's checks in a context of their own), so that the cost of N devices is measured on
  // one GPU.
  int gpu_copies = 1;
};

DriverAnswers ask_driver(const Options& options, DriverApi& driver, const System& system,
                         const MachineFacts& machine);

// The GPUs as the driver's answers show them: to plan from (before cuInit's answer alongside
// joins), and to report (every answer in, the GPUs of a driver that did not answer listed from
// their device nodes, the processes named).
GpuFacts gpus_to_plan(const DriverAnswers& answers, const MachineFacts& machine);
GpuFacts gpus_to_report(const DriverAnswers& answers, const MachineFacts& machine);

}  // namespace precision_probe
