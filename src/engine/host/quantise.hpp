#pragma once
// The quantisers of the scaled recipes, in plain C++ (no LibTorch): the element formats (e4m3,
// e2m1, e8m0), each recipe's scaling, and the scale layouts cuBLAS wants (MX and NVFP4's swizzled
// 128x4 tiles, block-wise FP8's padded columns). The engine makes its operands with them and
// builds the float64 reference from what they dequantise to; unit tests hold them in CI, where
// LibTorch has none of these types.
//
// Matrices are row-major. A recipe's blocks run along the rows (the K dimension): an operand is
// given as [rows, k], A as [m, k] and B as [n, k] (the transposed weight).

#include <cstdint>
#include <vector>

namespace precision_probe::quantise {

// --- Element formats (round to nearest, ties to even; saturating: no infinities) -------------

inline constexpr float kE4m3Max = 448.0F;
inline constexpr float kE2m1Max = 6.0F;

float round_e4m3(float x);          // the nearest e4m3fn value, clamped to +-448
std::uint8_t encode_e4m3(float x);  // its bits (sign, 4 exponent bits, bias 7, 3 mantissa bits)
float decode_e4m3(std::uint8_t bits);

std::uint8_t encode_e2m1(float x);  // a 4-bit code: sign bit 3, magnitude 0, .5, 1, 1.5, 2, 3, 4, 6
float decode_e2m1(std::uint8_t code);

// e8m0: a power of two, 2^(bits - 127); bits 255 is NaN.
std::uint8_t encode_e8m0(int exponent);  // exponent clamped to -127..127
float decode_e8m0(std::uint8_t bits);

// --- Recipes ----------------------------------------------------------------------------------

enum class Recipe {
  rowwise,        // e4m3, an fp32 scale per row
  block_1x128,    // e4m3, an fp32 scale per 128 elements of a row
  block_128x128,  // e4m3, an fp32 scale per 128x128 tile
  mx_e4m3,        // MXFP8: e4m3, an e8m0 scale per 32 elements of a row
  mx_e2m1,        // MXFP4: e2m1, an e8m0 scale per 32 elements of a row
  nv_e2m1,        // NVFP4: e2m1, an e4m3 scale per 16 elements of a row and an fp32 tensor scale
  int8_rowwise,   // int8, symmetric, a scale per row (the GEMM sees the codes only)
};

struct Quantised {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  // e4m3 and int8: a byte per element; e2m1: two per byte, element 2i in the low nibble.
  std::vector<std::uint8_t> codes;
  // What codes and scales stand for, rows x cols, in float64 (int8: the codes themselves).
  std::vector<double> dequantised;
  // fp32 scales (rowwise, 1x128, 128x128, int8), or block-scale bytes (e8m0 for MX, e4m3 for
  // NVFP4), scale_rows x scale_cols, row-major and not yet swizzled.
  std::vector<float> scales;
  std::vector<std::uint8_t> scale_bytes;
  std::int64_t scale_rows = 0;
  std::int64_t scale_cols = 0;
  float tensor_scale = 1.0F;  // NVFP4: the per-tensor decode scale the GEMM multiplies in
};

// `values` is rows x cols, row-major. The block recipes need cols divisible by their block
// (16, 32 or 128); 128x128 tiles may be partial at the edges. Throws std::invalid_argument.
Quantised quantise(Recipe recipe, const std::vector<double>& values, std::int64_t rows,
                   std::int64_t cols);

// The scales of `recipe` for a rows x cols operand, all 1 (the benchmark's: its data is random
// codes); no codes or values.
Quantised unit_scales(Recipe recipe, std::int64_t rows, std::int64_t cols);

// --- Scale layouts ------------------------------------------------------------------------------

// MX and NVFP4 block scales as cuBLAS reads them: rows padded to 128 and columns to 4, laid out
// in 128x4 tiles, each stored as 32 rows of [4 x 4] (PyTorch's to_blocked). Padding is zero.
std::int64_t blocked_size(std::int64_t rows, std::int64_t cols);
std::int64_t blocked_offset(std::int64_t row, std::int64_t col, std::int64_t cols);
std::vector<std::uint8_t> to_blocked(const std::vector<std::uint8_t>& scales, std::int64_t rows,
                                     std::int64_t cols);

// Block-wise FP8's 128x128 scales as scaled_mm wants them: each row padded with zeros to a
// multiple of 4 columns (the K blocks), returned as rows x padded_cols, row-major.
std::int64_t padded_to_4(std::int64_t cols);
std::vector<float> pad_columns_to_4(const std::vector<float>& scales, std::int64_t rows,
                                    std::int64_t cols);

}  // namespace precision_probe::quantise
