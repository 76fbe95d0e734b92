// Throughput per precision, measured as a GPU benchmark should be: random inputs (never zeros,
// which some hardware multiplies faster), several input sets used in turn so that no run re-reads
// a cache, warm-up first, CUDA events on LibTorch's current stream around each GEMM, the median
// reported. On GPUs twice: at boost clocks right after warm-up (the datasheet's condition), and
// after a second of continuous load (what a long run gets under the power limit).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "trace/trace.hpp"
#include "engine/checks/checks.hpp"

namespace precision_probe::engine {

namespace {

constexpr double kSlowCallMs = 200.0;  // a call this slow gets three repetitions and one figure
constexpr int kGpuReps = 20;  // timed calls on a GPU: at most, and for the sustained figure
constexpr int kMinGpuReps = 8;
constexpr double kFirstFigureMs = 30.0;  // the load the first figure's timed calls fill

double median_of(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return ms.size() % 2 == 1 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
}

// Makes the inputs of `mode` and calls `measure(call)`, where call(i) runs one GEMM on the i-th
// input set in turn. What a call needs besides its operands is made beforehand (fp8's and fp4's
// scales), so that nothing but the GEMM runs between the events.
template <typename Measure>
void with_gemm(Mode mode, const Target& target, std::int64_t size, Measure&& measure) {
  // Three input sets on a GPU (each larger than its L2 at the default size), two on a CPU.
  const int sets = target.on_gpu() ? 3 : 2;
  std::vector<Gemm> gemms;
  gemms.reserve(static_cast<std::size_t>(sets));
  for (int i = 0; i < sets; ++i) gemms.push_back(random_gemm(mode, target, size));
  const std::function<void(int)> call = [&gemms](int i) {
    gemms[static_cast<std::size_t>(i) % gemms.size()]();
  };
  target.synchronize();
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
  while (n > 256 && gemm_bytes(mode, n) > budget) {
    n = std::max<std::int64_t>(256, (n - 1) / 256 * 256);
  }
  return gemm_bytes(mode, n) <= budget ? n : 0;
}

// A GPU that was just at full load is held at lower clocks by its power limit for a while (on an
// H200, half a second of rest was not always enough; two seconds were): a rest before each
// measurement lets it start where the others did.
void rest(const Target& target, std::chrono::milliseconds how_long) {
  if (target.on_gpu()) std::this_thread::sleep_for(how_long);
}

// Sizes the benchmark to what the GPU has free (other processes may hold most of it); false when
// not even the smallest fits.
bool fit(Mode mode, const Target& target, BenchOutcome& o) {
  const auto free = target.on_gpu() ? target.cuda->free_memory() : std::nullopt;
  if (!free) return true;
  const double free_gib = static_cast<double>(*free) / (1024.0 * 1024.0 * 1024.0);
  const std::int64_t fitted = fit_to_memory(mode, o.size, *free);
  if (fitted == 0) {
    o.error_kind = ErrorKind::unavailable;
    o.error = fmt::format("not enough free GPU memory for a benchmark ({:.2f} GiB free)", free_gib);
    return false;
  }
  if (fitted < o.size) {
    o.note = fmt::format("sized to the free GPU memory: {} instead of {} ({:.1f} GiB free)", fitted,
                         o.size, free_gib);
    o.size = fitted;
  }
  return true;
}

}  // namespace

BenchOutcome run_bench(Mode mode, const Target& target, std::int64_t size) {
  BenchOutcome o;
  o.size = bench_size_for(mode, size);
  o.timer = target.on_gpu() ? "cuda events" : "steady clock";
  if (std::string problem = kernel_problem(mode, *target.torch, target.device); !problem.empty()) {
    o.error_kind = ErrorKind::not_run;
    o.error = problem;
    return o;
  }
  if (!fit(mode, target, o)) return o;
  try {
    with_gemm(mode, target, o.size, [&](const std::function<void(int)>& call) {
      rest(target, std::chrono::milliseconds(2000));
      // One untimed call says how long a call takes: a slow one (a CPU, an emulated precision)
      // gets fewer repetitions so that the benchmark stays within a few seconds. On a GPU the
      // timed calls fill about 30 ms, within the time a GPU holds its first clocks before its
      // power limit acts (docs/performance.md, "Why the method matters"). The call also pays
      // one-off costs (kernel loading, clocks rising from idle), so it errs towards fewer calls,
      // never below 8.
      const auto first = std::chrono::steady_clock::now();
      call(0);
      target.synchronize();
      const double first_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - first)
              .count();
      if (first_ms > kSlowCallMs) {
        o.reps = 3;
      } else if (target.on_gpu()) {
        o.reps = std::clamp(static_cast<int>(kFirstFigureMs / first_ms), kMinGpuReps, kGpuReps);
      } else {
        o.reps = 5;
      }
      // Right after warm-up (three calls queued back to back, the timed ones behind them): the
      // clocks have risen and no power or thermal limit has acted yet.
      o.ms = median_of(
          time_calls(target, target.on_gpu() ? 3 : 1, std::chrono::milliseconds(0), o.reps, call));
    });
    o.tflops = tflops_of(o.size, *o.ms);
    o.ran = true;
    o.ok = *o.ms > 0.0;
    if (!o.ok) {
      o.error_kind = ErrorKind::runtime;
      o.error = "the timer measured nothing";
    }
  } catch (const std::exception& e) {
    record_failure(o, e);
  }
  return o;
}

void measure_sustained(Mode mode, const Target& target, BenchOutcome& o) {
  if (!target.on_gpu() || !o.ok || *o.ms > kSlowCallMs) return;  // slow calls: one figure
  try {
    with_gemm(mode, target, o.size, [&](const std::function<void(int)>& call) {
      rest(target, std::chrono::milliseconds(500));  // the load below sets the state anyway
      // Under continuous load: an H200 at full tensor-core load reaches its power limit within a
      // few hundred milliseconds and settles at lower clocks.
      o.sustained_ms =
          median_of(time_calls(target, 0, std::chrono::milliseconds(1000), kGpuReps, call));
    });
    o.sustained_tflops = tflops_of(o.size, *o.sustained_ms);
  } catch (const std::exception& e) {
    // The first figure stands; this one is informative.
    trace(std::string("sustained measurement failed: ") + e.what());
  }
}

}  // namespace precision_probe::engine
