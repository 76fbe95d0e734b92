#include "probe/run/plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "arch/arch.hpp"
#include "wire/engine_settings.hpp"
#include "wire/injection.hpp"
#include "strings/strings.hpp"
#include "probe/facts/cpu.hpp"
#include "probe/run/soak_plan.hpp"

namespace precision_probe {

namespace {

constexpr const char* kTorchNotLookedFor = "PRECISION_PROBE_TORCH=none";

// The modes worth running a kernel for: everything the hardware does not rule out.
template <typename Modes, typename SupportFn>
std::vector<Mode> runnable_modes(const Modes& candidates, SupportFn support) {
  std::vector<Mode> modes;
  for (Mode m : candidates) {
    const HardwareVerdict verdict = support(m);
    if (verdict.hardware != Hardware::unsupported && verdict.stack_lacks.empty()) {
      modes.push_back(m);
    }
  }
  return modes;
}

// Why the engine cannot load the image's LibTorch at all ("" when it can try).
std::string libtorch_blocker(const StackInfo& stack) {
  if (!stack.available) {
    return "no PyTorch or LibTorch was found for the engine to load (PRECISION_PROBE_TORCH, the "
           "torch package of PRECISION_PROBE_PYTHON's Python and of the python3 on PATH, a "
           "LibTorch on LD_LIBRARY_PATH), so no kernel ran";
  }
  const std::optional<Version> release = Version::parse(stack.libtorch_version);
  if (release && *release < kEngineFloor) {
    return fmt::format(
        "this image's PyTorch {} is older than {}, the oldest release whose stable C ABI the "
        "engine uses, so no kernel ran (--quick answers for it from its files)",
        stack.libtorch_version, kEngineFloor.to_string());
  }
  return "";
}

StackAtStart stack_at_start(const Options& o, const StartFacts& facts) {
  StackAtStart s;
  s.stack = stack_or_none(facts.image, facts.machine.torch_not_looked_for);
  if (o.quick) {
    // No kernel runs: what the stack's files say against GPUs is all.
    s.gpu_blocker = cuda_blocker(s.stack);
    return s;
  }
  s.kernel_blocker = libtorch_blocker(s.stack);
  if (s.kernel_blocker.empty() && !facts.engine_installed) s.kernel_blocker = facts.engine_missing;
  if (s.kernel_blocker.empty()) s.libtorch_dir = s.stack.location + "/lib";
  s.gpu_blocker = s.kernel_blocker.empty() ? cuda_blocker(s.stack) : s.kernel_blocker;
  return s;
}

// PRECISION_PROBE_INJECT_FAULT, read only with --soak (a malformed one is a usage error).
Expected<std::optional<FaultInjection>> fault_to_inject(const Options& options,
                                                        const std::optional<std::string>& spec) {
  if (!spec || options.soak_s <= 0.0) return std::optional<FaultInjection>{};
  Expected<FaultInjection> parsed = parse_fault_injection(*spec);
  if (!parsed) return Unexpected{parsed.error()};
  return std::optional<FaultInjection>{*parsed};
}

// The CPU's checks. With `bench_later`, its benchmark is left for a run of its own.
WorkerPlan plan_cpu(const Options& options, const CpuInfo& cpu, std::uint64_t seed,
                    bool bench_later, const std::optional<FaultInjection>& inject) {
  auto support = [&cpu](Mode m) { return cpu_hardware_support(cpu, m); };
  WorkerPlan p;
  p.kind = DeviceKind::cpu;
  p.smoke = runnable_modes(matmul_modes(), support);
  if (options.amp) p.amp = runnable_modes(training_modes(), support);
  p.seed = seed;
  if (options.bench && !bench_later) p.bench_size = options.bench_size.value_or(1024);
  if (options.devices.cpu) plan_soak(p, options, support, inject, seed);
  return p;
}

// The CPU's benchmark in a run of its own: the checks' plan, benchmarking only.
WorkerPlan plan_cpu_bench(const Options& options, const WorkerPlan& cpu) {
  WorkerPlan p = cpu;
  p.amp.clear();
  p.soak_seconds = 0.0;  // the CPU soaks in its first run
  p.soak_modes.clear();
  p.inject_iteration = 0;
  p.bench_size = options.bench_size.value_or(1024);
  return p;
}

WorkerPlan plan_gpu(const Options& options, const GpuInfo& gpu, const StartPlan& start) {
  // What the image's stack lacks (its release, its CUDA) is not asked of the engine.
  auto support = [&gpu, &start](Mode m) { return gpu_support(*gpu.cc, m, start.stack.stack); };
  WorkerPlan p;
  p.kind = DeviceKind::cuda;
  p.index = gpu.index;
  p.cuda_visible_devices = !gpu.uuid.empty() ? gpu.uuid : std::to_string(gpu.index);
  p.ordinals = {gpu.index};
  if (start.gpu_copies > 1) {  // a copy of GPU 0, in a context of its own but the first
    p.ordinals = {0};
    p.own_context = gpu.index > 0;
  }
  p.smoke = runnable_modes(matmul_modes(), support);
  if (options.amp) p.amp = runnable_modes(training_modes(), support);
  p.seed = start.seed + static_cast<std::uint64_t>(gpu.index) + 1;
  if (options.bench) p.bench_size = options.bench_size.value_or(8192);
  plan_soak(p, options, support, start.inject, start.seed, gpu.memory_total);
  return p;
}

std::string unavailable_selection(const Options& options, const GpuFacts& facts) {
  if (!facts.gpus.empty() || options.devices.gpu_indices.empty()) return "";
  return fmt::format("--device {}: no GPU is visible ({})", options.devices.gpu_indices.front(),
                     facts.driver.message);
}

// The GPUs the collective spans: every selected one the driver knows.
std::vector<int> collective_gpus(const Options& options, const GpuFacts& facts) {
  std::vector<int> gpus;
  for (const GpuInfo& gpu : facts.gpus) {
    if (gpu_selected(options, gpu.index) && gpu.cc) gpus.push_back(gpu.index);
  }
  return gpus;
}

std::optional<WorkerPlan> plan_collective(const Options& options, const GpuFacts& facts,
                                          const std::vector<int>& gpus, std::uint64_t seed) {
  if (!options.nccl || options.quick || gpus.empty()) return std::nullopt;
  WorkerPlan p;
  p.kind = DeviceKind::cuda;
  p.collective_ranks = static_cast<int>(gpus.size());
  std::vector<std::string> ids;
  for (int index : gpus) {
    const GpuInfo& g = facts.gpus[static_cast<std::size_t>(index)];
    ids.push_back(!g.uuid.empty() ? g.uuid : std::to_string(index));
  }
  p.cuda_visible_devices = join(ids, ",");
  p.ordinals = gpus;
  p.seed = seed;
  return p;
}

}  // namespace

StackInfo stack_or_none(const std::optional<StackInfo>& image, bool torch_not_looked_for) {
  if (image && image->available) return *image;
  StackInfo s;
  s.source = "none";
  if (torch_not_looked_for) {
    s.found_by = kTorchNotLookedFor;
    s.error = "not looked for (PRECISION_PROBE_TORCH=none)";
  } else if (image && !image->error.empty()) {
    s.error = image->error;  // found but not read: a file refused, a reading out of time
  } else {
    s.error = "no PyTorch or LibTorch found";
  }
  return s;
}

std::string cuda_blocker(const StackInfo& stack) {
  if (stack.available && !stack.cuda_built && stack.cuda_version) {
    // A CUDA build without its CUDA library: a partial install, or ./dev's cache of the CPU one.
    return fmt::format(
        "this LibTorch ({}) is a CUDA {} build, but its libtorch_cuda.so is not in {}/lib: no GPU "
        "kernel can run; use a complete install (pip install torch) or the image you train with",
        stack.libtorch_version, stack.cuda_version->to_string(), stack.location);
  }
  if (stack.available && !stack.cuda_built) {
    return fmt::format(
        "this LibTorch ({}) was built without CUDA: no GPU kernel can run; use a CUDA build of "
        "PyTorch or LibTorch",
        stack.libtorch_version);
  }
  return "";
}

bool not_looked_for(const StackInfo& stack) { return stack.found_by == kTorchNotLookedFor; }

std::string bad_torch_dir(const std::optional<StackInfo>& image) {
  const bool bad =
      image && !image->available &&
      (image->found_by == "PRECISION_PROBE_TORCH" || image->found_by == "PRECISION_PROBE_PYTHON");
  return bad ? image->error : "";
}

namespace {

// The bench's switches as set: a value that is not one is the error ("" when none is).
std::string bad_bench_switch(const Options& options, const StartFacts& facts) {
  if (facts.gpu_copies) {
    const std::optional<std::int64_t> n = parse_int(*facts.gpu_copies);
    if (!n || *n < 1 || *n > 64) {
      return "PRECISION_PROBE_BENCH_GPU_COPIES='" + printable(*facts.gpu_copies, 20) +
             "' is not a count of copies of GPU 0 from 1 to 64";
    }
  }
  if (facts.skip_cpu && *facts.skip_cpu != "1") {
    return "PRECISION_PROBE_BENCH_SKIP_CPU='" + printable(*facts.skip_cpu, 20) +
           "' is not 1 (the bench's switch that leaves the CPU's checks out)";
  }
  if (facts.skip_cpu && options.devices.cpu) {
    return "PRECISION_PROBE_BENCH_SKIP_CPU leaves out the CPU's checks, but --device selects the "
           "CPU: unset it, or select GPUs only";
  }
  return "";
}

// The engine's settings as set: the first whose value the engine does not take ("" when none).
std::string bad_engine_settings(const StartFacts& facts) {
  for (const EngineSetting& setting : kEngineSettings) {
    const auto set = facts.engine_settings.find(std::string(setting.variable));
    if (set == facts.engine_settings.end()) continue;
    if (std::string bad = bad_engine_setting(setting, set->second); !bad.empty()) return bad;
  }
  return "";
}

}  // namespace

Expected<StartPlan> plan_start(const Options& options, const StartFacts& facts) {
  const Expected<std::optional<FaultInjection>> inject =
      fault_to_inject(options, facts.inject_fault);
  if (!inject) return Unexpected{inject.error()};
  if (const std::string bad = bad_torch_dir(facts.image); !bad.empty()) return Unexpected{bad};
  if (const std::string bad = bad_bench_switch(options, facts); !bad.empty()) {
    return Unexpected{bad};
  }
  if (const std::string bad = bad_engine_settings(facts); !bad.empty()) return Unexpected{bad};
  // The engine reads PRECISION_PROBE_INJECT_HANG itself: a value it could not read is refused here.
  if (facts.inject_hang) {
    if (Expected<HangInjection> hang = parse_hang_injection(*facts.inject_hang); !hang) {
      return Unexpected{hang.error()};
    }
  }
  StartPlan s;
  s.seed = options.seed.value_or(facts.stamp.random_seed);
  if (facts.gpu_copies) s.gpu_copies = static_cast<int>(*parse_int(*facts.gpu_copies));
  s.inject = *inject;
  s.stack = stack_at_start(options, facts);
  if (s.stack.gpu_blocker.empty()) {
    s.expected_gpus =
        expected_gpu_workers(facts.machine.nodes, visible_devices(facts.machine), options.devices);
  }
  if (options.quick || !s.stack.kernel_blocker.empty()) return s;
  // The GPUs' session (the CPU's plan joins it) starts loading LibTorch before the driver is asked;
  // without the CPU's plan, a CPU session is not started ahead for nothing.
  s.prestart = Prestart{!facts.skip_cpu, s.expected_gpus};
  if (facts.skip_cpu) {
    s.cpu_left_out = "not run: PRECISION_PROBE_BENCH_SKIP_CPU (a bench switch)";
    return s;
  }
  const bool bench_later = s.expected_gpus > 0;
  s.cpu = plan_cpu(options, facts.machine.cpu, s.seed, bench_later, s.inject);
  if (options.bench && bench_later) s.cpu_bench = plan_cpu_bench(options, *s.cpu);
  return s;
}

GpuPlan plan_gpus(const Options& options, const GpuFacts& facts, const StartPlan& start) {
  GpuPlan g;
  for (const GpuInfo& gpu : facts.gpus) {
    if (options.quick || !gpu_selected(options, gpu.index) || !gpu.cc ||
        !start.stack.gpu_blocker.empty()) {
      continue;
    }
    g.gpus.push_back(plan_gpu(options, gpu, start));
  }
  g.collective_on = collective_gpus(options, facts);
  g.collective = plan_collective(options, facts, g.collective_on, start.seed);
  g.collective_alone = options.bench;  // the collective measures bandwidth: alone with --bench
  g.telemetry = std::any_of(g.gpus.begin(), g.gpus.end(),
                            [](const WorkerPlan& p) { return p.soak_seconds > 0.0; });
  g.unavailable_selection = unavailable_selection(options, facts);
  return g;
}

Expected<void> check_selection(const Options& options, const GpuFacts& facts) {
  if (facts.gpus.empty()) return {};
  for (int index : options.devices.gpu_indices) {
    if (index >= static_cast<int>(facts.gpus.size())) {
      return Unexpected{fmt::format("--device: GPU {} does not exist ({} visible: 0-{})", index,
                                    facts.gpus.size(), facts.gpus.size() - 1)};
    }
  }
  return {};
}

bool gpu_selected(const Options& options, int index) {
  if (options.devices.all_gpus) return true;
  return std::find(options.devices.gpu_indices.begin(), options.devices.gpu_indices.end(), index) !=
         options.devices.gpu_indices.end();
}

int expected_gpu_workers(const DeviceNodes& nodes, const VisibleDevicesSpec& visible,
                         const DeviceSelection& selection) {
  std::size_t guess = static_cast<std::size_t>(visible_gpu_nodes(nodes, visible));
  if (!selection.all_gpus) guess = std::min(guess, selection.gpu_indices.size());
  return static_cast<int>(guess);
}

}  // namespace precision_probe
