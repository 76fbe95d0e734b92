// Throughput per precision, measured as a GPU benchmark should be: random inputs (never zeros,
// which some hardware multiplies faster), several input sets used in turn so that no run re-reads
// a cache, warm-up first, device events around each GEMM, the median reported. On GPUs twice: at
// boost clocks right after warm-up (the datasheet's condition), and after a second of continuous
// load (what a long run gets under the power limit).

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "engine/engine.hpp"
#include "engine/error_text.hpp"
#include "engine/checks/kernels.hpp"

namespace precision_probe::engine {

at::Generator seeded_generator(const Target& target, std::uint64_t seed) {
  at::Generator gen = target.cuda ? at::globalContext().defaultGenerator(target.device)
                                  : at::detail::createCPUGenerator(seed);
  if (target.cuda) {
    const std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_current_seed(seed);
  }
  return gen;
}

std::vector<double> time_calls_on_cpu(int warmup, int reps, const std::function<void(int)>& call) {
  for (int i = 0; i < warmup; ++i) call(i);
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    call(warmup + i);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  return ms;
}

namespace {

constexpr double kSlowCallMs = 200.0;  // a call this slow gets three repetitions and one figure
constexpr int kGpuReps = 20;  // timed calls on a GPU: at most, and for the sustained figure
constexpr int kMinGpuReps = 8;
constexpr double kFirstFigureMs = 30.0;  // the load the first figure's timed calls fill

double median_of(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return ms.size() % 2 == 1 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
}

// Makes the inputs of `mode` (fresh random data from `seed`) and calls `measure(call)`, where
// call(i) runs one GEMM on the i-th input set in turn. What a call needs besides its operands is
// made beforehand (fp8's and fp4's scales), so that nothing but the GEMM runs between the events.
template <typename Measure>
void with_gemm(Mode mode, const Target& target, std::int64_t size, std::uint64_t seed,
               Measure&& measure) {
  const Float32PrecisionScope precision(mode == Mode::tf32);
  at::Generator gen = seeded_generator(target, seed);
  // Three input sets on a GPU (each larger than its L2 at the default size), two on a CPU;
  // everything a call needs (scales) made with them, so that only the GEMM runs between events.
  const int sets = target.cuda ? 3 : 2;
  std::vector<Gemm> gemms;
  gemms.reserve(static_cast<std::size_t>(sets));
  for (int i = 0; i < sets; ++i) gemms.push_back(random_gemm(mode, target, size, gen));
  const std::function<void(int)> call = [&gemms](int i) {
    gemms[static_cast<std::size_t>(i) % gemms.size()]();
  };
  synchronize(target);
  measure(call);
}

double tflops_of(std::int64_t size, double ms) {
  return 2.0 * std::pow(static_cast<double>(size), 3.0) / (ms * 1e-3) / 1e12;
}

// What a benchmark of size n holds on the device: the rotated input sets, the output, the bf16
// operands fp8's are made from, and room for cuBLAS's workspace.
double gemm_bytes(Mode mode, std::int64_t n) {
  const double elements = static_cast<double>(n) * static_cast<double>(n);
  constexpr double kSets = 3.0;
  constexpr double kWorkspace = 256.0 * 1024 * 1024;
  return elements * (kSets * 2.0 * operand_bytes(mode) + output_bytes(mode) + 2.0 * 2.0) +
         kWorkspace;
}

// The largest size up to `size` (in steps of 256) whose benchmark fits in 90 % of `free` bytes;
// 0 when not even 256 does.
std::int64_t fit_to_memory(Mode mode, std::int64_t size, std::int64_t free) {
  const double budget = 0.9 * static_cast<double>(free);
  std::int64_t n = size;
  while (n > 256 && gemm_bytes(mode, n) > budget)
    n = std::max<std::int64_t>(256, (n - 1) / 256 * 256);
  return gemm_bytes(mode, n) <= budget ? n : 0;
}

// A GPU that was just at full load is held at lower clocks by its power limit for a while (on an
// H200, half a second of rest was not always enough; two seconds were): a rest before each
// measurement lets it start where the others did.
void rest(const Target& target, std::chrono::milliseconds how_long) {
  if (target.cuda) std::this_thread::sleep_for(how_long);
}

}  // namespace

BenchOutcome run_bench(Mode mode, const Target& target, std::int64_t size, std::uint64_t seed) {
  BenchOutcome o;
  size = bench_size_for(mode, size);
  o.size = size;
  o.timer = target.cuda ? "cuda events" : "steady clock";
  std::string why;
  if (!available_in_this_libtorch(mode, target, why)) {
    o.error_kind = ErrorKind::not_run;
    o.error = why;
    return o;
  }
  if (const auto free = free_device_memory(target)) {
    // Sized to what the GPU has free: other processes may hold most of it.
    const double free_gib = static_cast<double>(*free) / (1024.0 * 1024.0 * 1024.0);
    const std::int64_t fitted = fit_to_memory(mode, size, *free);
    if (fitted == 0) {
      o.error_kind = ErrorKind::unavailable;
      o.error =
          fmt::format("not enough free GPU memory for a benchmark ({:.2f} GiB free)", free_gib);
      return o;
    }
    if (fitted < size) {
      o.note = fmt::format("sized to the free GPU memory: {} instead of {} ({:.1f} GiB free)",
                           fitted, size, free_gib);
      size = fitted;
      o.size = size;
    }
  }
  try {
    with_gemm(mode, target, size, seed, [&](const std::function<void(int)>& call) {
      rest(target, std::chrono::milliseconds(2000));
      // One untimed call says how long a call takes: a slow one (a CPU, an emulated precision)
      // gets fewer repetitions so that the benchmark stays within a few seconds. On a GPU the
      // timed calls fill about 30 ms, within the time a GPU holds its first clocks before its
      // power limit acts (docs/performance.md, "Why the method matters"). The call also pays
      // one-off costs (kernel loading, clocks rising from idle), so it errs towards fewer calls,
      // never below 8.
      const auto first = std::chrono::steady_clock::now();
      call(0);
      synchronize(target);
      const double first_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - first)
              .count();
      if (first_ms > kSlowCallMs) {
        o.reps = 3;
      } else if (target.cuda) {
        o.reps = std::clamp(static_cast<int>(kFirstFigureMs / first_ms), kMinGpuReps, kGpuReps);
      } else {
        o.reps = 5;
      }
      // Right after warm-up (three calls queued back to back, the timed ones behind them): the
      // clocks have risen (within milliseconds) and no power or thermal limit has acted yet; the
      // datasheet's peak assumes these clocks.
      o.ms = median_of(
          time_calls(target, target.cuda ? 3 : 1, std::chrono::milliseconds(0), o.reps, call));
    });
    o.tflops = tflops_of(size, *o.ms);
    o.ran = true;
    o.ok = *o.ms > 0.0;
    if (!o.ok) {
      o.error_kind = ErrorKind::runtime;
      o.error = "the timer measured nothing";
    }
  } catch (const std::exception& e) {
    o.error = error_text(e);
    o.error_kind = classify_error(o.error);
  }
  return o;
}

void measure_sustained(Mode mode, const Target& target, std::uint64_t seed, BenchOutcome& o) {
  if (!target.cuda || !o.ok || *o.ms > kSlowCallMs) return;  // slow calls: one figure is enough
  try {
    with_gemm(mode, target, o.size, seed, [&](const std::function<void(int)>& call) {
      rest(target, std::chrono::milliseconds(500));  // the load below sets the state anyway
      // Under continuous load: an H200 at full tensor-core load reaches its power limit within a
      // few hundred milliseconds and settles at lower clocks.
      o.sustained_ms =
          median_of(time_calls(target, 0, std::chrono::milliseconds(1000), kGpuReps, call));
    });
    o.sustained_tflops = tflops_of(o.size, *o.sustained_ms);
  } catch (const std::exception& e) {
    // The first figure stands; this one is informative.
    trace(std::string("sustained measurement failed: ") + error_text(e));
  }
}

}  // namespace precision_probe::engine
