// --soak: silent data corruption under load (docs/soak.md). Each mode's GEMM is built once on
// inputs that depend on the run's seed alone (the same on every GPU); its first result, computed
// cool, is the golden one; then the same call runs back to back, the modes taking turns in slices,
// and every result is compared with the golden one bit for bit: its bytes summed as 64-bit words
// on the device (exact, and changed by any single flipped bit), every 16th result also element by
// element. The sums travel to the host behind an event, so the device never waits for the
// comparison of the result before.

#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "trace/trace.hpp"
#include "engine/checks/checks.hpp"

namespace precision_probe::engine {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::int64_t kFullCompareEvery = 16;

// The longest slice a mode runs before the next takes its turn.
double max_slice(const Target& target) { return target.on_gpu() ? 2.0 : 0.5; }

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The output's elements as integers of their width, for bitwise comparison.
Tensor as_bits(const Tensor& out) {
  switch (scalar_info(out.scalar()).bytes) {
    case 1: return view_as(out, Scalar::u8);
    case 2: return view_as(out, Scalar::i16);
    case 4: return view_as(out, Scalar::i32);
    default: return view_as(out, Scalar::i64);
  }
}

// The output's bytes as 64-bit words, summed with wrap-around.
Tensor checksum_of(const Tensor& out) { return sum(view_as(out, Scalar::i64)); }

// How many elements of `out` differ from `golden` in their bits (int64, on the device).
Tensor differing_elements(const Tensor& out, const Tensor& golden) {
  return sum(ne(as_bits(out), as_bits(golden)));
}

std::string hex(std::int64_t value) {
  return fmt::format("{:016x}", static_cast<std::uint64_t>(value));
}

// A result on its way to the comparison.
struct InFlight {
  Tensor out;
  PendingInt64 sum;
  std::optional<PendingInt64> differing;  // every 16th: elements whose bits differ
  std::int64_t iteration;
  double seconds;  // into the soak, when it was queued
};

// Queues the comparison of a result: its checksum and, every 16th, the element-by-element count,
// both on their way to the host behind an event (no synchronisation).
InFlight queue_compare(Tensor out, const Tensor& golden, const Target& target,
                       std::int64_t iteration, double seconds) {
  PendingInt64 checksum(checksum_of(out), target);
  std::optional<PendingInt64> differing;
  if (iteration % kFullCompareEvery == 0)
    differing.emplace(differing_elements(out, golden), target);
  return InFlight{std::move(out), std::move(checksum), std::move(differing), iteration, seconds};
}

// The largest difference of two results as numbers (NaN where one is not finite).
double max_abs_difference(const Tensor& a, const Tensor& b) {
  const Tensor difference = abs(add(converted(a, Scalar::f64), converted(b, Scalar::f64), -1.0));
  return download_values(max(difference)).at(0);
}

// A result compared is poisoned before its memory goes back to the allocator: the next result
// gets that block, and a GEMM that failed to write part of it must not find the right bits there.
// A junk grid, one element in 64 of every 8th row, catches any unwritten block of 8 x 64 elements
// (GEMMs write in tiles of at least 64 x 64) at a 32nd of the cost of overwriting it all.
void poison(const Tensor& out) {
  const Tensor bits = as_bits(out);
  const Sizes s = bits.sizes();
  if (s.size() != 2) return fill(bits, -1.0);
  fill(bits.view({(s[0] + 7) / 8, (s[1] + 63) / 64}, {8 * s[1], 64}), -1.0);
}

}  // namespace

struct SoakMode {
  Mode mode = Mode::fp32;
  std::optional<Gemm> gemm;
  Tensor golden;
  std::int64_t golden_sum = 0;
  double flop = 0.0;  // per call
  SoakOutcome outcome;
  bool inject = false;    // this mode's result at plan.inject_iteration gets a flipped bit
  bool stopped = false;   // an error ended its soak
  bool announce = false;  // its first mismatch is to be reported at once
};

struct SoakState {
  std::vector<SoakMode> modes;
};

namespace {

using Report = std::function<void(Mode, const SoakOutcome&)>;

void record_mismatch(SoakMode& m, const InFlight& r) {
  SoakOutcome& o = m.outcome;
  ++o.mismatches;
  o.ok = false;
  if (o.first_mismatch) return;
  SoakMismatch first;
  first.iteration = r.iteration;
  first.seconds = r.seconds;
  first.boot_s = boot_clock_ms() / 1000.0;
  first.elements = PendingInt64(differing_elements(r.out, m.golden), Target{}).wait();
  const double max_error = max_abs_difference(r.out, m.golden);
  if (std::isfinite(max_error)) first.max_abs_error = max_error;
  o.first_mismatch = first;
  m.announce = true;
  o.error_kind = ErrorKind::wrong_result;
  o.error = fmt::format(
      "silent data corruption: result {} of the soak ({:.1f} s in) differs from the golden one in "
      "{} element(s)",
      r.iteration, r.seconds, first.elements);
}

void compare(SoakMode& m, const InFlight& r) {
  ++m.outcome.iterations;
  bool same = r.sum.wait() == m.golden_sum;
  if (r.differing) {
    ++m.outcome.full_compares;
    same = r.differing->wait() == 0 && same;
  }
  if (!same) record_mismatch(m, r);
}

// Flips the lowest bit of the result's first element (PRECISION_PROBE_INJECT_FAULT).
void flip_one_bit(const Tensor& out, const Target& target) {
  const Tensor bits = as_bits(out);
  const Tensor one = converted(
      upload(*target.torch, std::vector<std::int64_t>{1}, {1}, Scalar::i64, target.device),
      bits.scalar());
  bitwise_xor(bits.view({1}, {1}), one);
}

// One slice: the mode's GEMM back to back for `seconds`, each result compared while the next runs.
// A first mismatch is reported at once (a run cut short must not lose it).
void run_slice(SoakMode& m, const WorkerPlan& plan, const Target& target, double seconds,
               Clock::time_point soak_start, const Report& report) {
  const Clock::time_point start = Clock::now();
  std::optional<InFlight> previous;
  auto settle = [&](const InFlight& r) {
    compare(m, r);
    poison(r.out);
    if (m.announce) {
      m.announce = false;
      report(m.mode, m.outcome);
    }
  };
  do {
    Tensor out = (*m.gemm)();
    const std::int64_t iteration = m.outcome.iterations + (previous ? 2 : 1);
    if (m.inject && iteration == plan.inject_iteration) {
      flip_one_bit(out, target);
      m.outcome.injected = true;
    }
    InFlight current =
        queue_compare(std::move(out), m.golden, target, iteration, seconds_since(soak_start));
    if (previous) settle(*previous);
    previous = std::move(current);
  } while (seconds_since(start) < seconds);
  settle(*previous);
  target.synchronize();
  m.outcome.seconds = m.outcome.seconds.value_or(0.0) + seconds_since(start);
}

SoakMode prepare_mode(Mode mode, const WorkerPlan& plan, const Target& target) {
  SoakMode m;
  m.mode = mode;
  const std::int64_t n = bench_size_for(mode, plan.soak_size);
  // The run's seed, not the device's: like GPUs multiply the same inputs, and their golden
  // results are compared.
  m.gemm = seeded_gemm(mode, target, n, plan.soak_seed * 1000003ULL + 3000);
  m.flop = 2.0 * std::pow(static_cast<double>(n), 3.0);
  m.inject = plan.inject_iteration > 0 && plan.inject_mode == mode;
  m.outcome.size = n;
  m.golden = (*m.gemm)();
  m.golden_sum = PendingInt64(checksum_of(m.golden), target).wait();
  m.outcome.golden_checksum = hex(m.golden_sum);
  m.outcome.ran = true;
  m.outcome.ok = true;
  return m;
}

}  // namespace

std::shared_ptr<SoakState> prepare_soak(const WorkerPlan& plan, const std::vector<Mode>& modes,
                                        const Target& target, const Report& report) {
  auto state = std::make_shared<SoakState>();
  for (Mode mode : modes) {
    try {
      if (std::string problem = kernel_problem(mode, *target.torch, target.device);
          !problem.empty()) {
        throw CannotRun(problem);
      }
      state->modes.push_back(prepare_mode(mode, plan, target));
    } catch (const std::exception& e) {
      SoakOutcome failed;
      record_failure(failed, e);
      report(mode, failed);
    }
  }
  return state;
}

void run_soak(SoakState& state, const WorkerPlan& plan, const Target& target,
              const Report& report) {
  std::vector<SoakMode>& soaking = state.modes;
  if (soaking.empty()) return;
  // Rounds of one slice per mode, a slice of at most a few seconds, as many rounds as fill the
  // time: every mode gets the same share, hot after the others (docs/soak.md).
  const double count = static_cast<double>(soaking.size());
  const double rounds = std::max(1.0, std::ceil(plan.soak_seconds / (count * max_slice(target))));
  const double slice = plan.soak_seconds / (count * rounds);
  const Clock::time_point start = Clock::now();
  const auto turns = static_cast<std::size_t>(rounds) * soaking.size();
  std::size_t running = soaking.size();
  for (std::size_t turn = 0; running > 0 && turn < turns; ++turn) {
    SoakMode& m = soaking[turn % soaking.size()];
    if (m.stopped) continue;
    try {
      run_slice(m, plan, target, slice, start, report);
      m.outcome.tflops = m.flop * static_cast<double>(m.outcome.iterations) /
                         m.outcome.seconds.value_or(1.0) / 1e12;
    } catch (const std::exception& e) {
      m.outcome.ok = false;
      record_failure(m.outcome, e);
      m.stopped = true;
      --running;
    }
    report(m.mode, m.outcome);
  }
}

}  // namespace precision_probe::engine
