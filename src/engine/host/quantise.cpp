#include "engine/host/quantise.hpp"

#include "engine/host/float_formats.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace precision_probe::quantise {

namespace {

constexpr std::array<float, 8> kE2m1Magnitudes = {0.0F, 0.5F, 1.0F, 1.5F, 2.0F, 3.0F, 4.0F, 6.0F};

// floor(log2(a)) for a > 0, exactly.
int exponent_of(double a) {
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  return e - 1;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

namespace {

// Every e4m3 code's value (0x7F and 0xFF: NaN), computed once.
const std::array<float, 256>& e4m3_values() {
  static const std::array<float, 256> values = [] {
    std::array<float, 256> v{};
    for (unsigned bits = 0; bits < v.size(); ++bits) {
      const unsigned exponent = (bits >> 3U) & 0xFU;
      const unsigned mantissa = bits & 0x7U;
      const double magnitude =
          exponent == 0 ? std::ldexp(mantissa, -9)
                        : std::ldexp(1.0 + mantissa / 8.0, static_cast<int>(exponent) - 7);
      v[bits] = exponent == 0xF && mantissa == 0x7
                    ? std::numeric_limits<float>::quiet_NaN()
                    : static_cast<float>((bits & 0x80U) != 0 ? -magnitude : magnitude);
    }
    return v;
  }();
  return values;
}

}  // namespace

// On the float's bits (every operand element passes here: libm's ldexp and frexp were most of the
// smoke tests' input time, docs/performance.md): the exponent rebiased from 127 to 7 and the
// mantissa rounded to 3 bits, a carry raising the exponent; below 2^-6, units of 2^-9.
std::uint8_t encode_e4m3(float x) {
  const std::uint32_t u = float_bits(x);
  const std::uint32_t sign = (u >> 24U) & 0x80U;
  const std::uint32_t magnitude = u & 0x7fffffffU;
  if (magnitude > 0x7f800000U) return 0x7F;                    // NaN
  if (magnitude >= float_bits(kE4m3Max)) return sign | 0x7EU;  // saturates at 448
  const int exponent = static_cast<int>(magnitude >> 23U) - 127;
  if (exponent < -126) return static_cast<std::uint8_t>(sign);  // zero, fp32 subnormals
  std::uint32_t out = 0;
  if (exponent >= -6) {
    out = shift_rounded(magnitude - ((127U - 7U) << 23U), 20);
  } else {
    const std::uint32_t significand = (magnitude & 0x7fffffU) | 0x800000U;
    out = shift_rounded(significand, 14 - exponent);
  }
  return static_cast<std::uint8_t>(sign | out);
}

float round_e4m3(float x) { return std::isnan(x) ? x : decode_e4m3(encode_e4m3(x)); }

float decode_e4m3(std::uint8_t bits) { return e4m3_values()[bits]; }

// The nearest of 0, .5, 1, 1.5, 2, 3, 4, 6 by the midpoints between them, a tie to the even code
// (strictly above a midpoint where the lower code is even, from it where the upper one is).
std::uint8_t encode_e2m1(float x) {
  const float a = std::min(std::fabs(x), kE2m1Max);  // NaN stays NaN: every test below false
  const unsigned code = static_cast<unsigned>(a > 0.25F) + static_cast<unsigned>(a >= 0.75F) +
                        static_cast<unsigned>(a > 1.25F) + static_cast<unsigned>(a >= 1.75F) +
                        static_cast<unsigned>(a > 2.5F) + static_cast<unsigned>(a >= 3.5F) +
                        static_cast<unsigned>(a > 5.0F);
  return static_cast<std::uint8_t>(code | (x < 0.0F && code != 0 ? 0x8U : 0x0U));
}

float decode_e2m1(std::uint8_t code) {
  const float magnitude = kE2m1Magnitudes[code & 0x7];
  return (code & 0x8) != 0 ? -magnitude : magnitude;
}

std::uint8_t encode_e8m0(int exponent) {
  return static_cast<std::uint8_t>(std::clamp(exponent, -127, 127) + 127);
}

float decode_e8m0(std::uint8_t bits) {
  if (bits == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0F, static_cast<int>(bits) - 127);
}

namespace {

struct Block {
  std::int64_t rows;  // its height (128 for 128x128 tiles, else 1: one row)
  std::int64_t cols;  // its width along K
};

Block block_of(Recipe recipe, std::int64_t cols) {
  switch (recipe) {
    case Recipe::rowwise:
    case Recipe::int8_rowwise: return {1, cols};
    case Recipe::block_1x128: return {1, 128};
    case Recipe::block_128x128: return {128, 128};
    case Recipe::mx_e4m3:
    case Recipe::mx_e2m1: return {1, 32};
    case Recipe::nv_e2m1: return {1, 16};
  }
  return {1, cols};
}

double block_amax(const std::vector<double>& v, std::int64_t cols, std::int64_t r0, std::int64_t r1,
                  std::int64_t c0, std::int64_t c1) {
  double amax = 0.0;
  for (std::int64_t r = r0; r < r1; ++r) {
    for (std::int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(v[r * cols + c]));
  }
  return amax;
}

// One block's scale, the factor its elements are divided by (encoding), and, for the scale
// bytes of MX and NVFP4, the byte stored.
struct BlockScale {
  double divide_by = 1.0;  // element code = quantise(x / divide_by)
  double decode = 1.0;     // element value = decode(code) * decode
  float fp32 = 1.0F;       // the fp32 scale stored (fp32-scaled recipes)
  std::uint8_t byte = 0;   // the e8m0 or e4m3 byte stored (MX, NVFP4)
};

BlockScale scale_for(Recipe recipe, double amax, float tensor_encode) {
  BlockScale s;
  switch (recipe) {
    case Recipe::rowwise:
    case Recipe::block_1x128:
    case Recipe::block_128x128:
    case Recipe::int8_rowwise: {
      const double top = recipe == Recipe::int8_rowwise ? 127.0 : kE4m3Max;
      s.fp32 = amax > 0.0 ? static_cast<float>(amax / top) : 1.0F;
      s.divide_by = s.decode = s.fp32;
      return s;
    }
    case Recipe::mx_e4m3:
    case Recipe::mx_e2m1: {
      // OCP MX: 2^(floor(log2(amax)) - emax of the element format): e4m3 8, e2m1 2.
      const int emax = recipe == Recipe::mx_e4m3 ? 8 : 2;
      s.byte = encode_e8m0(amax > 0.0 ? exponent_of(amax) - emax : 0);
      s.divide_by = s.decode = decode_e8m0(s.byte);
      return s;
    }
    case Recipe::nv_e2m1: {
      // The block scale, in e4m3, maps the block's amax to 6 after the tensor's encode scale.
      s.byte = encode_e4m3(static_cast<float>(amax / kE2m1Max * tensor_encode));
      const double stored = decode_e4m3(s.byte);
      s.divide_by = stored / tensor_encode;
      s.decode = stored;  // times the tensor scale, which the GEMM applies
      return s;
    }
  }
  return s;
}

std::uint8_t encode_element(Recipe recipe, double x) {
  switch (recipe) {
    case Recipe::rowwise:
    case Recipe::block_1x128:
    case Recipe::block_128x128:
    case Recipe::mx_e4m3: return encode_e4m3(static_cast<float>(x));
    case Recipe::mx_e2m1:
    case Recipe::nv_e2m1: return encode_e2m1(static_cast<float>(x));
    case Recipe::int8_rowwise:
      return static_cast<std::uint8_t>(
          static_cast<std::int8_t>(std::clamp(std::nearbyint(x), -127.0, 127.0)));
  }
  return 0;
}

double decode_element(Recipe recipe, std::uint8_t code) {
  switch (recipe) {
    case Recipe::rowwise:
    case Recipe::block_1x128:
    case Recipe::block_128x128:
    case Recipe::mx_e4m3: return decode_e4m3(code);
    case Recipe::mx_e2m1:
    case Recipe::nv_e2m1: return decode_e2m1(code);
    case Recipe::int8_rowwise: return static_cast<std::int8_t>(code);
  }
  return 0.0;
}

bool four_bit(Recipe recipe) { return recipe == Recipe::mx_e2m1 || recipe == Recipe::nv_e2m1; }
bool byte_scales(Recipe recipe) {
  return recipe == Recipe::mx_e4m3 || recipe == Recipe::mx_e2m1 || recipe == Recipe::nv_e2m1;
}

void check_shape(Recipe recipe, const std::vector<double>& values, std::int64_t rows,
                 std::int64_t cols) {
  if (rows <= 0 || cols <= 0 || values.size() != static_cast<std::size_t>(rows * cols)) {
    throw std::invalid_argument("quantise: values do not hold rows x cols");
  }
  // Scales are fp32: values beyond its range, or not finite, have no quantisation.
  constexpr double kLargest = 1e30;
  for (double v : values) {
    if (!(std::fabs(v) <= kLargest)) {
      throw std::invalid_argument("quantise: a value that is not finite or beyond 1e30");
    }
  }
  const Block block = block_of(recipe, cols);
  if (cols % block.cols != 0 || (four_bit(recipe) && cols % 2 != 0)) {
    throw std::invalid_argument("quantise: " + std::to_string(cols) +
                                " columns are not a whole number of blocks of " +
                                std::to_string(block.cols));
  }
}

}  // namespace

Quantised quantise(Recipe recipe, const std::vector<double>& values, std::int64_t rows,
                   std::int64_t cols) {
  check_shape(recipe, values, rows, cols);
  const Block block = block_of(recipe, cols);
  Quantised q;
  q.rows = rows;
  q.cols = cols;
  q.scale_rows = ceil_div(rows, block.rows);
  q.scale_cols = cols / block.cols;
  q.dequantised.resize(values.size());
  std::vector<std::uint8_t> codes(values.size());
  // NVFP4's tensor scale: the tensor's amax lands on the largest e4m3 block scale times 6.
  float tensor_encode = 1.0F;
  if (recipe == Recipe::nv_e2m1) {
    const double amax = block_amax(values, cols, 0, rows, 0, cols);
    tensor_encode = amax > 0.0 ? static_cast<float>(kE2m1Max * kE4m3Max / amax) : 1.0F;
    if (!std::isfinite(tensor_encode)) {
      throw std::invalid_argument(
          "quantise: NVFP4's tensor scale underflows fp32 (amax too small)");
    }
    q.tensor_scale = 1.0F / tensor_encode;
  }
  for (std::int64_t br = 0; br < q.scale_rows; ++br) {
    for (std::int64_t bc = 0; bc < q.scale_cols; ++bc) {
      const std::int64_t r0 = br * block.rows;
      const std::int64_t r1 = std::min(rows, r0 + block.rows);
      const std::int64_t c0 = bc * block.cols;
      const std::int64_t c1 = c0 + block.cols;
      const BlockScale s =
          scale_for(recipe, block_amax(values, cols, r0, r1, c0, c1), tensor_encode);
      if (byte_scales(recipe)) {
        q.scale_bytes.push_back(s.byte);
      } else {
        q.scales.push_back(s.fp32);
      }
      for (std::int64_t r = r0; r < r1; ++r) {
        for (std::int64_t c = c0; c < c1; ++c) {
          const std::int64_t i = r * cols + c;
          codes[i] = s.divide_by > 0.0 ? encode_element(recipe, values[i] / s.divide_by) : 0;
          q.dequantised[i] = decode_element(recipe, codes[i]) *
                             (recipe == Recipe::int8_rowwise ? 1.0 : s.decode) *
                             (recipe == Recipe::nv_e2m1 ? q.tensor_scale : 1.0);
        }
      }
    }
  }
  if (four_bit(recipe)) {
    q.codes.resize(codes.size() / 2);
    for (std::size_t i = 0; i < q.codes.size(); ++i) {
      q.codes[i] =
          static_cast<std::uint8_t>((codes[2 * i] & 0xF) | ((codes[2 * i + 1] & 0xF) << 4));
    }
  } else {
    q.codes = std::move(codes);
  }
  return q;
}

Quantised unit_scales(Recipe recipe, std::int64_t rows, std::int64_t cols) {
  if (rows <= 0 || cols <= 0) throw std::invalid_argument("unit_scales: an empty operand");
  const Block block = block_of(recipe, cols);
  Quantised q;
  q.rows = rows;
  q.cols = cols;
  q.scale_rows = ceil_div(rows, block.rows);
  q.scale_cols = ceil_div(cols, block.cols);
  const auto count = static_cast<std::size_t>(q.scale_rows * q.scale_cols);
  if (recipe == Recipe::nv_e2m1) {
    q.scale_bytes.assign(count, encode_e4m3(1.0F));
  } else if (byte_scales(recipe)) {
    q.scale_bytes.assign(count, encode_e8m0(0));
  } else {
    q.scales.assign(count, 1.0F);
  }
  return q;
}

std::int64_t blocked_size(std::int64_t rows, std::int64_t cols) {
  return ceil_div(rows, 128) * 128 * ceil_div(cols, 4) * 4;
}

std::int64_t blocked_offset(std::int64_t row, std::int64_t col, std::int64_t cols) {
  const std::int64_t tile = (row / 128) * ceil_div(cols, 4) + col / 4;
  const std::int64_t r = row % 128;
  return 512 * tile + (r % 32) * 16 + (r / 32) * 4 + col % 4;
}

std::vector<std::uint8_t> to_blocked(const std::vector<std::uint8_t>& scales, std::int64_t rows,
                                     std::int64_t cols) {
  if (scales.size() != static_cast<std::size_t>(rows * cols)) {
    throw std::invalid_argument("to_blocked: scales do not hold rows x cols");
  }
  std::vector<std::uint8_t> out(static_cast<std::size_t>(blocked_size(rows, cols)), 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) out[blocked_offset(r, c, cols)] = scales[r * cols + c];
  }
  return out;
}

std::int64_t padded_to_4(std::int64_t cols) { return ceil_div(cols, 4) * 4; }

std::vector<float> pad_columns_to_4(const std::vector<float>& scales, std::int64_t rows,
                                    std::int64_t cols) {
  if (scales.size() != static_cast<std::size_t>(rows * cols)) {
    throw std::invalid_argument("pad_columns_to_4: scales do not hold rows x cols");
  }
  const std::int64_t padded = padded_to_4(cols);
  std::vector<float> out(static_cast<std::size_t>(rows * padded), 0.0F);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::copy_n(scales.begin() + r * cols, cols, out.begin() + r * padded);
  }
  return out;
}

}  // namespace precision_probe::quantise
