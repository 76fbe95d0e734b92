// The kernel of each matmul mode (kernels.hpp). Every switch here is over the mode table's enum
// without a default: a mode added to the table and forgotten here does not compile.

#include "engine/checks/kernels.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "engine/host/float_formats.hpp"
#include "engine/host/host_math.hpp"
#include "engine/host/quantise.hpp"
#include "engine/torch/ops.hpp"

namespace precision_probe::engine {

namespace q = precision_probe::quantise;

namespace {

[[noreturn]] void no_kernel(Mode mode) {
  throw std::logic_error(std::string(mode_key(mode)) + " has no matmul kernel");
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

// The element type of a mode's operands on the device (B's; fp8_e5m2's A is e5m2).
Scalar element_of(Mode mode) {
  switch (mode) {
    case Mode::fp32:
    case Mode::tf32: return Scalar::f32;
    case Mode::fp16: return Scalar::f16;
    case Mode::bf16: return Scalar::bf16;
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2:
    case Mode::fp8_rowwise:
    case Mode::fp8_blockwise:
    case Mode::mxfp8: return Scalar::e4m3;
    case Mode::nvfp4:
    case Mode::mxfp4: return Scalar::fp4x2;
    case Mode::int8: return Scalar::i8;
    case Mode::amp_fp16:
    case Mode::amp_bf16: break;
  }
  no_kernel(mode);
}

// One value in `scalar`'s bits, and the value those bits are.
void encode(Scalar scalar, double v, std::uint8_t* out, double& as) {
  const auto f = static_cast<float>(v);
  switch (scalar) {
    case Scalar::f32:
      std::memcpy(out, &f, 4);
      as = f;
      return;
    case Scalar::f16: {
      const std::uint16_t h = encode_fp16(f);
      std::memcpy(out, &h, 2);
      as = decode_fp16(h);
      return;
    }
    case Scalar::bf16: {
      const std::uint16_t h = encode_bf16(f);
      std::memcpy(out, &h, 2);
      as = decode_bf16(h);
      return;
    }
    case Scalar::e4m3:
      *out = q::encode_e4m3(f);
      as = q::decode_e4m3(*out);
      return;
    case Scalar::e5m2:
      *out = encode_e5m2(f);
      as = decode_e5m2(*out);
      return;
    case Scalar::f64:
    case Scalar::e8m0:
    case Scalar::fp4x2:
    case Scalar::i8:
    case Scalar::u8:
    case Scalar::i16:
    case Scalar::i32:
    case Scalar::i64:
    case Scalar::boolean: break;
  }
  throw std::logic_error("no host encoding for " + std::string(scalar_info(scalar).name));
}

// values [rows, cols] row-major in `scalar`; `column_major` lays it out as its transpose's rows
// (strides (1, rows)). `as` gets the values the bits stand for, [rows, cols] row-major.
HostTensor encoded(const std::vector<double>& values, std::int64_t rows, std::int64_t cols,
                   Scalar scalar, bool column_major, std::vector<double>& as) {
  const int bytes = scalar_info(scalar).bytes;
  HostTensor t;
  t.scalar = scalar;
  t.sizes = {rows, cols};
  t.strides = column_major ? Sizes{1, rows} : Sizes{cols, 1};
  t.bytes.resize(static_cast<std::size_t>(rows * cols * bytes));
  as.resize(static_cast<std::size_t>(rows * cols));
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::int64_t at = column_major ? j * rows + i : i * cols + j;
      encode(scalar, values[static_cast<std::size_t>(i * cols + j)],
             &t.bytes[static_cast<std::size_t>(at * bytes)],
             as[static_cast<std::size_t>(i * cols + j)]);
    }
  }
  return t;
}

template <typename T>
HostTensor host_tensor(const std::vector<T>& data, Sizes sizes, Scalar scalar, Sizes strides = {}) {
  HostTensor t;
  t.scalar = scalar;
  t.sizes = std::move(sizes);
  t.strides = strides.empty() ? contiguous_strides(t.sizes) : std::move(strides);
  t.bytes.resize(data.size() * sizeof(T));
  std::memcpy(t.bytes.data(), data.data(), t.bytes.size());
  return t;
}

std::vector<float> transposed(const std::vector<float>& m, std::int64_t rows, std::int64_t cols) {
  std::vector<float> out(m.size());
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      out[static_cast<std::size_t>(j * rows + i)] = m[static_cast<std::size_t>(i * cols + j)];
    }
  }
  return out;
}

// The scales of one operand as the call wants them (docs/precision-matrix.md, "How each recipe is
// called"); `is_a` tells A's from B's where they differ.
std::vector<HostTensor> scale_tensors(Mode mode, const q::Quantised& qz, bool is_a) {
  switch (mode) {
    case Mode::fp8_rowwise:  // (M, 1) and (1, N)
      return {host_tensor(qz.scales, {is_a ? qz.rows : 1, is_a ? 1 : qz.rows}, Scalar::f32)};
    case Mode::fp8_blockwise:
      if (is_a) {  // 1x128: (M, K/128) with strides (1, M)
        return {host_tensor(transposed(qz.scales, qz.scale_rows, qz.scale_cols),
                            {qz.scale_rows, qz.scale_cols}, Scalar::f32, {1, qz.scale_rows})};
      } else {  // 128x128: (round_up(K/128, 4), N/128) with strides (1, that), zero-padded
        const std::int64_t padded = q::padded_to_4(qz.scale_cols);
        return {host_tensor(q::pad_columns_to_4(qz.scales, qz.scale_rows, qz.scale_cols),
                            {padded, qz.scale_rows}, Scalar::f32, {1, padded})};
      }
    case Mode::mxfp8:
    case Mode::mxfp4:
    case Mode::nvfp4: {  // 128x4-tile swizzled block scales (and NVFP4's tensor scale)
      const std::vector<std::uint8_t> blocked =
          q::to_blocked(qz.scale_bytes, qz.scale_rows, qz.scale_cols);
      std::vector<HostTensor> out = {
          host_tensor(blocked, {static_cast<std::int64_t>(blocked.size())},
                      mode == Mode::nvfp4 ? Scalar::e4m3 : Scalar::e8m0)};
      if (mode == Mode::nvfp4) {
        out.push_back(host_tensor(std::vector<float>{qz.tensor_scale}, {}, Scalar::f32));
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
    case Mode::amp_bf16: return {};
  }
  return {};
}

// A scaled mode: A [m, k] and B, given as [n, k], quantised by the mode's recipes; B is then seen
// as its transpose, a column-major [k, n], the layout cuBLASLt's scaled GEMMs want.
HostOperands scaled_operands(Mode mode, const Recipes& recipes, const std::vector<double>& a64,
                             const std::vector<double>& b64, Shape s) {
  std::vector<double> bt(b64.size());
  for (std::int64_t i = 0; i < s.k; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      bt[static_cast<std::size_t>(j * s.k + i)] = b64[static_cast<std::size_t>(i * s.n + j)];
    }
  }
  const q::Quantised qa = q::quantise(recipes.a, a64, s.m, s.k);
  const q::Quantised qb = q::quantise(recipes.b, bt, s.n, s.k);
  const std::int64_t row = four_bit(mode) ? s.k / 2 : s.k;
  HostOperands o;
  o.a = host_tensor(qa.codes, {s.m, row}, element_of(mode));
  o.b = host_tensor(qb.codes, {row, s.n}, element_of(mode), {1, row});
  o.scales_a = scale_tensors(mode, qa, true);
  o.scales_b = scale_tensors(mode, qb, false);
  o.a_values = qa.dequantised;
  o.b_values.resize(static_cast<std::size_t>(s.k * s.n));
  for (std::int64_t i = 0; i < s.k; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      o.b_values[static_cast<std::size_t>(i * s.n + j)] =
          qb.dequantised[static_cast<std::size_t>(j * s.k + i)];
    }
  }
  o.exact = mode == Mode::int8;
  // The operator of the mode table; kernel_method names _scaled_mm where the release takes it.
  o.method = fmt::format("{} {}", mode_info(mode).api, mode_key(mode));
  return o;
}

std::vector<Tensor> on_device(const std::vector<HostTensor>& tensors, const Target& target) {
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const HostTensor& t : tensors) out.push_back(to_device(t, target));
  return out;
}

// The scaled_mm_v2 recipes: at::blas::ScalingType and SwizzleType per scale tensor (the values of
// ATen/BlasBackend.h, the same in 2.10 to 2.15). Scales that are not swizzled say NO_SWIZZLE: the
// CPU kernel of 2.12 reads the first swizzle without looking whether there is one.
struct V2Recipe {
  std::vector<std::int64_t> scaling_a, swizzle_a, scaling_b, swizzle_b;
};
constexpr std::int64_t kTensorWise = 0;
constexpr std::int64_t kRowWise = 1;
constexpr std::int64_t kBlockWise1x16 = 2;
constexpr std::int64_t kBlockWise1x32 = 3;
constexpr std::int64_t kBlockWise1x128 = 4;
constexpr std::int64_t kBlockWise128x128 = 5;
constexpr std::int64_t kNoSwizzle = 0;
constexpr std::int64_t kSwizzle32_4_4 = 1;

V2Recipe v2_recipe(Mode mode) {
  switch (mode) {
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2: return {{kTensorWise}, {kNoSwizzle}, {kTensorWise}, {kNoSwizzle}};
    case Mode::fp8_rowwise: return {{kRowWise}, {kNoSwizzle}, {kRowWise}, {kNoSwizzle}};
    case Mode::fp8_blockwise:
      return {{kBlockWise1x128}, {kNoSwizzle}, {kBlockWise128x128}, {kNoSwizzle}};
    case Mode::mxfp8:  // CUDA's MX kernels want the 32_4_4 swizzle (ROCm's none)
    case Mode::mxfp4:
      return {{kBlockWise1x32}, {kSwizzle32_4_4}, {kBlockWise1x32}, {kSwizzle32_4_4}};
    case Mode::nvfp4:
      return {{kBlockWise1x16, kTensorWise},
              {kSwizzle32_4_4, kNoSwizzle},
              {kBlockWise1x16, kTensorWise},
              {kSwizzle32_4_4, kNoSwizzle}};
    case Mode::fp32:
    case Mode::tf32:
    case Mode::fp16:
    case Mode::bf16:
    case Mode::int8:
    case Mode::amp_fp16:
    case Mode::amp_bf16: break;
  }
  no_kernel(mode);
}

// The modes either scaled-mm operator can multiply: _scaled_mm_v2 told the recipe, or _scaled_mm
// (v1, which PyTorch calls superseded) reading it from the scales' shapes and dtypes.
bool either_scaled_mm(Mode mode) {
  return mode == Mode::fp8_e4m3 || mode == Mode::fp8_e5m2 || mode == Mode::fp8_rowwise ||
         mode == Mode::fp8_blockwise || mode == Mode::mxfp8;
}

// Why _scaled_mm_v2 is not called, in a few words, where kernel_op chose _scaled_mm.
std::string why_not_v2(const Torch& torch) {
  const OpInfo& v2 = op_info(Op::scaled_mm_v2);
  if (torch.release() < v2.since || !torch.features().lists) {
    return fmt::format("{} passes no lists", torch.release_text());
  }
  if (!op_problem(torch, Op::scaled_mm_v2).empty()) {
    return fmt::format("the image's {} is not the one the engine calls", v2.name);
  }
  return fmt::format("{} has no CPU kernel for {}", torch.release_text(), v2.name);
}

}  // namespace

Op kernel_op(Mode mode, const Torch& torch, Device device) {
  switch (mode) {
    case Mode::fp32:
    case Mode::tf32:
    case Mode::fp16:
    case Mode::bf16: return Op::mm;
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2:
    case Mode::fp8_rowwise:
    case Mode::fp8_blockwise:
    case Mode::mxfp8:
      // v2 wherever it runs here; v1 where it does not, unless the image has no v1 either.
      return op_problem_on(torch, Op::scaled_mm_v2, device).empty() ||
                     !op_problem(torch, Op::scaled_mm).empty()
                 ? Op::scaled_mm_v2
                 : Op::scaled_mm;
    case Mode::nvfp4:
    case Mode::mxfp4: return Op::scaled_mm_v2;
    case Mode::int8: return Op::int_mm;
    case Mode::amp_fp16:
    case Mode::amp_bf16: break;
  }
  no_kernel(mode);
}

Shape smoke_shape(Mode mode, bool gpu) {
  // The scaled recipes: K of 5 blocks of 128 (the padded 128x128 layout), M and N not multiples
  // of 128 (the padded rows of the swizzled layout, a partial 128x128 tile). Block-wise fp8: K of
  // 8 blocks, where every release's _scaled_mm agrees with its kernel on B's 128x128 scales
  // (docs/precision-matrix.md, "Three layers, and which one lacks a recipe").
  if (mode == Mode::fp8_blockwise) return {192, 1024, 320};
  if (recipes_of(mode)) return {192, 640, 320};
  const std::int64_t n = gpu ? 256 : 128;
  return {n, n, n};
}

std::int64_t bench_size_for(Mode mode, std::int64_t n) {
  return recipes_of(mode) ? (n + 127) / 128 * 128 : n;
}

HostOperands host_operands(Mode mode, const std::vector<double>& a64,
                           const std::vector<double>& b64, Shape s) {
  if (const auto recipes = recipes_of(mode)) return scaled_operands(mode, *recipes, a64, b64, s);
  HostOperands o;
  switch (mode) {
    case Mode::fp32:
    case Mode::tf32:
    case Mode::fp16:
    case Mode::bf16: {
      const Scalar e = element_of(mode);
      o.a = encoded(a64, s.m, s.k, e, false, o.a_values);
      o.b = encoded(b64, s.k, s.n, e, false, o.b_values);
      o.method = mode == Mode::tf32
                     ? "cublasGemmEx float32, CUBLAS_COMPUTE_32F_FAST_TF32 (the image's cuBLAS, "
                       "as PyTorch's fp32 matmuls with TF32 allowed)"
                     : fmt::format("aten::mm {}", scalar_info(e).name);
      return o;
    }
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2: {
      // e5m2 x e5m2 is not allowed: e5m2 (the gradient format) takes A, e4m3 takes B.
      const Scalar a = mode == Mode::fp8_e4m3 ? Scalar::e4m3 : Scalar::e5m2;
      o.a = encoded(a64, s.m, s.k, a, false, o.a_values);
      o.b = encoded(b64, s.k, s.n, Scalar::e4m3, true, o.b_values);
      o.scales_a = {host_tensor(std::vector<float>{1.0F}, {}, Scalar::f32)};
      o.scales_b = {host_tensor(std::vector<float>{1.0F}, {}, Scalar::f32)};
      o.method = fmt::format("{} {} x e4m3 -> bf16", mode_info(mode).api,
                             mode == Mode::fp8_e4m3 ? "e4m3" : "e5m2");
      return o;
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

Tensor to_device(const HostTensor& t, const Target& target) {
  return upload(*target.torch, t.bytes.data(), t.sizes, t.scalar, target.device, t.strides);
}

Gemm::Gemm(Mode mode, Tensor a, Tensor b, std::vector<Tensor> scales_a,
           std::vector<Tensor> scales_b)
    : mode_(mode),
      a_(std::move(a)),
      b_(std::move(b)),
      scales_a_(std::move(scales_a)),
      scales_b_(std::move(scales_b)),
      op_(kernel_op(mode, a_.torch(), a_.device())) {
  const Device device = a_.device();
  if (mode_ != Mode::tf32 || !device.cuda) return;
  void* stream = nullptr;
  check(a_.torch(), a_.torch().c().aoti_torch_get_current_cuda_stream(device.index, &stream),
        "get_current_cuda_stream");
  Expected<std::unique_ptr<Cublas>> cublas = Cublas::open(a_.torch(), stream);
  if (!cublas) throw std::runtime_error(cublas.error());
  cublas_ = std::move(*cublas);
}

Tensor Gemm::operator()() const {
  if (cublas_) {
    Tensor c = empty(a_.torch(), {a_.sizes().at(0), b_.sizes().at(1)}, Scalar::f32, a_.device());
    cublas_->gemm_tf32(a_, b_, c);
    return c;
  }
  if (op_ == Op::mm) return mm(a_, b_);
  if (op_ == Op::int_mm) return int_mm(a_, b_);
  if (op_ == Op::scaled_mm) {
    return scaled_mm(a_, b_, scales_a_.at(0), scales_b_.at(0), Scalar::bf16);
  }
  const V2Recipe r = v2_recipe(mode_);  // Op::scaled_mm_v2, the only other one kernel_op names
  return scaled_mm_v2(a_, b_, scales_a_, r.scaling_a, r.swizzle_a, scales_b_, r.scaling_b,
                      r.swizzle_b, Scalar::bf16);
}

Gemm device_gemm(Mode mode, const HostOperands& operands, const Target& target) {
  return Gemm(mode, to_device(operands.a, target), to_device(operands.b, target),
              on_device(operands.scales_a, target), on_device(operands.scales_b, target));
}

namespace {

// A [rows, cols] operand of random codes or values in the mode's storage, made on the device.
Tensor random_operand(Mode mode, const Target& target, std::int64_t rows, std::int64_t cols,
                      bool is_a) {
  const Torch& torch = *target.torch;
  if (four_bit(mode)) {  // every e2m1 code is a finite number: any byte will do
    const Tensor bytes = empty(torch, {rows, cols / 2}, Scalar::u8, target.device);
    random_from(bytes, 0, 256);
    return view_as(bytes, Scalar::fp4x2);
  }
  if (mode == Mode::int8) {
    Tensor codes = empty(torch, {rows, cols}, Scalar::i8, target.device);
    random_from(codes, -128, 128);
    return codes;
  }
  const Scalar element = mode == Mode::fp8_e5m2 && is_a ? Scalar::e5m2 : element_of(mode);
  if (element == Scalar::f32 || element == Scalar::f16 || element == Scalar::bf16) {
    Tensor values = empty(torch, {rows, cols}, element, target.device);
    normal(values);
    return values;
  }
  const Tensor values = empty(torch, {rows, cols}, Scalar::bf16, target.device);
  normal(values);  // fp8 from normal data: no NaN codes
  return converted(values, element);
}

// A transposed operand: B is [k, n] column-major, the transpose of a row-major [n, k].
Tensor as_column_major(Tensor stored) { return stored.t(); }

bool column_major_b(Mode mode) {
  return mode != Mode::fp32 && mode != Mode::tf32 && mode != Mode::fp16 && mode != Mode::bf16;
}

std::vector<Tensor> unit_scales(Mode mode, const Target& target, std::int64_t n, bool is_a) {
  if (const auto recipes = recipes_of(mode)) {
    return on_device(
        scale_tensors(mode, q::unit_scales(is_a ? recipes->a : recipes->b, n, n), is_a), target);
  }
  std::vector<Tensor> out;
  if (mode == Mode::fp8_e4m3 || mode == Mode::fp8_e5m2) {
    out.push_back(to_device(host_tensor(std::vector<float>{1.0F}, {}, Scalar::f32), target));
  }
  return out;
}

// Copies of `tile` over `dst`, block by block (the edge blocks cut to fit).
void tile_over(const Tensor& dst, const Tensor& tile) {
  const Sizes d = dst.sizes();
  const Sizes t = tile.sizes();
  for (std::int64_t i = 0; i < d[0]; i += t[0]) {
    for (std::int64_t j = 0; j < d[1]; j += t[1]) {
      const std::int64_t rows = std::min(t[0], d[0] - i);
      const std::int64_t cols = std::min(t[1], d[1] - j);
      copy_into(dst.view({rows, cols}, {d[1], 1}, i * d[1] + j),
                tile.view({rows, cols}, {t[1], 1}));
    }
  }
}

// An operand stored as [rows, cols] whose values repeat a tile drawn on the host from `seed`.
Tensor seeded_operand(Mode mode, const Target& target, std::int64_t rows, std::int64_t cols,
                      bool is_a, std::uint64_t seed) {
  const Torch& torch = *target.torch;
  const std::int64_t side = std::min<std::int64_t>(1024, std::max(rows, cols));
  const std::int64_t tile_rows = std::min(side, rows);
  const std::int64_t tile_cols = std::min(side, four_bit(mode) ? cols / 2 : cols);
  HostRandom random(seed);
  const auto count = static_cast<std::size_t>(tile_rows * tile_cols);
  if (four_bit(mode) || mode == Mode::int8) {
    std::vector<std::uint8_t> codes(count);
    for (std::uint8_t& c : codes) c = static_cast<std::uint8_t>(random.next() >> 56U);
    const Scalar stored = mode == Mode::int8 ? Scalar::i8 : Scalar::u8;
    const Tensor tile = upload(torch, codes, {tile_rows, tile_cols}, stored, target.device);
    Tensor out = empty(torch, {rows, four_bit(mode) ? cols / 2 : cols}, stored, target.device);
    tile_over(out, tile);
    return four_bit(mode) ? view_as(out, Scalar::fp4x2) : std::move(out);
  }
  std::vector<float> values(count);
  for (float& v : values) v = static_cast<float>(random.normal());
  const Tensor tile = upload(torch, values, {tile_rows, tile_cols}, Scalar::f32, target.device);
  const Scalar element = mode == Mode::fp8_e5m2 && is_a ? Scalar::e5m2 : element_of(mode);
  Tensor out = empty(torch, {rows, cols}, element, target.device);
  tile_over(out, tile);
  return out;
}

}  // namespace

Gemm random_gemm(Mode mode, const Target& target, std::int64_t n) {
  Tensor a = random_operand(mode, target, n, n, true);
  Tensor b = random_operand(mode, target, n, n, false);
  if (column_major_b(mode)) b = as_column_major(std::move(b));
  return Gemm(mode, std::move(a), std::move(b), unit_scales(mode, target, n, true),
              unit_scales(mode, target, n, false));
}

Gemm seeded_gemm(Mode mode, const Target& target, std::int64_t n, std::uint64_t seed) {
  Tensor a = seeded_operand(mode, target, n, n, true, seed);
  Tensor b = seeded_operand(mode, target, n, n, false, seed + 1);
  if (column_major_b(mode)) b = as_column_major(std::move(b));
  return Gemm(mode, std::move(a), std::move(b), unit_scales(mode, target, n, true),
              unit_scales(mode, target, n, false));
}

std::string kernel_method(Mode mode, const std::string& method, const Torch& torch, Device device) {
  if (!either_scaled_mm(mode) || kernel_op(mode, torch, device) != Op::scaled_mm) return method;
  // `method` names the operator of the mode table (_scaled_mm_v2): here it is _scaled_mm.
  const std::string_view v2 = op_info(Op::scaled_mm_v2).name;
  const std::string recipe = method.rfind(v2, 0) == 0 ? method.substr(v2.size()) : " " + method;
  return fmt::format("{}{} (the recipe from the scales' shapes: {})", op_info(Op::scaled_mm).name,
                     recipe, why_not_v2(torch));
}

std::string kernel_problem(Mode mode, const Torch& torch, Device device) {
  auto element = [&torch](Scalar s) {
    return torch.dtypes().has(s)
               ? std::string()
               : lacks(torch,
                       std::string("the ") + std::string(scalar_info(s).name) + " element type",
                       Version{2, 11});
  };
  if (mode_info(mode).kind != ModeKind::matmul) return "not a matmul precision";
  std::string problem;
  if (four_bit(mode)) problem = element(Scalar::fp4x2);
  if (problem.empty() && (mode == Mode::mxfp8 || mode == Mode::mxfp4)) {
    problem = element(Scalar::e8m0);
  }
  if (!problem.empty()) return problem;
  const Op op = kernel_op(mode, torch, device);
  problem = op_problem_on(torch, op, device);
  // Neither scaled-mm operator: the image's v1 (or its absence) first, then why not v2.
  if (!problem.empty() && op == Op::scaled_mm_v2 && either_scaled_mm(mode)) {
    problem = op_problem(torch, Op::scaled_mm) + "; " + problem;
  }
  return problem;
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
