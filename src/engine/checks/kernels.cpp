// The kernel of each matmul mode (kernels.hpp). Every switch here is over the mode table's enum
// without a default: a mode added to the table and forgotten here does not compile. What a
// LibTorch version lacks is compiled out (PP_TORCH_AT_LEAST) and refused before it is called
// (available_in_this_libtorch reads the mode table).

#include "engine/checks/kernels.hpp"

#if PP_TORCH_AT_LEAST(2, 10)
#include <ATen/BlasBackend.h>
#endif

#include <cstring>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "common/quantise.hpp"

namespace precision_probe::engine {

namespace q = precision_probe::quantise;

namespace {

[[noreturn]] void no_kernel(Mode mode) {
  throw std::logic_error(std::string(mode_key(mode)) + " has no matmul kernel" +
                         (is_amp_mode(mode) ? " (a training mode)" : " in this LibTorch"));
}

// The quantiser recipe of each operand of a scaled mode; nullopt for the others.
struct Recipes {
  q::Recipe a, b;
};
std::optional<Recipes> recipes_of(Mode mode) {
  switch (mode) {
    case Mode::fp8_rowwise: return Recipes{q::Recipe::rowwise, q::Recipe::rowwise};
    case Mode::fp8_blockwise: return Recipes{q::Recipe::block_1x128, q::Recipe::block_128x128};
    case Mode::mxfp8: return Recipes{q::Recipe::mx_e4m3, q::Recipe::mx_e4m3};
    case Mode::nvfp4: return Recipes{q::Recipe::nv_e2m1, q::Recipe::nv_e2m1};
    case Mode::mxfp4: return Recipes{q::Recipe::mx_e2m1, q::Recipe::mx_e2m1};
    case Mode::int8: return Recipes{q::Recipe::int8_rowwise, q::Recipe::int8_rowwise};
    case Mode::fp32:
    case Mode::tf32:
    case Mode::fp16:
    case Mode::bf16:
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2:
    case Mode::amp_fp16:
    case Mode::amp_bf16: return std::nullopt;
  }
  return std::nullopt;
}

bool four_bit(Mode mode) { return mode == Mode::nvfp4 || mode == Mode::mxfp4; }

// The dtype a quantised operand's bytes are seen as on the device.
std::optional<at::ScalarType> element_type(Mode mode) {
  if (mode == Mode::int8) return at::kChar;
#if PP_TORCH_AT_LEAST(2, 8)
  if (four_bit(mode)) return at::kFloat4_e2m1fn_x2;
#endif
#if PP_TORCH_AT_LEAST(2, 5)
  return at::kFloat8_e4m3fn;
#else
  return std::nullopt;
#endif
}

template <typename T>
at::Tensor host_copy(const std::vector<T>& data, at::IntArrayRef sizes, at::ScalarType type) {
  at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(type));
  std::memcpy(t.data_ptr(), data.data(), data.size() * sizeof(T));
  return t;
}

// The scales of one operand as the call wants them (docs/precision-matrix.md, "How each recipe is
// called"); `is_a` tells A's from B's where they differ.
std::vector<HostTensor> scale_tensors(Mode mode, const q::Quantised& qz, bool is_a) {
  std::vector<HostTensor> out;
  switch (mode) {
    case Mode::fp8_rowwise:  // (M, 1) and (1, N)
      out.push_back({host_copy(qz.scales, {is_a ? qz.rows : 1, is_a ? 1 : qz.rows}, at::kFloat)});
      return out;
    case Mode::fp8_blockwise:
      if (is_a) {  // 1x128: (M, K/128) with strides (1, M)
        out.push_back(
            {host_copy(qz.scales, {qz.scale_rows, qz.scale_cols}, at::kFloat).t().contiguous(),
             std::nullopt, true});
      } else {  // 128x128: (round_up(K/128, 4), N/128) with strides (1, that), zero-padded
        out.push_back({host_copy(q::pad_columns_to_4(qz.scales, qz.scale_rows, qz.scale_cols),
                                 {qz.scale_rows, q::padded_to_4(qz.scale_cols)}, at::kFloat),
                       std::nullopt, true});
      }
      return out;
    case Mode::mxfp8:
    case Mode::mxfp4:
    case Mode::nvfp4: {  // 128x4-tile swizzled block scales (and NVFP4's tensor scale)
      const std::vector<std::uint8_t> blocked =
          q::to_blocked(qz.scale_bytes, qz.scale_rows, qz.scale_cols);
      HostTensor scales{host_copy(blocked, {static_cast<std::int64_t>(blocked.size())}, at::kByte)};
#if PP_TORCH_AT_LEAST(2, 8)
      scales.view_as = mode == Mode::nvfp4 ? at::kFloat8_e4m3fn : at::kFloat8_e8m0fnu;
#endif
      out.push_back(scales);
      if (mode == Mode::nvfp4) {
        out.push_back({at::full({}, qz.tensor_scale, at::TensorOptions().dtype(at::kFloat))});
      }
      return out;
    }
    case Mode::int8:
    case Mode::fp32:
    case Mode::tf32:
    case Mode::fp16:
    case Mode::bf16:
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2:
    case Mode::amp_fp16:
    case Mode::amp_bf16: return out;
  }
  return out;
}

std::vector<double> to_vector(const at::Tensor& t64) {
  const at::Tensor c = t64.contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

// A scaled mode: A [m, k] and B, given as [n, k], quantised by the mode's recipes; B is then seen
// as its transpose, a column-major [k, n], the layout cuBLASLt's scaled GEMMs want.
QuantisedOperands quantise_scaled(Mode mode, const Recipes& recipes, const at::Tensor& a64,
                                  const at::Tensor& b64) {
  const std::int64_t m = a64.size(0);
  const std::int64_t k = a64.size(1);
  const std::int64_t n = b64.size(1);
  const q::Quantised qa = q::quantise(recipes.a, to_vector(a64), m, k);
  const q::Quantised qb = q::quantise(recipes.b, to_vector(b64.t()), n, k);
  const std::int64_t row_bytes = four_bit(mode) ? k / 2 : k;
  const at::ScalarType values_type = mode == Mode::int8 ? at::kLong : at::kDouble;
  QuantisedOperands o;
  o.a = {host_copy(qa.codes, {m, row_bytes}, at::kByte), element_type(mode)};
  o.b = {host_copy(qb.codes, {n, row_bytes}, at::kByte), element_type(mode), true};
  o.scales_a = scale_tensors(mode, qa, true);
  o.scales_b = scale_tensors(mode, qb, false);
  o.a_values = host_copy(qa.dequantised, {m, k}, at::kDouble).to(values_type);
  o.b_values = host_copy(qb.dequantised, {n, k}, at::kDouble).to(values_type).t();
  o.method = fmt::format("{} {}", mode_info(mode).api, mode_key(mode));
  return o;
}

QuantisedOperands cast_to(at::ScalarType dtype, const at::Tensor& a64, const at::Tensor& b64,
                          std::string method) {
  QuantisedOperands o;
  o.a = {a64.to(dtype)};
  o.b = {b64.to(dtype)};
  o.a_values = o.a.stored.to(at::kDouble);
  o.b_values = o.b.stored.to(at::kDouble);
  o.method = std::move(method);
  return o;
}

}  // namespace

at::Tensor HostTensor::on(const at::Device& device) const {
  at::Tensor t = stored.to(device);
  if (view_as) t = t.view(*view_as);
  return transposed ? t.t() : t;
}

Shape smoke_shape(Mode mode, const Target& target) {
  // The scaled recipes: K of 5 blocks of 128 (the padded 128x128 layout), M and N not multiples
  // of 128 (the padded rows of the swizzled layout, a partial 128x128 tile).
  if (recipes_of(mode)) return {192, 640, 320};
  const std::int64_t n = target.cuda ? 256 : 128;
  return {n, n, n};
}

std::int64_t bench_size_for(Mode mode, std::int64_t n) {
  return recipes_of(mode) ? (n + 127) / 128 * 128 : n;
}

QuantisedOperands quantise_operands(Mode mode, const at::Tensor& a64, const at::Tensor& b64) {
  if (const auto recipes = recipes_of(mode)) return quantise_scaled(mode, *recipes, a64, b64);
  switch (mode) {
    case Mode::fp32: return cast_to(at::kFloat, a64, b64, "at::mm float32, TF32 off");
    case Mode::tf32:
      return cast_to(at::kFloat, a64, b64,
                     "at::mm float32, TF32 on (float32 matmul precision 'high')");
    case Mode::fp16: return cast_to(at::kHalf, a64, b64, "at::mm float16");
    case Mode::bf16: return cast_to(at::kBFloat16, a64, b64, "at::mm bfloat16");
    case Mode::fp8_e4m3:  // NOLINT(bugprone-branch-clone): alike only before LibTorch 2.5
    case Mode::fp8_e5m2: {
#if PP_TORCH_AT_LEAST(2, 5)
      // e5m2 x e5m2 is not allowed: e5m2 (the gradient format) takes A, e4m3 takes B.
      QuantisedOperands o;
      o.a = {a64.to(mode == Mode::fp8_e4m3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2)};
      o.b = {b64.t().contiguous().to(at::kFloat8_e4m3fn), std::nullopt, true};
      o.a_values = o.a.stored.to(at::kDouble);
      o.b_values = o.b.stored.to(at::kDouble).t();
      const at::Tensor one = at::ones({}, at::kFloat);
      o.scales_a = {{one}};
      o.scales_b = {{one}};
      o.method = mode == Mode::fp8_e4m3 ? "at::_scaled_mm e4m3 x e4m3 -> bf16"
                                        : "at::_scaled_mm e5m2 x e4m3 -> bf16";
      return o;
#else
      no_kernel(mode);
#endif
    }
    case Mode::fp8_rowwise:
    case Mode::fp8_blockwise:
    case Mode::mxfp8:
    case Mode::nvfp4:
    case Mode::mxfp4:
    case Mode::int8:
    case Mode::amp_fp16:
    case Mode::amp_bf16: no_kernel(mode);
  }
  no_kernel(mode);
}

Gemm::Gemm(Mode mode, at::Tensor a, at::Tensor b, std::vector<at::Tensor> scales_a,
           std::vector<at::Tensor> scales_b)
    : mode_(mode),
      a_(std::move(a)),
      b_(std::move(b)),
      scales_a_(std::move(scales_a)),
      scales_b_(std::move(scales_b)) {}

namespace {

#if PP_TORCH_AT_LEAST(2, 10)
// The scaled_mm_v2 recipes: at::blas::ScalingType and SwizzleType per scale tensor.
struct V2Recipe {
  std::vector<std::int64_t> scaling_a, swizzle_a, scaling_b, swizzle_b;
};
V2Recipe v2_recipe(Mode mode) {
  using at::blas::ScalingType;
  using at::blas::SwizzleType;
  auto i = [](auto e) { return static_cast<std::int64_t>(e); };
  switch (mode) {
    case Mode::fp8_blockwise:
      return {{i(ScalingType::BlockWise1x128)}, {}, {i(ScalingType::BlockWise128x128)}, {}};
    case Mode::nvfp4:
      return {{i(ScalingType::BlockWise1x16), i(ScalingType::TensorWise)},
              {i(SwizzleType::SWIZZLE_32_4_4), i(SwizzleType::NO_SWIZZLE)},
              {i(ScalingType::BlockWise1x16), i(ScalingType::TensorWise)},
              {i(SwizzleType::SWIZZLE_32_4_4), i(SwizzleType::NO_SWIZZLE)}};
    case Mode::mxfp4:
      return {{i(ScalingType::BlockWise1x32)},
              {i(SwizzleType::SWIZZLE_32_4_4)},
              {i(ScalingType::BlockWise1x32)},
              {i(SwizzleType::SWIZZLE_32_4_4)}};
    case Mode::fp32:
    case Mode::tf32:
    case Mode::fp16:
    case Mode::bf16:
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2:
    case Mode::fp8_rowwise:
    case Mode::mxfp8:
    case Mode::int8:
    case Mode::amp_fp16:
    case Mode::amp_bf16: break;
  }
  no_kernel(mode);
}
#endif

}  // namespace

at::Tensor Gemm::operator()() const {
  switch (mode_) {
    case Mode::fp32:
    case Mode::tf32:
    case Mode::fp16:
    case Mode::bf16: return at::mm(a_, b_);
    case Mode::fp8_e4m3:  // NOLINT(bugprone-branch-clone): alike only before LibTorch 2.5
    case Mode::fp8_e5m2:
    case Mode::fp8_rowwise:
    case Mode::mxfp8:
#if PP_TORCH_AT_LEAST(2, 5)
      return at::_scaled_mm(a_, b_, scales_a_.at(0), scales_b_.at(0), {}, {}, at::kBFloat16);
#else
      no_kernel(mode_);
#endif
    case Mode::fp8_blockwise:  // NOLINT(bugprone-branch-clone): alike only before LibTorch 2.10
    case Mode::nvfp4:
    case Mode::mxfp4: {
#if PP_TORCH_AT_LEAST(2, 10)
      const V2Recipe r = v2_recipe(mode_);
      return at::_scaled_mm_v2(a_, b_, scales_a_, r.scaling_a, r.swizzle_a, scales_b_, r.scaling_b,
                               r.swizzle_b, std::nullopt, at::kBFloat16);
#else
      no_kernel(mode_);
#endif
    }
    case Mode::int8:  // NOLINT(bugprone-branch-clone): alike only before LibTorch 2.4
#if PP_TORCH_AT_LEAST(2, 4)
      return at::_int_mm(a_, b_);
#else
      no_kernel(mode_);
#endif
    case Mode::amp_fp16:
    case Mode::amp_bf16: no_kernel(mode_);
  }
  no_kernel(mode_);
}

namespace {

std::vector<at::Tensor> on_device(const std::vector<HostTensor>& tensors,
                                  const at::Device& device) {
  std::vector<at::Tensor> out;
  out.reserve(tensors.size());
  for (const HostTensor& t : tensors) out.push_back(t.on(device));
  return out;
}

}  // namespace

Gemm device_gemm(Mode mode, const QuantisedOperands& operands, const Target& target) {
  return Gemm(mode, operands.a.on(target.device), operands.b.on(target.device),
              on_device(operands.scales_a, target.device),
              on_device(operands.scales_b, target.device));
}

namespace {

// Random codes of a quantised mode on the device, [rows, k] (as stored: B is [n, k]).
at::Tensor random_codes(Mode mode, std::int64_t rows, std::int64_t k, at::Generator& gen,
                        const at::TensorOptions& on) {
  if (four_bit(mode)) {  // every e2m1 code is a finite number
    return at::randint(0, 256, {rows, k / 2}, gen, on.dtype(at::kByte));
  }
  if (mode == Mode::int8) return at::randint(-128, 128, {rows, k}, gen, on.dtype(at::kChar));
#if PP_TORCH_AT_LEAST(2, 5)
  // e4m3 codes from normal data (no NaN codes), as bytes.
  return at::randn({rows, k}, gen, on.dtype(at::kFloat)).to(at::kFloat8_e4m3fn).view(at::kByte);
#else
  no_kernel(mode);
#endif
}

Gemm random_scaled_gemm(Mode mode, const Recipes& recipes, const Target& target, std::int64_t n,
                        at::Generator& gen) {
  const auto on = at::TensorOptions().device(target.device);
  auto operand = [&](bool transposed) {
    HostTensor t{random_codes(mode, n, n, gen, on), element_type(mode), transposed};
    return t.on(target.device);
  };
  at::Tensor a = operand(false);
  at::Tensor b = operand(true);
  return Gemm(
      mode, a, b,
      on_device(scale_tensors(mode, q::unit_scales(recipes.a, n, n), true), target.device),
      on_device(scale_tensors(mode, q::unit_scales(recipes.b, n, n), false), target.device));
}

}  // namespace

Gemm random_gemm(Mode mode, const Target& target, std::int64_t n, at::Generator& gen) {
  if (const auto recipes = recipes_of(mode)) {
    return random_scaled_gemm(mode, *recipes, target, n, gen);
  }
  const auto on = at::TensorOptions().device(target.device);
  auto randn = [&](at::ScalarType t) { return at::randn({n, n}, gen, on.dtype(t)); };
  switch (mode) {
    case Mode::fp32:
    case Mode::tf32: return Gemm(mode, randn(at::kFloat), randn(at::kFloat), {}, {});
    case Mode::fp16: return Gemm(mode, randn(at::kHalf), randn(at::kHalf), {}, {});
    case Mode::bf16: return Gemm(mode, randn(at::kBFloat16), randn(at::kBFloat16), {}, {});
    case Mode::fp8_e4m3:  // NOLINT(bugprone-branch-clone): alike only before LibTorch 2.5
    case Mode::fp8_e5m2: {
#if PP_TORCH_AT_LEAST(2, 5)
      const at::ScalarType a_type = mode == Mode::fp8_e4m3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
      const at::Tensor one = at::ones({}, on.dtype(at::kFloat));
      return Gemm(mode, randn(at::kBFloat16).to(a_type),
                  randn(at::kBFloat16).to(at::kFloat8_e4m3fn).t(), {one}, {one});
#else
      no_kernel(mode);
#endif
    }
    case Mode::fp8_rowwise:
    case Mode::fp8_blockwise:
    case Mode::mxfp8:
    case Mode::nvfp4:
    case Mode::mxfp4:
    case Mode::int8:
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
                    target.cuda ? cuda_build_version() : std::nullopt,
                    target.cuda ? device_capability(target) : std::nullopt);
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
    case Mode::fp8_e5m2:
    case Mode::fp8_rowwise:
    case Mode::fp8_blockwise:
    case Mode::mxfp8:
    case Mode::int8: return 1.0;
    case Mode::nvfp4:
    case Mode::mxfp4: return 0.5;
  }
  return 4.0;
}

double output_bytes(Mode mode) {
  if (mode == Mode::int8) return 4.0;  // int32
  return operand_bytes(mode) >= 2.0 ? operand_bytes(mode) : 2.0;
}

}  // namespace precision_probe::engine
