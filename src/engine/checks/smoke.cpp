// Matmul smoke tests: does this precision compute the right numbers on this device?
//
// Inputs are drawn in float64 on the CPU from the run's seed, quantised to the precision under
// test, and the reference is the float64 product of the *quantised* inputs, computed on the CPU
// (never by the device under test). So the error measured is the device's: accumulation and
// output rounding. The tolerance is that rounding's budget with margin; NaN never passes.

#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "engine/engine.hpp"
#include "engine/error_text.hpp"
#include "engine/checks/kernels.hpp"

namespace precision_probe::engine {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

PreparedSmoke prepare_smoke(Mode mode, const Target& target, std::uint64_t seed) {
  PreparedSmoke p;
  p.mode = mode;
  SmokeOutcome& o = p.outcome;
  const Shape shape = smoke_shape(mode, target);
  o.m = shape.m;
  o.k = shape.k;
  o.n = shape.n;
  o.tolerance = smoke_tolerance(mode);
  if (const std::string reason = unusable_reason(target); !reason.empty()) {
    const ErrorKind kind = classify_error(reason);
    o.error_kind = kind == ErrorKind::runtime ? ErrorKind::unavailable : kind;
    o.error = reason;
    return p;
  }
  std::string why;
  if (!available_in_this_libtorch(mode, target, why)) {
    // The stack lacks it: unsupported, saying which layer (a training mode is simply not run here).
    o.error_kind = is_amp_mode(mode) ? ErrorKind::not_run : ErrorKind::not_supported;
    o.error = why;
    return p;
  }
  try {
    at::Generator gen = at::detail::createCPUGenerator(seed);
    const auto f64 = at::TensorOptions().dtype(at::kDouble);
    const at::Tensor a64 = at::randn({o.m, o.k}, gen, f64);
    const at::Tensor b64 = at::randn({o.k, o.n}, gen, f64);
    p.operands = quantise_operands(mode, a64, b64);
    o.method = p.operands.method;
    // int8's values are int64: its reference is exact, then held in float64 (|x| < 2^53).
    p.reference = at::mm(p.operands.a_values, p.operands.b_values).to(at::kDouble);
    p.ready = true;
  } catch (const std::exception& e) {
    o.error = error_text(e);
    o.error_kind = classify_error(o.error);
  }
  return p;
}

std::vector<Preload> smoke_preloads(const std::vector<PreparedSmoke>& prepared,
                                    const Target& target) {
  std::vector<Preload> preloads;
  if (!target.cuda) return preloads;
  for (const PreparedSmoke& p : prepared) {
    if (!p.ready || p.mode == Mode::tf32) continue;
    preloads.emplace_back([&p, &target] {
      device_gemm(p.mode, p.operands, target)();
      synchronize(target);  // an error of the kernel surfaces here, not in another check
    });
  }
  return preloads;
}

void run_at_once(std::size_t count, const std::function<void(std::size_t)>& task) {
  std::vector<std::thread> threads;
  threads.reserve(count);
  for (std::size_t i = 0; i + 1 < count; ++i) threads.emplace_back(task, i);
  if (count > 0) task(count - 1);
  for (std::thread& t : threads) t.join();
}

void run_preloads(const std::vector<Preload>& preloads) {
  run_at_once(preloads.size(), [&preloads](std::size_t i) {
    try {
      preloads[i]();
    } catch (const std::exception&) {
      // The check that runs the same operation meets the error and reports it.
    }
    trace(fmt::format("  preload {} done", i));
  });
}

SmokeOutcome execute_smoke(const PreparedSmoke& p, const Target& target) {
  SmokeOutcome o = p.outcome;
  if (!p.ready) return o;
  try {
    const Float32PrecisionScope precision(p.mode == Mode::tf32);
    const Gemm gemm = device_gemm(p.mode, p.operands, target);
    // One untimed run pays for library start-up (cuBLAS workspaces, kernel loading); the timed
    // one is the one checked.
    trace("  inputs on the device");
    gemm();
    synchronize(target);
    trace("  untimed run");
    const auto start = Clock::now();
    const at::Tensor c = gemm();
    synchronize(target);
    o.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    o.ran = true;

    const at::Tensor c64 = c.to(at::kCPU).to(at::kDouble);
    trace("  timed run, result on the CPU");
    if (!at::isfinite(c64).all().item<bool>()) {
      o.error_kind = ErrorKind::wrong_result;
      o.error = "wrong result: the output contains NaN or Inf";
      return o;
    }
    const double rel =
        (c64 - p.reference).norm().item<double>() / p.reference.norm().item<double>();
    o.rel_error = rel;
    o.ok = std::isfinite(rel) && rel <= o.tolerance;
    if (!o.ok) {
      o.error_kind = ErrorKind::wrong_result;
      o.error = fmt::format("wrong result: relative error {:.3g} exceeds the tolerance {:.3g}", rel,
                            o.tolerance);
    }
  } catch (const std::exception& e) {
    o.error = error_text(e);
    o.error_kind = classify_error(o.error);
  }
  return o;
}

SmokeOutcome run_smoke(Mode mode, const Target& target, std::uint64_t seed) {
  return execute_smoke(prepare_smoke(mode, target, seed), target);
}

}  // namespace precision_probe::engine
