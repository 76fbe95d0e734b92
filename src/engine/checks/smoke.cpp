// Matmul smoke tests: does this precision compute the right numbers on this device?
//
// Inputs are drawn in float64 on the host from the run's seed, quantised to the precision under
// test (their bits made here, not by LibTorch), and the reference is the float64 product of the
// *quantised* inputs, computed on the host by the engine's own code (never by the device or the
// LibTorch under test). So the error measured is the device's: accumulation and output rounding.
// The tolerance is that rounding's budget with margin; NaN never passes. The reference is a sample
// of the product's rows, spread over the matrix (host_math.hpp says why that is enough); every
// element of the device's result is still scanned for NaN, Inf and values beyond their bound.

#include <chrono>
#include <cmath>
#include <future>
#include <mutex>

#include <fmt/format.h>

#include "engine/host/host_math.hpp"
#include "threads/threads.hpp"
#include "trace/trace.hpp"
#include "engine/checks/checks.hpp"

namespace precision_probe::engine {

namespace {

using Clock = std::chrono::steady_clock;

PreparedSmoke prepare_one(Mode mode, bool gpu, std::uint64_t seed) {
  PreparedSmoke p;
  p.mode = mode;
  SmokeOutcome& o = p.outcome;
  const Shape shape = smoke_shape(mode, gpu);
  o.m = shape.m;
  o.k = shape.k;
  o.n = shape.n;
  o.tolerance = smoke_tolerance(mode);
  if (mode_info(mode).kind != ModeKind::matmul) {
    o.error_kind = ErrorKind::not_run;
    o.error = "not a matmul precision";
    return p;
  }
  try {
    HostRandom random(seed);
    std::vector<double> a(static_cast<std::size_t>(shape.m * shape.k));
    std::vector<double> b(static_cast<std::size_t>(shape.k * shape.n));
    for (double& v : a) v = random.normal();
    for (double& v : b) v = random.normal();
    p.operands = host_operands(mode, a, b, shape);
    o.method = p.operands.method;
    p.reference = sample_product(p.operands.a_values, p.operands.b_values, shape.m, shape.k,
                                 shape.n, sampled_rows(shape.m, random.next()));
    p.ready = true;
  } catch (const std::exception& e) {
    record_failure(o, e);
  }
  return p;
}

}  // namespace

std::string error_line(const std::exception& e) {
  std::string text = e.what();
  const std::size_t nl = text.find('\n');
  if (nl != std::string::npos) text.resize(nl);
  // LibTorch's out-of-memory message goes on about its allocator for several hundred characters:
  // what matters ends with how much was free ("... of which 25.50 MiB is free.").
  const std::size_t free_at = text.find(" is free.");
  if (text.find("CUDA out of memory") != std::string::npos && free_at != std::string::npos) {
    text.resize(free_at + 9);
  }
  constexpr std::size_t kMax = 400;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

std::vector<PreparedSmoke> prepare_smoke(const std::vector<Mode>& modes, bool gpu,
                                         std::uint64_t seed, unsigned threads) {
  std::vector<PreparedSmoke> prepared(modes.size());
  std::size_t next = 0;
  std::mutex mutex;
  auto work = [&] {
    while (true) {
      std::size_t i = 0;
      {
        const std::lock_guard<std::mutex> lock(mutex);
        if (next >= modes.size()) return;
        i = next++;
      }
      prepared[i] = prepare_one(modes[i], gpu, seed * 1000003ULL + i + 1);
    }
  };
  run_on_threads(std::max(1U, std::min<unsigned>(threads, static_cast<unsigned>(modes.size()))),
                 work);
  return prepared;
}

std::vector<Preload> smoke_preloads(const std::vector<PreparedSmoke>& prepared,
                                    const Target& target) {
  std::vector<Preload> preloads;
  if (!target.on_gpu()) return preloads;
  for (const PreparedSmoke& p : prepared) {
    if (!p.ready || !kernel_problem(p.mode, *target.torch, target.device).empty()) {
      preloads.emplace_back();
      continue;
    }
    preloads.emplace_back([&p, &target] {
      device_gemm(p.mode, p.operands, target)();
      target.synchronize();  // an error of the kernel surfaces here, not in another check
    });
  }
  return preloads;
}

namespace {

// One preload; what it throws is passed over: the check that runs the same operation meets the
// error and reports it.
void run_one_preload(const Preload& preload, std::size_t i) {
  if (!preload) return;
  try {
    preload();
  } catch (const std::exception&) {
  }
  trace(fmt::format("  preload {} done", i));
}

}  // namespace

void run_preloads(const std::vector<Preload>& preloads) {
  Threads threads;
  for (std::size_t i = 0; i < preloads.size(); ++i) {
    auto work = [&preloads, i] { run_one_preload(preloads[i], i); };
    if (i + 1 == preloads.size() || !threads.start(work)) threads.run_here(work);
  }
  threads.wait();
}

struct PreloadsUnderWay::State {
  std::vector<Preload> preloads;
  std::vector<std::promise<void>> done;
  std::vector<std::shared_future<void>> ready;
  Threads threads;
};

PreloadsUnderWay::PreloadsUnderWay(std::vector<Preload> preloads)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.preloads = std::move(preloads);
  s.done.resize(s.preloads.size());
  for (std::promise<void>& p : s.done) s.ready.push_back(p.get_future().share());
  for (std::size_t i = 0; i < s.preloads.size(); ++i) {
    auto work = [&s, i] {
      // What escapes is the trace's own allocation failing: the check still runs and reports.
      try {
        run_one_preload(s.preloads[i], i);
      } catch (...) {  // NOLINT(bugprone-empty-catch)
      }
      s.done[i].set_value();
    };
    if (!s.preloads[i]) {
      s.done[i].set_value();
    } else {
      s.threads.start_or_run(work);
    }
  }
}

PreloadsUnderWay::~PreloadsUnderWay() {
  try {
    state_->threads.wait();
  } catch (...) {  // NOLINT(bugprone-empty-catch): run_one_preload lets nothing through
  }
}

void PreloadsUnderWay::wait(std::size_t i) const { state_->ready.at(i).wait(); }

void judge_smoke(SmokeOutcome& o, const std::vector<double>& got, const PreparedSmoke& p) {
  const SampleComparison c = compare_with_sample(got, p.reference);
  o.ok = false;
  if (c.non_finite > 0) {
    o.error_kind = ErrorKind::wrong_result;
    o.error = "wrong result: the output contains NaN or Inf";
    return;
  }
  o.rel_error = c.rel_error;
  if (c.out_of_bounds > 0) {
    o.error_kind = ErrorKind::wrong_result;
    o.error = fmt::format(
        "wrong result: {} of the output's values exceed twice what their row of A and column of "
        "B can make (|C_ij| <= |A_i| |B_:j|)",
        c.out_of_bounds);
    return;
  }
  o.ok = std::isfinite(c.rel_error) && c.rel_error <= o.tolerance;
  if (!o.ok) {
    o.error_kind = ErrorKind::wrong_result;
    o.error = fmt::format("wrong result: relative error {:.3g} exceeds the tolerance {:.3g}",
                          c.rel_error, o.tolerance);
  }
}

SmokeOutcome execute_smoke(const PreparedSmoke& p, const Target& target) {
  SmokeOutcome o = p.outcome;
  if (!p.ready) return o;
  if (std::string problem = kernel_problem(p.mode, *target.torch, target.device);
      !problem.empty()) {
    o.error_kind = ErrorKind::not_run;
    o.error = problem;
    return o;
  }
  o.method = kernel_method(p.mode, o.method, *target.torch, target.device);
  try {
    const Gemm gemm = device_gemm(p.mode, p.operands, target);
    // One untimed run pays for library start-up (cuBLAS workspaces, kernel loading); the timed
    // one is the one checked.
    gemm();
    target.synchronize();
    const auto start = Clock::now();
    const Tensor c = gemm();
    target.synchronize();
    o.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    o.ran = true;
    judge_smoke(o, download_values(c), p);
  } catch (const std::exception& e) {
    record_failure(o, e);
  }
  return o;
}

}  // namespace precision_probe::engine
