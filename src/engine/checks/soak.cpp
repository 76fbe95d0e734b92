// --soak: silent data corruption under load (docs/soak.md). Each mode's GEMM is built once on
// fixed random inputs; its first result, computed cool, is the golden one; then the same call
// runs back to back, the modes taking turns in slices, and every result is compared with the
// golden one bit for bit: its bytes summed as 64-bit words on the device (exact, and changed by
// any single flipped bit), every 16th result also element by element. The sums travel to the host
// behind an event, so the device never waits for the comparison of the result before.

#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "engine/checks/kernels.hpp"
#include "engine/engine.hpp"
#include "engine/error_text.hpp"

namespace precision_probe::engine {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::int64_t kFullCompareEvery = 16;

// The longest slice a mode runs before the next takes its turn.
double max_slice(const Target& target) { return target.cuda ? 2.0 : 0.5; }

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The output's elements as integers of their width, for bitwise comparison.
at::Tensor as_bits(const at::Tensor& out) {
  switch (out.element_size()) {
    case 1: return out.view(at::kByte);
    case 2: return out.view(at::kShort);
    case 4: return out.view(at::kInt);
    default: return out.view(at::kLong);
  }
}

// The output's bytes as 64-bit words, summed with wrap-around.
at::Tensor checksum_of(const at::Tensor& out) { return out.contiguous().view(at::kLong).sum(); }

std::string hex(std::int64_t value) {
  return fmt::format("{:016x}", static_cast<std::uint64_t>(value));
}

struct SoakMode {
  Mode mode;
  Gemm gemm;
  at::Tensor golden;
  std::int64_t golden_sum = 0;
  double flop = 0.0;  // per call
  SoakOutcome outcome;
  bool inject = false;    // this mode's result at plan.inject_iteration gets a flipped bit
  bool stopped = false;   // an error ended its soak
  bool announce = false;  // its first mismatch is to be reported at once
};

// A result on its way to the comparison.
struct InFlight {
  at::Tensor out;
  PendingInt64 sum;
  std::optional<PendingInt64> differing;  // every 16th: elements whose bits differ from the golden
  std::int64_t iteration;
  double seconds;  // into the soak, when it was queued
};

// Queues the comparison of a result: its checksum and, every 16th, the element-by-element count,
// both on their way to the host behind an event (no synchronisation).
InFlight queue_compare(const at::Tensor& out, const at::Tensor& golden, const Target& target,
                       std::int64_t iteration, double seconds) {
  InFlight r{out, PendingInt64(checksum_of(out), target), std::nullopt, iteration, seconds};
  if (iteration % kFullCompareEvery == 0) {
    r.differing = PendingInt64(as_bits(out).ne(as_bits(golden)).sum(), target);
  }
  return r;
}

void record_mismatch(SoakMode& m, const InFlight& r) {
  SoakOutcome& o = m.outcome;
  ++o.mismatches;
  o.ok = false;
  if (o.first_mismatch) return;
  SoakMismatch first;
  first.iteration = r.iteration;
  first.seconds = r.seconds;
  first.boot_s = boot_clock_ms() / 1000.0;
  first.elements = as_bits(r.out).ne(as_bits(m.golden)).sum().item<std::int64_t>();
  const double max_error =
      (r.out.to(at::kDouble) - m.golden.to(at::kDouble)).abs().max().item<double>();
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

// A result compared is poisoned before its memory goes back to the allocator: the next result
// gets that block, and a GEMM that failed to write part of it must not find the right bits there.
// A junk grid, one element in 64 of every 8th row, catches any unwritten block of 8 x 64 elements
// (GEMMs write in tiles of at least 64 x 64) at a 32nd of the cost of overwriting it all.
void poison(const at::Tensor& out) {
  at::Tensor bits = as_bits(out);
  if (bits.dim() == 2) bits = bits.slice(0, 0, bits.size(0), 8).slice(1, 0, bits.size(1), 64);
  bits.fill_(-1);
}

using Report = std::function<void(Mode, const SoakOutcome&)>;

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
    at::Tensor out = m.gemm();
    const std::int64_t iteration = m.outcome.iterations + (previous ? 2 : 1);
    if (m.inject && iteration == plan.inject_iteration) {
      as_bits(out).view(-1).narrow(0, 0, 1).bitwise_xor_(1);  // the lowest bit of one element
      m.outcome.injected = true;
    }
    InFlight current = queue_compare(out, m.golden, target, iteration, seconds_since(soak_start));
    if (previous) settle(*previous);
    previous = std::move(current);
  } while (seconds_since(start) < seconds);
  settle(*previous);
  synchronize(target);
  const double took = seconds_since(start);
  m.outcome.seconds = m.outcome.seconds.value_or(0.0) + took;
}

SoakMode prepare_mode(Mode mode, const WorkerPlan& plan, const Target& target, at::Generator& gen) {
  const std::int64_t n = bench_size_for(mode, plan.soak_size);
  SoakMode m{mode, random_gemm(mode, target, n, gen),           {},
             0,    2.0 * std::pow(static_cast<double>(n), 3.0), {}};
  m.inject = plan.inject_iteration > 0 && plan.inject_mode == mode;
  m.outcome.size = n;
  m.golden = m.gemm();
  m.golden_sum = PendingInt64(checksum_of(m.golden), target).wait();
  m.outcome.golden_checksum = hex(m.golden_sum);
  m.outcome.ran = true;
  m.outcome.ok = true;
  return m;
}

}  // namespace

void run_soak(const WorkerPlan& plan, const std::vector<Mode>& modes, const Target& target,
              const std::function<void(Mode, const SoakOutcome&)>& report) {
  // The run's seed, not the device's: like GPUs multiply the same inputs, and their golden results
  // are compared.
  at::Generator gen = seeded_generator(target, plan.soak_seed * 1000003ULL + 3000);
  std::vector<SoakMode> soaking;
  for (Mode mode : modes) {
    try {
      const Float32PrecisionScope precision(mode == Mode::tf32);
      soaking.push_back(prepare_mode(mode, plan, target, gen));
    } catch (const std::exception& e) {
      SoakOutcome failed;
      failed.error = error_text(e);
      failed.error_kind = classify_error(failed.error);
      report(mode, failed);
    }
  }
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
      const Float32PrecisionScope precision(m.mode == Mode::tf32);
      run_slice(m, plan, target, slice, start, report);
      m.outcome.tflops = m.flop * static_cast<double>(m.outcome.iterations) /
                         m.outcome.seconds.value_or(1.0) / 1e12;
    } catch (const std::exception& e) {
      m.outcome.ok = false;
      m.outcome.error = error_text(e);
      m.outcome.error_kind = classify_error(m.outcome.error);
      m.stopped = true;
      --running;
    }
    report(m.mode, m.outcome);
  }
}

}  // namespace precision_probe::engine
