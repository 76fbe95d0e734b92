#include "engine/plan_runner.hpp"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "engine/host/cpus.hpp"
#include "wire/injection.hpp"
#include "wire/protocol.hpp"
#include "threads/threads.hpp"
#include "trace/trace.hpp"

namespace precision_probe::engine {

namespace {

std::mutex g_stdout;

// Threads for the host's inputs and references: one per CPU this process may use, at most 8.
unsigned host_threads() { return std::min(8U, usable_cpus()); }

// The heap's free pages handed back to the kernel (glibc's malloc_trim): what the inputs'
// float64 drafts and a CPU's training steps freed stays resident otherwise, in every thread's
// arena, and counts in the session's memory at its peak (docs/performance.md).
void give_back_free_memory() { (void)::malloc_trim(0); }

// PRECISION_PROBE_INJECT_HANG, read once (the probe refused a value it cannot read).
const std::optional<HangInjection>& injected_hang() {
  static const std::optional<HangInjection> hang = []() -> std::optional<HangInjection> {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): the session never changes its environment
    const char* value = std::getenv(std::string(kInjectHangVariable).c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    Expected<HangInjection> parsed = parse_hang_injection(value);
    return parsed ? std::optional<HangInjection>(*parsed) : std::nullopt;
  }();
  return hang;
}

// A check made to hang on purpose: this plan's thread never returns (the probe ends the session).
void hang_if_injected(const WorkerPlan& plan, Mode mode) {
  const std::optional<HangInjection>& hang = injected_hang();
  if (!hang || hang->mode != mode || !hang->applies_to(plan.kind, plan.index)) return;
  trace(fmt::format("{} hangs here ({})", mode_key(mode), kInjectHangVariable));
  while (true) std::this_thread::sleep_for(std::chrono::hours(1));
}

// Every check's kernels, loaded at once (PreloadWay): the smoke tests' first, one per test in
// their order, then the training steps'. Each check waits for its own (`overlap`) or for all
// (`first`) before it runs.
struct Preloading {
  std::optional<PreloadsUnderWay> under_way;
  std::size_t smoke = 0;  // preloads [0, smoke) are the smoke tests', the rest the training's
  std::size_t all = 0;
  bool each_its_own = false;

  void wait_smoke(std::size_t i) const {
    if (under_way && each_its_own && i < smoke) under_way->wait(i);
  }
  void wait_training() const {
    if (!under_way || !each_its_own) return;
    for (std::size_t i = smoke; i < all; ++i) under_way->wait(i);
  }
};

void start_preloads(const WorkerPlan& plan, const Prepared& prepared, const Target& target,
                    PreloadWay way, Preloading& out) {
  if (way == PreloadWay::none) return;
  std::vector<Preload> preloads = smoke_preloads(prepared.smoke, target);
  out.smoke = preloads.size();
  for (Preload& p : amp_preloads(plan.amp, prepared.amp, target)) preloads.push_back(std::move(p));
  out.all = preloads.size();
  if (way == PreloadWay::first) {
    run_preloads(preloads);
    trace("kernels preloaded");
    return;
  }
  out.each_its_own = true;
  out.under_way.emplace(std::move(preloads));
}

// The smoke tests and the training runs; the modes whose smoke test passed (worth measuring).
std::vector<Mode> run_checks(const WorkerPlan& plan, const Prepared& prepared, const Target& target,
                             const CheckWays& ways) {
  Preloading preloading;
  start_preloads(plan, prepared, target, ways.preload, preloading);
  // The training runs go on a thread of their own (and threads of theirs), beside the smoke tests.
  PerMode<AmpOutcome> amp;
  std::vector<Mode> passed;
  run_both(
      [&] {
        if (plan.amp.empty()) return;
        target.enter();
        preloading.wait_training();
        amp = run_amp(plan.amp, prepared.amp, target, ways.cpu_training);
        trace("training runs done");
        give_back_free_memory();
      },
      [&] {
        for (std::size_t i = 0; i < prepared.smoke.size(); ++i) {
          const PreparedSmoke& p = prepared.smoke[i];
          preloading.wait_smoke(i);
          hang_if_injected(plan, p.mode);
          const SmokeOutcome outcome = execute_smoke(p, target);
          if (outcome.ok) passed.push_back(p.mode);
          emit(encode_smoke(plan.slot, p.mode, outcome));
          trace(mode_key(p.mode));
        }
      });
  for (const auto& [mode, outcome] : amp) emit(encode_amp(plan.slot, mode, outcome));
  return passed;
}

// Every precision that passed, right after warm-up first, then each under continuous load: the
// loads of the second kind would leave the GPU power-limited at the start of the next first kind.
void run_benches(const WorkerPlan& plan, const std::vector<Mode>& passed, const Target& target) {
  PerMode<BenchOutcome> bench;
  for (Mode mode : plan.smoke) {
    if (std::find(passed.begin(), passed.end(), mode) == passed.end()) continue;
    bench.set(mode, run_bench(mode, target, plan.bench_size));
    emit(encode_progress(plan.slot, std::string("bench ") + std::string(mode_key(mode))));
    trace(std::string("bench ") + std::string(mode_key(mode)));
  }
  for (auto [mode, outcome] : bench) {
    measure_sustained(mode, target, outcome);
    emit(encode_bench(plan.slot, mode, outcome));
    trace(std::string("bench sustained ") + std::string(mode_key(mode)));
  }
}

// Benchmarks and the soak of the modes whose smoke test passed (a mode that failed it was not
// soaked: the report says so).
void run_measurements(const WorkerPlan& plan, const std::vector<Mode>& passed,
                      const Target& target) {
  std::vector<Mode> soak_modes;
  for (Mode mode : plan.soak_modes) {
    if (std::find(passed.begin(), passed.end(), mode) != passed.end()) soak_modes.push_back(mode);
  }
  const bool soak = plan.soak_seconds > 0.0;
  const auto report = [slot = plan.slot](Mode mode, const SoakOutcome& outcome) {
    emit(encode_soak(slot, mode, outcome));
    trace(std::string("soak ") + std::string(mode_key(mode)));
  };
  if (plan.bench_size > 0) run_benches(plan, passed, target);
  if (!soak) return;
  const std::shared_ptr<SoakState> state = prepare_soak(plan, soak_modes, target, report);
  if (state) run_soak(*state, plan, target, report);
}

}  // namespace

void emit(const std::string& line) {
  const std::lock_guard<std::mutex> lock(g_stdout);
  std::cout << line << '\n' << std::flush;
}

PreloadWay preload_way(const std::optional<std::string>& setting, unsigned cpus) {
  const std::string way = setting.value_or(cpus <= 1 ? "none" : "overlap");
  if (way == "none") return PreloadWay::none;
  if (way == "first") return PreloadWay::first;
  return PreloadWay::overlap;
}

CpuRuns cpu_training_way(const std::optional<std::string>& setting, unsigned cpus) {
  if (setting == "in-turn") return CpuRuns::in_turn;
  if (setting == "at-once") return CpuRuns::at_once;
  return cpus <= 1 ? CpuRuns::in_turn : CpuRuns::at_once;
}

bool cpu_checks_after_gpus(const std::optional<std::string>& setting, unsigned cpus) {
  if (setting == "after-gpus") return true;
  if (setting == "beside") return false;
  return cpus <= 1;
}

bool cpu_checks_may_go(const GpuPlansSeen& seen, bool none_to_come) {
  if (seen.measure) return true;
  return seen.under_way == 0 && (seen.started > 0 || none_to_come);
}

Prepared prepare_plan(const WorkerPlan& plan) {
  Prepared prepared;
  const bool gpu = plan.kind == DeviceKind::cuda;
  prepared.smoke = prepare_smoke(plan.smoke, gpu, plan.seed, host_threads());
  if (!plan.amp.empty()) {
    trace("smoke inputs and references prepared");
    prepared.amp = prepare_amp(amp_batch(gpu, usable_cpus()), plan.seed * 1000003ULL + 1000);
  }
  trace("inputs and references prepared");
  give_back_free_memory();
  return prepared;
}

void run_device_plan(const WorkerPlan& plan, const Torch& torch, const CudaDriver* cuda,
                     const Prepared& prepared, const CheckWays& ways) {
  Target target;
  target.torch = &torch;
  if (cuda != nullptr) {
    target.cuda = cuda;
    target.device = Device{true, cuda->ordinal()};
    target.enter();
    emit(encode_device(plan.slot,
                       fmt::format("{} (cc {})", cuda->name(),
                                   cuda->capability().value_or(ComputeCapability{}).to_string()),
                       cuda->uuid()));
  }
  // Grad mode is the thread's: each plan's thread turns it off for itself.
  torch.c().aoti_torch_grad_mode_set_enabled(false);
  const std::vector<Mode> passed = run_checks(plan, prepared, target, ways);
  run_measurements(plan, passed, target);
}

void run_collective_plan(const WorkerPlan& plan, const Torch& torch) {
  std::string version;
  const std::vector<CollectiveOutcome> outcomes =
      run_collectives(torch, plan.ordinals, 256LL << 20U, version);
  for (const CollectiveOutcome& o : outcomes) emit(encode_collective(plan.slot, o, version));
}

void answer_unavailable(const WorkerPlan& plan, ErrorKind kind, const std::string& why) {
  for (Mode mode : plan.smoke) {
    SmokeOutcome o;
    o.tolerance = smoke_tolerance(mode);
    o.error_kind = kind;
    o.error = why;
    emit(encode_smoke(plan.slot, mode, o));
  }
  for (Mode mode : plan.amp) {
    AmpOutcome o;
    o.loss_tolerance = amp_loss_tolerance(mode);
    o.error_kind = kind;
    o.error = why;
    emit(encode_amp(plan.slot, mode, o));
  }
  if (plan.collective_ranks > 0) {
    for (DType dtype : kAllReduceDTypes) {
      CollectiveOutcome o;
      o.dtype = dtype;
      o.ranks = plan.collective_ranks;
      o.bytes = 256LL << 20U;
      o.error_kind = kind;
      o.error = why;
      emit(encode_collective(plan.slot, o, ""));
    }
  }
}

std::string plan_problem(const WorkerPlan& plan, DeviceKind session_kind) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the session's environment is never changed
  const char* value = std::getenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE");
  if (plan.kind == DeviceKind::cuda && session_kind != DeviceKind::cuda) {
    return "a GPU's plan in a session that loaded LibTorch's CPU library alone";
  }
  if (value != nullptr && std::string(value) == "1") {
    return "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 would make this plan's fp32 checks TF32";
  }
  if (plan.kind == DeviceKind::cpu &&
      std::find(plan.smoke.begin(), plan.smoke.end(), Mode::tf32) != plan.smoke.end()) {
    return "tf32 is checked on GPUs alone (cuBLAS's TF32 GEMM)";
  }
  return "";
}

}  // namespace precision_probe::engine
