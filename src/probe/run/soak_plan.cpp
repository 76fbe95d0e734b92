#include "probe/run/soak_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace precision_probe {

namespace {

bool contains(const std::vector<Mode>& modes, Mode mode) {
  return std::find(modes.begin(), modes.end(), mode) != modes.end();
}

// The GEMM size when --bench-size does not say: on a GPU large enough for the comparison of each
// result to cost little beside its GEMM (docs/soak.md), halved on a GPU of less than 16 GiB (fp32
// at 16384 holds about 5 GiB); small on a CPU. From the total memory, not the free: like GPUs get
// like sizes, and their golden results are compared.
constexpr std::int64_t kGpuSoakSize = 16384;
constexpr std::int64_t kSmallGpuSoakSize = 8192;
constexpr std::uint64_t kSmallGpuBytes = 16ULL << 30U;
constexpr std::int64_t kCpuSoakSize = 256;

std::int64_t default_soak_size(DeviceKind kind, std::optional<std::uint64_t> memory_total) {
  if (kind != DeviceKind::cuda) return kCpuSoakSize;
  return memory_total && *memory_total < kSmallGpuBytes ? kSmallGpuSoakSize : kGpuSoakSize;
}

// Why a planned mode has no soak line from its worker.
SoakOutcome missing(Mode mode, const WorkerResult* result, bool interrupted) {
  if (result != nullptr) {
    const SmokeOutcome* smoke = result->smoke.find(mode);
    if (smoke != nullptr && !smoke->ok) {
      return did_not_run<SoakOutcome>(ErrorKind::not_run, smoke->ran
                                                              ? "not soaked: its smoke test failed"
                                                              : "not soaked: " + smoke->error);
    }
    if (interrupted) {
      return did_not_run<SoakOutcome>(ErrorKind::not_run, "not soaked: the run was interrupted");
    }
    if (result->problem != ErrorKind::none) {
      return did_not_run<SoakOutcome>(result->problem, result->problem_message);
    }
  }
  return did_not_run<SoakOutcome>(ErrorKind::crashed, "the engine finished without this soak");
}

// A worker that died or was stopped before its soak was over, or a run interrupted (a signal, its
// deadline) during it: what it reported stands, but it is no pass.
void cut_short(SoakOutcome& o, const WorkerResult* result, bool interrupted) {
  if (result == nullptr || result->finished || !o.ran ||
      (!interrupted && result->problem == ErrorKind::none)) {
    return;
  }
  o.ok = false;
  if (o.mismatches > 0) return;  // the corruption found is the verdict
  if (interrupted) {
    o.error_kind =
        result->problem == ErrorKind::out_of_time ? ErrorKind::out_of_time : ErrorKind::interrupted;
    o.error =
        fmt::format("cut short: the run was interrupted after {} result(s) matched", o.iterations);
    return;
  }
  o.error_kind = result->problem;
  o.error = "the soak was cut short: " + result->problem_message;
}

}  // namespace

void plan_soak(WorkerPlan& plan, const Options& options,
               const std::function<HardwareVerdict(Mode)>& support,
               const std::optional<FaultInjection>& inject, std::uint64_t run_seed,
               std::optional<std::uint64_t> memory_total) {
  if (options.soak_s <= 0.0) return;
  plan.soak_seconds = options.soak_s;
  plan.soak_seed = run_seed;
  plan.soak_size = options.bench_size.value_or(default_soak_size(plan.kind, memory_total));
  for (Mode mode : plan.smoke) {
    const bool wanted = options.soak_modes.empty() ? support(mode).hardware == Hardware::native
                                                   : contains(options.soak_modes, mode);
    if (wanted) plan.soak_modes.push_back(mode);
  }
  if (inject && inject->applies_to(plan.kind, plan.index) &&
      contains(plan.soak_modes, inject->mode)) {
    plan.inject_mode = inject->mode;
    plan.inject_iteration = inject->iteration;
  }
}

std::optional<SoakReport> soak_report(const Options& options, const WorkerPlan& plan,
                                      const WorkerResult* result, bool interrupted) {
  if (plan.soak_seconds <= 0.0) return std::nullopt;
  SoakReport s;
  s.seconds = plan.soak_seconds;
  for (Mode mode : plan.soak_modes) {
    const SoakOutcome* answered = result != nullptr ? result->soak.find(mode) : nullptr;
    SoakOutcome o = answered != nullptr ? *answered : missing(mode, result, interrupted);
    if (interrupted &&
        (o.error_kind == ErrorKind::interrupted || o.error_kind == ErrorKind::timed_out)) {
      o = did_not_run<SoakOutcome>(ErrorKind::not_run, "cut short: the run was interrupted");
    }
    cut_short(o, result, interrupted);
    s.injected = s.injected || o.injected;
    s.modes.set(mode, o);
  }
  for (Mode mode : options.soak_modes) {
    if (!contains(plan.soak_modes, mode)) {
      s.modes.set(mode, did_not_run<SoakOutcome>(ErrorKind::not_run,
                                                 "not soaked: this device does not run it"));
    }
  }
  if (plan.inject_iteration > 0 && !s.injected && result != nullptr && result->finished) {
    s.injection_note =
        fmt::format("{} named result {} of {}, which the soak did not reach: nothing was injected",
                    kInjectFaultVariable, plan.inject_iteration, mode_key(plan.inject_mode));
  }
  return s;
}

void note_unplaced_injection(std::vector<DeviceReport>& devices,
                             const std::optional<FaultInjection>& inject, bool planned) {
  if (!inject || planned) return;
  const std::string mode(mode_key(inject->mode));
  const std::string where = inject->device.empty()    ? ""
                            : inject->device == "cpu" ? "the CPU"
                                                      : "GPU " + inject->device;
  const std::string note =
      where.empty()
          ? fmt::format("{} names {}, which no device of this run soaks: nothing was injected",
                        kInjectFaultVariable, mode)
          : fmt::format(
                "{} names {} on {}, which this run does not soak in {}: nothing was "
                "injected",
                kInjectFaultVariable, mode, where, mode);
  for (DeviceReport& d : devices) {
    if (d.soak && d.soak->injection_note.empty()) d.soak->injection_note = note;
  }
}

}  // namespace precision_probe
