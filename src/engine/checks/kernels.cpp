// The kernel of each matmul mode (kernels.hpp). Every switch here is over the mode table's enum
// without a default: a mode added to the table and forgotten here does not compile.

#include "engine/checks/kernels.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace precision_probe::engine {

namespace {

[[noreturn]] void no_kernel(Mode mode) {
  throw std::logic_error(std::string(mode_key(mode)) + " has no matmul kernel" +
                         (is_amp_mode(mode) ? " (a training mode)" : " in this LibTorch"));
}

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

// NVFP4's block scales: one e4m3 scale per 16 elements of K, in the padded (128 x 4) layout
// cuBLAS wants; all 1.0 (0x38), so that the swizzle does not matter.
at::Tensor unit_block_scales(std::int64_t rows, std::int64_t k, const at::Device& device) {
  auto round_up = [](std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; };
  return at::full({round_up(rows, 128) * round_up(k / 16, 4)}, 0x38,
                  at::TensorOptions().dtype(at::kByte).device(device))
      .view(at::kFloat8_e4m3fn);
}
#endif

QuantisedOperands cast_to(at::ScalarType dtype, const at::Tensor& a64, const at::Tensor& b64,
                          std::string method) {
  QuantisedOperands q;
  q.a = a64.to(dtype);
  q.b = b64.to(dtype);
  q.a_values = q.a.to(at::kDouble);
  q.b_values = q.b.to(at::kDouble);
  q.method = std::move(method);
  return q;
}

}  // namespace

QuantisedOperands quantise_operands(Mode mode, const at::Tensor& a64, const at::Tensor& b64,
                                    [[maybe_unused]] at::Generator& gen) {
  switch (mode) {
    case Mode::fp32: return cast_to(at::kFloat, a64, b64, "at::mm float32, TF32 off");
    case Mode::tf32:
      return cast_to(at::kFloat, a64, b64,
                     "at::mm float32, TF32 on (float32 matmul precision 'high')");
    case Mode::fp16: return cast_to(at::kHalf, a64, b64, "at::mm float16");
    case Mode::bf16: return cast_to(at::kBFloat16, a64, b64, "at::mm bfloat16");
    case Mode::fp8_e4m3:  // NOLINT(bugprone-branch-clone): alike only before LibTorch 2.4
    case Mode::fp8_e5m2: {
#if PP_TORCH_AT_LEAST(2, 4)
      // e5m2 x e5m2 is not allowed: e5m2 (the gradient format) takes A, e4m3 takes B.
      QuantisedOperands q;
      q.a = a64.to(mode == Mode::fp8_e4m3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2);
      q.b = b64.t().contiguous().to(at::kFloat8_e4m3fn);  // [n, k]: column-major B once transposed
      q.b_transposed = true;
      q.a_values = q.a.to(at::kDouble);
      q.b_values = q.b.to(at::kDouble).t();
      q.method = mode == Mode::fp8_e4m3 ? "at::_scaled_mm e4m3 x e4m3 -> bf16"
                                        : "at::_scaled_mm e5m2 x e4m3 -> bf16";
      return q;
#else
      no_kernel(mode);
#endif
    }
    case Mode::fp4: {
#if PP_TORCH_AT_LEAST(2, 8)
      // NVFP4: random e2m1 codes (every code is finite), block-16 e4m3 scales all 1.0, so the
      // reference is the plain product of the decoded values.
      const auto u8 = at::TensorOptions().dtype(at::kByte);
      const std::int64_t m = a64.size(0);
      const std::int64_t k = a64.size(1);
      const std::int64_t n = b64.size(1);
      QuantisedOperands q;
      q.a = at::randint(0, 256, {m, k / 2}, gen, u8);
      q.b = at::randint(0, 256, {n, k / 2}, gen, u8);
      q.b_transposed = true;
      q.a_values = decode_e2m1(q.a);
      q.b_values = decode_e2m1(q.b).t();
      q.method = "at::_scaled_mm nvfp4 (e2m1, block-16 e4m3 scales) -> bf16";
      return q;
#else
      no_kernel(mode);
#endif
    }
    case Mode::amp_fp16:
    case Mode::amp_bf16: no_kernel(mode);
  }
  no_kernel(mode);
}

Gemm::Gemm(Mode mode, at::Tensor a, at::Tensor b, [[maybe_unused]] const Target& target)
    : mode_(mode), a_(std::move(a)), b_(std::move(b)) {
  switch (mode) {
    case Mode::fp32:
    case Mode::tf32:
    case Mode::fp16:
    case Mode::bf16: return;
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2:
      scale_a_ = at::ones({}, at::TensorOptions().dtype(at::kFloat).device(target.device));
      scale_b_ = scale_a_;
      return;
    case Mode::fp4:  // NOLINT(bugprone-branch-clone): alike only before LibTorch 2.4
#if PP_TORCH_AT_LEAST(2, 8)
      if (a_.scalar_type() == at::kByte) a_ = a_.view(at::kFloat4_e2m1fn_x2);
      if (b_.scalar_type() == at::kByte) b_ = b_.view(at::kFloat4_e2m1fn_x2);
      scale_a_ = unit_block_scales(a_.size(0), a_.size(1) * 2, target.device);
      scale_b_ = unit_block_scales(b_.size(1), a_.size(1) * 2, target.device);
      return;
#else
      no_kernel(mode);
#endif
    case Mode::amp_fp16:
    case Mode::amp_bf16: no_kernel(mode);
  }
}

at::Tensor Gemm::operator()() const {
  switch (mode_) {
    case Mode::fp32:
    case Mode::tf32:
    case Mode::fp16:
    case Mode::bf16: return at::mm(a_, b_);
    case Mode::fp8_e4m3:  // NOLINT(bugprone-branch-clone): alike only before LibTorch 2.4
    case Mode::fp8_e5m2:
    case Mode::fp4:
#if PP_TORCH_AT_LEAST(2, 4)
      return at::_scaled_mm(a_, b_, scale_a_, scale_b_, {}, {}, at::kBFloat16);
#else
      no_kernel(mode_);
#endif
    case Mode::amp_fp16:
    case Mode::amp_bf16: no_kernel(mode_);
  }
  no_kernel(mode_);
}

Gemm device_gemm(Mode mode, const QuantisedOperands& operands, const Target& target) {
  at::Tensor a = operands.a.to(target.device);
  at::Tensor b = operands.b.to(target.device);
#if PP_TORCH_AT_LEAST(2, 8)
  if (mode == Mode::fp4) {  // the packed codes as fp4, before b's transpose
    a = a.view(at::kFloat4_e2m1fn_x2);
    b = b.view(at::kFloat4_e2m1fn_x2);
  }
#endif
  if (operands.b_transposed) b = b.t();
  return Gemm(mode, a, b, target);
}

Gemm random_gemm(Mode mode, const Target& target, std::int64_t n, at::Generator& gen) {
  const auto on = at::TensorOptions().device(target.device);
  auto randn = [&](at::ScalarType t) { return at::randn({n, n}, gen, on.dtype(t)); };
  switch (mode) {
    case Mode::fp32:
    case Mode::tf32: return Gemm(mode, randn(at::kFloat), randn(at::kFloat), target);
    case Mode::fp16: return Gemm(mode, randn(at::kHalf), randn(at::kHalf), target);
    case Mode::bf16: return Gemm(mode, randn(at::kBFloat16), randn(at::kBFloat16), target);
    case Mode::fp8_e4m3:  // NOLINT(bugprone-branch-clone): alike only before LibTorch 2.4
    case Mode::fp8_e5m2: {
#if PP_TORCH_AT_LEAST(2, 4)
      const at::ScalarType a_type = mode == Mode::fp8_e4m3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
      return Gemm(mode, randn(at::kBFloat16).to(a_type),
                  randn(at::kBFloat16).to(at::kFloat8_e4m3fn).t(), target);
#else
      no_kernel(mode);
#endif
    }
    case Mode::fp4: {
#if PP_TORCH_AT_LEAST(2, 8)
      auto codes = [&] {
        return at::randint(0, 256, {n, n / 2}, gen, on.dtype(at::kByte))
            .view(at::kFloat4_e2m1fn_x2);
      };
      return Gemm(mode, codes(), codes().t(), target);
#else
      no_kernel(mode);
#endif
    }
    case Mode::amp_fp16:
    case Mode::amp_bf16: no_kernel(mode);
  }
  no_kernel(mode);
}

bool available_in_this_libtorch(Mode mode, const Target& target, std::string& why) {
  const ModeInfo& info = mode_info(mode);
  if (info.kind != ModeKind::matmul) {
    why = "not a matmul precision";
    return false;
  }
  why = missing_for(mode, {TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR},
                    target.cuda ? cuda_build_version() : std::nullopt);
  return why.empty();
}

double operand_bytes(Mode mode) {
  switch (mode) {
    case Mode::fp32:
    case Mode::tf32:
    case Mode::amp_fp16:
    case Mode::amp_bf16: return 4.0;
    case Mode::fp16:
    case Mode::bf16: return 2.0;
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2: return 1.0;
    case Mode::fp4: return 0.5;
  }
  return 4.0;
}

double output_bytes(Mode mode) { return operand_bytes(mode) >= 2.0 ? operand_bytes(mode) : 2.0; }

}  // namespace precision_probe::engine
