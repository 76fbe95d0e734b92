#include "probe/run/soak_plan.hpp"

#include <algorithm>

namespace precision_probe {

namespace {

bool contains(const std::vector<Mode>& modes, Mode mode) {
  return std::find(modes.begin(), modes.end(), mode) != modes.end();
}

// The GEMM size: --bench-size, else large enough to load a GPU (and small on a CPU).
constexpr std::int64_t kGpuSoakSize = 8192;
constexpr std::int64_t kCpuSoakSize = 256;

SoakOutcome not_soaked(ErrorKind kind, std::string why) {
  SoakOutcome o;
  o.error_kind = kind;
  o.error = std::move(why);
  return o;
}

// Why a planned mode has no soak line from its worker.
SoakOutcome missing(Mode mode, const WorkerResult* result, bool interrupted) {
  if (result != nullptr) {
    const auto smoke = result->smoke.find(mode);
    if (smoke != result->smoke.end() && !smoke->second.ok) {
      return not_soaked(ErrorKind::not_run, smoke->second.ran
                                                ? "not soaked: its smoke test failed"
                                                : "not soaked: " + smoke->second.error);
    }
    if (interrupted) return not_soaked(ErrorKind::not_run, "not soaked: the run was interrupted");
    if (result->problem != ErrorKind::none) {
      return not_soaked(result->problem, result->problem_message);
    }
  }
  return not_soaked(ErrorKind::crashed, "the engine finished without this soak");
}

}  // namespace

void plan_soak(WorkerPlan& plan, const Options& options,
               const std::function<HardwareVerdict(Mode)>& support,
               const std::optional<FaultInjection>& inject) {
  if (options.soak_s <= 0.0) return;
  plan.soak_seconds = options.soak_s;
  plan.soak_size =
      options.bench_size.value_or(plan.kind == DeviceKind::cuda ? kGpuSoakSize : kCpuSoakSize);
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
  s.injected = plan.inject_iteration > 0;
  for (Mode mode : plan.soak_modes) {
    const SoakOutcome* answered = nullptr;
    if (result != nullptr) {
      const auto line = result->soak.find(mode);
      if (line != result->soak.end()) answered = &line->second;
    }
    SoakOutcome o = answered != nullptr ? *answered : missing(mode, result, interrupted);
    if (interrupted && o.error_kind == ErrorKind::timed_out) {
      o = not_soaked(ErrorKind::not_run, "cut short: the run was interrupted");
    }
    s.modes.emplace_back(mode, o);
  }
  for (Mode mode : options.soak_modes) {
    if (!contains(plan.soak_modes, mode)) {
      s.modes.emplace_back(
          mode, not_soaked(ErrorKind::not_run, "not soaked: this device does not run it"));
    }
  }
  return s;
}

}  // namespace precision_probe
