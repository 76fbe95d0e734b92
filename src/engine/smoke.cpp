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

#include "engine.hpp"
#include "error_text.hpp"

namespace precision_probe::engine {

namespace {

using Clock = std::chrono::steady_clock;

#if PP_TORCH_AT_LEAST(2, 8)
// FP4 e2m1 codes 0..7 (bit 3 is the sign); every 4-bit pattern is a finite number.
at::Tensor decode_e2m1(const at::Tensor& packed_rows) {
  static const double kValues[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  const at::Tensor bytes = packed_rows.to(at::kLong);
  const at::Tensor lo = bytes.bitwise_and(0xF);
  const at::Tensor hi = bytes.bitwise_right_shift(4).bitwise_and(0xF);
  const at::Tensor table = at::tensor(std::vector<double>(kValues, kValues + 8), at::kDouble);
  auto decode = [&table](const at::Tensor& code) {
    const at::Tensor magnitude =
        table.index_select(0, code.bitwise_and(7).flatten()).view(code.sizes());
    return at::where(code.bitwise_and(8).ne(0), magnitude.neg(), magnitude);
  };
  // Element 2i is the low nibble, 2i+1 the high one.
  return at::stack({decode(lo), decode(hi)}, /*dim=*/-1).flatten(-2);
}
#endif

// Fills the inputs of `p` (on the CPU) and returns the float64 values they hold: a [m,k], b [k,n].
std::pair<at::Tensor, at::Tensor> make_inputs(PreparedSmoke& p, std::int64_t m, std::int64_t n,
                                              std::int64_t k, std::uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  const at::Tensor a64 = at::randn({m, k}, gen, f64);
  const at::Tensor b64 = at::randn({k, n}, gen, f64);
  auto quantise = [&](at::ScalarType dtype) {
    p.a = a64.to(dtype);
    p.b = b64.to(dtype);
    return std::make_pair(p.a.to(at::kDouble), p.b.to(at::kDouble));
  };
  switch (p.mode) {
    case Mode::fp32: p.outcome.method = "at::mm float32, TF32 off"; return quantise(at::kFloat);
    case Mode::tf32:
      p.outcome.method = "at::mm float32, TF32 on (float32 matmul precision 'high')";
      return quantise(at::kFloat);
    case Mode::fp16: p.outcome.method = "at::mm float16"; return quantise(at::kHalf);
    case Mode::bf16: p.outcome.method = "at::mm bfloat16"; return quantise(at::kBFloat16);
#if PP_TORCH_AT_LEAST(2, 4)
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2: {
      // e5m2 x e5m2 is not allowed: e5m2 (the gradient format) takes A, e4m3 takes B.
      const at::ScalarType a_type =
          p.mode == Mode::fp8_e4m3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
      p.a = a64.to(a_type);
      p.b = b64.t().contiguous().to(at::kFloat8_e4m3fn);  // [n, k]: column-major B once transposed
      p.b_transposed = true;
      p.outcome.method = p.mode == Mode::fp8_e4m3 ? "at::_scaled_mm e4m3 x e4m3 -> bf16"
                                                  : "at::_scaled_mm e5m2 x e4m3 -> bf16";
      return {p.a.to(at::kDouble), p.b.to(at::kDouble).t()};
    }
#endif
#if PP_TORCH_AT_LEAST(2, 8)
    case Mode::fp4: {
      // NVFP4: random e2m1 codes (every code is finite), block-16 e4m3 scales all 1.0, so the
      // reference is the plain product of the decoded values.
      const auto u8 = at::TensorOptions().dtype(at::kByte);
      p.a = at::randint(0, 256, {m, k / 2}, gen, u8);
      p.b = at::randint(0, 256, {n, k / 2}, gen, u8);
      p.b_transposed = true;
      p.outcome.method = "at::_scaled_mm nvfp4 (e2m1, block-16 e4m3 scales) -> bf16";
      return {decode_e2m1(p.a), decode_e2m1(p.b).t()};
    }
#endif
    default: throw std::logic_error("no smoke test for this mode in this LibTorch");
  }
}

}  // namespace

at::Tensor matmul(Mode mode, const at::Tensor& a, const at::Tensor& b,
                  [[maybe_unused]] const Target& target) {
  switch (mode) {
#if PP_TORCH_AT_LEAST(2, 4)
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2: {
      const at::Tensor one =
          at::ones({}, at::TensorOptions().dtype(at::kFloat).device(target.device));
      return at::_scaled_mm(a, b, one, one, {}, {}, at::kBFloat16);
    }
#endif
#if PP_TORCH_AT_LEAST(2, 8)
    case Mode::fp4: {
      auto round_up = [](std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; };
      const std::int64_t k = a.size(1) * 2;
      auto scales = [&](std::int64_t rows) {
        // 0x38 is 1.0 in e4m3; with every scale equal, the swizzled layout does not matter.
        return at::full({round_up(rows, 128) * round_up(k / 16, 4)}, 0x38,
                        at::TensorOptions().dtype(at::kByte).device(target.device))
            .view(at::kFloat8_e4m3fn);
      };
      return at::_scaled_mm(a, b, scales(a.size(0)), scales(b.size(1)), {}, {}, at::kBFloat16);
    }
#endif
    default: return at::mm(a, b);
  }
}

bool available_in_this_libtorch(Mode mode, std::string& why) {
  switch (mode) {
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2:
#if !PP_TORCH_AT_LEAST(2, 4)
      why = "this LibTorch (" TORCH_VERSION ") has no FP8 _scaled_mm with the 2.4+ signature";
      return false;
#else
      return true;
#endif
    case Mode::fp4:
#if !PP_TORCH_AT_LEAST(2, 8)
      why = "this LibTorch (" TORCH_VERSION ") has no FP4 (float4_e2m1fn_x2) matmul; it needs 2.8+";
      return false;
#else
      return true;
#endif
    case Mode::amp_fp16:
    case Mode::amp_bf16: why = "not a matmul precision"; return false;
    default: return true;
  }
}

PreparedSmoke prepare_smoke(Mode mode, const Target& target, std::uint64_t seed) {
  PreparedSmoke p;
  p.mode = mode;
  SmokeOutcome& o = p.outcome;
  o.m = o.n = o.k = target.cuda ? 256 : 128;
  o.tolerance = smoke_tolerance(mode);
  std::string why;
  if (!available_in_this_libtorch(mode, why)) {
    o.error_kind = ErrorKind::not_run;
    o.error = why;
    return p;
  }
  if (const std::string reason = unusable_reason(target); !reason.empty()) {
    const ErrorKind kind = classify_error(reason);
    o.error_kind = kind == ErrorKind::runtime ? ErrorKind::unavailable : kind;
    o.error = reason;
    return p;
  }
  try {
    const auto [a_ref, b_ref] = make_inputs(p, o.m, o.n, o.k, seed);
    p.reference = at::mm(a_ref, b_ref);
    p.ready = true;
  } catch (const std::exception& e) {
    o.error = error_text(e);
    o.error_kind = classify_error(o.error);
  }
  return p;
}

namespace {

// The prepared inputs on the device, in the layout the matmul wants.
std::pair<at::Tensor, at::Tensor> device_operands(const PreparedSmoke& p, const Target& target) {
  at::Tensor a = p.a.to(target.device);
  at::Tensor b = p.b.to(target.device);
#if PP_TORCH_AT_LEAST(2, 8)
  if (p.mode == Mode::fp4) {
    a = a.view(at::kFloat4_e2m1fn_x2);
    b = b.view(at::kFloat4_e2m1fn_x2);
  }
#endif
  if (p.b_transposed) b = b.t();
  return {a, b};
}

}  // namespace

std::vector<Preload> smoke_preloads(const std::vector<PreparedSmoke>& prepared,
                                    const Target& target) {
  std::vector<Preload> preloads;
  if (!target.cuda) return preloads;
  for (const PreparedSmoke& p : prepared) {
    if (!p.ready || p.mode == Mode::tf32) continue;
    preloads.emplace_back([&p, &target] {
      const auto [a, b] = device_operands(p, target);
      matmul(p.mode, a, b, target);
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
    const auto [a, b] = device_operands(p, target);
    // One untimed run pays for library start-up (cuBLAS workspaces, kernel loading); the timed
    // one is the one checked.
    trace("  inputs on the device");
    matmul(p.mode, a, b, target);
    synchronize(target);
    trace("  untimed run");
    const auto start = Clock::now();
    const at::Tensor c = matmul(p.mode, a, b, target);
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
