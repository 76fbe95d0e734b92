#include "wire/worker_checks.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "wire/training_check.hpp"

namespace precision_probe {
namespace {

constexpr double kLongestCallMs = 1e6;  // 1000 s: no single check takes that long
constexpr double kFastestTflops = 1e5;  // 100 PFLOP/s: no single device reaches that
constexpr std::int64_t kLargestDim = 65536;

bool finite_at_least(const std::optional<double>& v, double low) {
  return !v || (std::isfinite(*v) && *v >= low);
}

// Within 1 % of each other (figures a worker derives from others it also sends).
bool agree(double a, double b) {
  return std::abs(a - b) <= 0.01 * std::max(std::abs(a), std::abs(b));
}

// Fails an outcome: a value that cannot be, or an "ok" that its figures do not bear out.
template <typename Outcome>
void refuse(Outcome& o, const std::string& why, bool impossible) {
  if (why.empty()) return;
  o.ok = false;
  o.error_kind = ErrorKind::wrong_result;
  o.error = impossible ? "the engine reported an impossible value: " + why : why;
}

template <typename Outcome>
std::string ok_without_running(const Outcome& o) {
  return o.ok && !o.ran ? "ok for a check that did not run" : "";
}

std::string impossible_smoke(const SmokeOutcome& o) {
  if (!finite_at_least(o.rel_error, 0.0)) return fmt::format("rel_error {}", *o.rel_error);
  if (!finite_at_least(o.ms, 0.0) || (o.ms && *o.ms > kLongestCallMs))
    return fmt::format("ms {}", *o.ms);
  for (std::int64_t dim : {o.m, o.n, o.k}) {
    if (o.ran && (dim < 1 || dim > kLargestDim)) return fmt::format("a matrix size of {}", dim);
  }
  return ok_without_running(o);
}

std::string impossible_amp(const AmpOutcome& o) {
  if (o.ran && (o.steps < 1 || o.steps > 100000)) return fmt::format("{} steps", o.steps);
  if (o.skipped_steps < 0 || o.skipped_steps > std::max(o.steps, 0)) {
    return fmt::format("{} skipped steps of {}", o.skipped_steps, o.steps);
  }
  if (!finite_at_least(o.ms, 0.0)) return fmt::format("ms {}", *o.ms);
  if (!finite_at_least(o.loss_rel_diff, 0.0))
    return fmt::format("loss_rel_diff {}", *o.loss_rel_diff);
  for (const auto& v : {o.initial_scale, o.final_scale}) {
    if (v && !(std::isfinite(*v) && *v > 0.0)) return fmt::format("a loss scale of {}", *v);
  }
  for (const auto& v : {o.peak_bytes, o.fp32_peak_bytes}) {
    if (v && *v < 0) return fmt::format("a peak memory of {} bytes", *v);
  }
  // The distance to the fp32 run is the probe's to work out.
  const std::optional<double> distance = loss_distance(o);
  if (o.loss_rel_diff && distance && !agree(*distance, *o.loss_rel_diff) &&
      std::abs(*distance - *o.loss_rel_diff) > 1e-12) {
    return fmt::format("loss_rel_diff {} where the losses give {}", *o.loss_rel_diff, *distance);
  }
  return ok_without_running(o);
}

std::string impossible_bench(const BenchOutcome& o) {
  if (!o.ran) {
    if (o.ms || o.tflops || o.sustained_ms || o.sustained_tflops) {
      return "figures from a benchmark that did not run";
    }
    return ok_without_running(o);
  }
  if (o.size < 16 || o.size > kLargestDim) return fmt::format("a GEMM size of {}", o.size);
  if (o.reps < 1 || o.reps > 100000) return fmt::format("{} timed calls", o.reps);
  const double flop = 2.0 * std::pow(static_cast<double>(o.size), 3.0);
  for (const auto& [ms, tflops] :
       {std::pair{o.ms, o.tflops}, std::pair{o.sustained_ms, o.sustained_tflops}}) {
    if (!ms && !tflops) continue;
    if (!ms || !tflops || !(std::isfinite(*ms) && *ms > 0.0 && *ms < kLongestCallMs)) {
      return "a time without its throughput, or an impossible time";
    }
    if (!(std::isfinite(*tflops) && *tflops > 0.0 && *tflops < kFastestTflops)) {
      return fmt::format("{} TFLOP/s", *tflops);
    }
    if (!agree(flop / (*ms * 1e-3) / 1e12, *tflops)) {
      return fmt::format("{} TFLOP/s where its size and time give {:.4g}", *tflops,
                         flop / (*ms * 1e-3) / 1e12);
    }
  }
  return "";
}

std::string impossible_collective(const CollectiveOutcome& o) {
  if (!o.ran) {
    if (o.time_ms || o.algbw_gbps || o.busbw_gbps)
      return "figures from an all-reduce that did not run";
    return ok_without_running(o);
  }
  if (o.ranks < 1 || o.bytes <= 0) return fmt::format("{} ranks, {} bytes", o.ranks, o.bytes);
  if (!o.time_ms || !(std::isfinite(*o.time_ms) && *o.time_ms > 0.0)) return "an impossible time";
  const double algbw = static_cast<double>(o.bytes) / (*o.time_ms * 1e-3) / 1e9;
  if (!o.algbw_gbps || !agree(algbw, *o.algbw_gbps))
    return "an algorithm bandwidth its size and time do not give";
  const double busbw = algbw * 2.0 * (o.ranks - 1) / o.ranks;
  if (!o.busbw_gbps || !agree(busbw, *o.busbw_gbps))
    return "a bus bandwidth its algorithm bandwidth does not give";
  return "";
}

bool hex16(const std::string& text) {
  return text.size() == 16 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string impossible_soak(const SoakOutcome& o) {
  if (!o.ran) {
    if (o.iterations != 0 || o.mismatches != 0 || o.tflops || o.first_mismatch) {
      return "figures from a soak that did not run";
    }
    return ok_without_running(o);
  }
  if (o.size < 16 || o.size > kLargestDim) return fmt::format("a GEMM size of {}", o.size);
  if (o.iterations < 0 || o.mismatches < 0 || o.mismatches > o.iterations || o.full_compares < 0 ||
      o.full_compares > o.iterations) {
    return fmt::format("{} mismatches and {} full compares in {} iterations", o.mismatches,
                       o.full_compares, o.iterations);
  }
  if (!hex16(o.golden_checksum)) return "a golden checksum that is not 16 hex digits";
  if ((o.mismatches > 0) != o.first_mismatch.has_value()) {
    return "mismatches without the first of them, or the other way round";
  }
  if (o.first_mismatch &&
      (o.first_mismatch->iteration < 1 || o.first_mismatch->iteration > o.iterations ||
       o.first_mismatch->elements < 1 || !(o.first_mismatch->seconds >= 0.0))) {
    return "a first mismatch outside the soak";
  }
  if (!finite_at_least(o.seconds, 0.0) || (o.seconds && *o.seconds > kLongestCallMs)) {
    return "an impossible duration";
  }
  if (o.tflops && !(std::isfinite(*o.tflops) && *o.tflops > 0.0 && *o.tflops < kFastestTflops)) {
    return fmt::format("{} TFLOP/s", *o.tflops);
  }
  return "";
}

}  // namespace

void check_soak(SoakOutcome& o) {
  refuse(o, impossible_soak(o), true);
  // "ok" is every result matching the golden one: a mismatch is never ok.
  if (o.ok && o.mismatches > 0) refuse(o, "the engine reported ok with mismatches", false);
}

void check_smoke(Mode mode, SmokeOutcome& o) {
  o.tolerance = smoke_tolerance(mode);  // the probe's, not the worker's
  // "ok" needs a finite error within tolerance.
  if (o.ok && (!o.rel_error || !(*o.rel_error <= o.tolerance))) {
    refuse(o,
           o.rel_error
               ? fmt::format("wrong result: relative error {:.3g} exceeds the tolerance {:.3g}",
                             *o.rel_error, o.tolerance)
               : "the engine reported ok without a relative error",
           false);
  }
  refuse(o, impossible_smoke(o), true);
}

void check_amp(Mode mode, AmpOutcome& o) {
  o.loss_tolerance = amp_loss_tolerance(mode);
  refuse(o, impossible_amp(o), true);
  // "ok" needs figures that show training: judged again here, as the engine judged them.
  if (o.ok) refuse(o, training_problem(mode, o), false);
  o.loss_rel_diff = loss_distance(o);
}

void check_bench(BenchOutcome& o) {
  if (o.ok && (!o.tflops || !(*o.tflops > 0.0))) {
    refuse(o, "the engine reported a benchmark without a positive throughput", false);
  }
  refuse(o, impossible_bench(o), true);
}

void check_collective(CollectiveOutcome& o) { refuse(o, impossible_collective(o), true); }

std::string collectives_problem(const std::vector<CollectiveOutcome>& outcomes, int ranks) {
  for (DType dtype : kAllReduceDTypes) {
    const auto n = std::count_if(outcomes.begin(), outcomes.end(),
                                 [&](const CollectiveOutcome& o) { return o.dtype == dtype; });
    if (n != 1) {
      return fmt::format("the engine reported {} {} all-reduce results, not one", n,
                         to_string(dtype));
    }
  }
  if (outcomes.size() != kAllReduceDTypes.size()) {
    return fmt::format("the engine reported {} all-reduce results, not {}", outcomes.size(),
                       kAllReduceDTypes.size());
  }
  for (const CollectiveOutcome& o : outcomes) {
    if (o.ranks != ranks) {
      return fmt::format("the engine reported a {} all-reduce over {} GPUs, not {}",
                         to_string(o.dtype), o.ranks, ranks);
    }
  }
  return "";
}

}  // namespace precision_probe
