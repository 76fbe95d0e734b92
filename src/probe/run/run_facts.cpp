#include "probe/run/run_facts.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "wire/engine_settings.hpp"
#include "wire/injection.hpp"
#include "trace/trace.hpp"

namespace precision_probe {

RunStamp stamp_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  const long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  RunStamp s;
  s.started_at = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900,
                             utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, ms);
  s.report_id = fmt::format("{:016x}{:016x}", random_u64(), random_u64());
  s.random_seed = random_u64() & ((std::uint64_t{1} << 48U) - 1);  // exact in every JSON reader
  return s;
}

StartFacts read_start_facts(const System& system, const Engine& engine,
                            const FindTorch& find_torch) {
  StartFacts f;
  f.stamp = stamp_now();
  f.machine = read_machine(system);
  trace("probe start");
  f.inject_fault = system.getenv("PRECISION_PROBE_INJECT_FAULT");
  if (f.inject_fault && f.inject_fault->empty()) f.inject_fault.reset();  // empty is unset
  f.inject_hang = system.getenv(std::string(kInjectHangVariable));
  if (f.inject_hang && f.inject_hang->empty()) f.inject_hang.reset();
  f.gpu_copies = system.getenv("PRECISION_PROBE_BENCH_GPU_COPIES");
  if (f.gpu_copies && f.gpu_copies->empty()) f.gpu_copies.reset();
  f.skip_cpu = system.getenv("PRECISION_PROBE_BENCH_SKIP_CPU");
  if (f.skip_cpu && f.skip_cpu->empty()) f.skip_cpu.reset();
  for (const EngineSetting& setting : kEngineSettings) {
    std::optional<std::string> value = system.getenv(std::string(setting.variable));
    if (value && !value->empty()) f.engine_settings[std::string(setting.variable)] = *value;
  }
  f.image = find_torch(system);
  trace("image stack read");
  f.engine_installed = engine.installed();
  if (!f.engine_installed) f.engine_missing = engine.not_installed_reason();
  return f;
}

namespace {

bool nvml_answered(const NvmlSnapshot& nvml) {
  return nvml.fault == QueryFault::none && nvml.loaded && nvml.init_result == 0;
}

std::vector<unsigned int> listed_pids(const NvmlSnapshot& nvml) {
  std::vector<unsigned int> pids;
  for (const NvmlDevice& d : nvml.devices) {
    for (const GpuProcess& p : d.processes) pids.push_back(p.pid);
  }
  return pids;
}

// A driver that hung or crashed lists no GPU: the device nodes say how many there are, so that
// the report shows each as not tested rather than none at all.
void add_unanswered_gpus(GpuFacts& facts, const MachineFacts& machine,
                         const VisibleDevicesSpec& visible) {
  if (!driver_faulted(facts.driver) || !facts.gpus.empty()) return;
  const int count = visible_gpu_nodes(machine.nodes, visible);
  for (int i = 0; i < count; ++i) {
    GpuInfo g;
    g.index = i;
    g.name = fmt::format("GPU behind /dev/{}", machine.nodes.gpus[static_cast<std::size_t>(i)]);
    g.source = "device node";
    facts.gpus.push_back(g);
  }
}

// The bench's copies of GPU 0 (PRECISION_PROBE_BENCH_GPU_COPIES): GPU 0 alone, `copies` times, the
// copies numbered from 0 like GPUs; no peers.
void copy_gpu_zero(GpuFacts& facts, int copies) {
  if (copies <= 1 || facts.gpus.empty()) return;
  const GpuInfo first = facts.gpus.front();
  facts.gpus.clear();
  facts.peers.clear();
  for (int i = 0; i < copies; ++i) {
    facts.gpus.push_back(first);
    facts.gpus.back().index = i;
  }
}

// Names the processes NVML lists, where /proc shows them, and leaves out the probe's own workers.
void name_gpu_processes(std::vector<GpuInfo>& gpus,
                        const std::map<unsigned int, ProcessSeen>& seen) {
  for (GpuInfo& g : gpus) {
    std::vector<GpuProcess> kept;
    for (GpuProcess p : g.processes) {
      const auto it = seen.find(p.pid);
      if (it != seen.end() && it->second.ours) continue;
      if (it != seen.end()) p.name = it->second.name;
      kept.push_back(p);
    }
    g.processes = std::move(kept);
  }
}

GpuFacts merged(const DriverAnswers& a, const MachineFacts& machine,
                const VisibleDevicesSpec& visible) {
  return merge_gpu_facts(a.nvml, a.cuda, visible, machine.driver_version_text);
}

}  // namespace

VisibleDevicesSpec visible_devices(const MachineFacts& machine) {
  return parse_cuda_visible_devices(machine.cuda_visible_devices);
}

int visible_gpu_nodes(const DeviceNodes& nodes, const VisibleDevicesSpec& visible) {
  std::size_t count = nodes.gpus.size();
  if (visible.set) count = std::min(count, visible.entries.size());
  return static_cast<int>(count);
}

DriverAnswers ask_driver(const Options& options, DriverApi& driver, const System& system,
                         const MachineFacts& machine) {
  DriverAnswers a;
  a.nvml = driver.query_nvml();
  trace("NVML answered");
  a.processes = read_processes(system, listed_pids(a.nvml));
  if (a.nvml.fault != QueryFault::none) {
    // A driver that hangs or crashes in NVML is not asked again through CUDA: the GPUs its
    // device nodes show are reported, not tested.
    return a;
  }
  const VisibleDevicesSpec visible = visible_devices(machine);
  if (!nvml_answered(a.nvml) || !merged(a, machine, visible).order_is_reliable) {
    a.cuda = driver.query_cuda();
  } else if (!options.quick) {
    a.cuda_alongside = true;
  }
  return a;
}

GpuFacts gpus_to_plan(const DriverAnswers& answers, const MachineFacts& machine) {
  const VisibleDevicesSpec visible = visible_devices(machine);
  GpuFacts facts = merged(answers, machine, visible);
  if (answers.nvml.fault != QueryFault::none) add_unanswered_gpus(facts, machine, visible);
  copy_gpu_zero(facts, answers.gpu_copies);
  return facts;
}

GpuFacts gpus_to_report(const DriverAnswers& answers, const MachineFacts& machine) {
  const VisibleDevicesSpec visible = visible_devices(machine);
  GpuFacts facts = merged(answers, machine, visible);
  add_unanswered_gpus(facts, machine, visible);
  name_gpu_processes(facts.gpus, answers.processes);
  copy_gpu_zero(facts, answers.gpu_copies);
  return facts;
}

}  // namespace precision_probe
