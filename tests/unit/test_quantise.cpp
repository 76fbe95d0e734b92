// The quantisers of the scaled recipes (engine/host/quantise.hpp): element formats bit by bit, each
// recipe's scaling against what the format can hold, and the scale layouts cuBLAS reads.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>

#include "engine/host/quantise.hpp"

namespace q = precision_probe::quantise;

namespace {

std::vector<double> random_values(std::int64_t count, std::uint32_t seed, double spread = 1.0) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal(0.0, spread);
  std::vector<double> v(static_cast<std::size_t>(count));
  for (double& x : v) x = normal(gen);
  return v;
}

double amax_of(const std::vector<double>& v, std::int64_t cols, std::int64_t r0, std::int64_t r1,
               std::int64_t c0, std::int64_t c1) {
  double amax = 0.0;
  for (std::int64_t r = r0; r < r1; ++r) {
    for (std::int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(v[r * cols + c]));
  }
  return amax;
}

std::uint8_t code_at(const q::Quantised& qz, std::int64_t i, bool four_bit) {
  if (!four_bit) return qz.codes[i];
  const std::uint8_t byte = qz.codes[i / 2];
  return i % 2 == 0 ? byte & 0xF : byte >> 4;
}

}  // namespace

TEST(Quantise, EveryE4m3CodeDecodesAndEncodesBackToItself) {
  for (int bits = 0; bits < 256; ++bits) {
    const auto b = static_cast<std::uint8_t>(bits);
    const float v = q::decode_e4m3(b);
    if ((bits & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(v)) << bits;
      continue;
    }
    EXPECT_EQ(q::encode_e4m3(v), b) << bits << " = " << v;
    EXPECT_EQ(q::round_e4m3(v), v) << bits;
  }
}

TEST(Quantise, E4m3RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(q::encode_e4m3(1.0F), 0x38);
  EXPECT_EQ(q::encode_e4m3(448.0F), 0x7E);
  EXPECT_EQ(q::encode_e4m3(-448.0F), 0xFE);
  EXPECT_EQ(q::decode_e4m3(0x01), std::ldexp(1.0F, -9));  // the smallest subnormal
  EXPECT_EQ(q::round_e4m3(1000.0F), 448.0F);              // saturating, never NaN
  EXPECT_EQ(q::round_e4m3(-1e30F), -448.0F);
  EXPECT_EQ(q::round_e4m3(1.0625F), 1.0F);        // a tie: to the even mantissa (1.0)
  EXPECT_EQ(q::round_e4m3(1.1875F), 1.25F);       // a tie: to the even mantissa (1.25)
  EXPECT_EQ(q::round_e4m3(1.07F), 1.125F);        // nearest
  EXPECT_EQ(q::round_e4m3(0.0009765625F), 0.0F);  // 2^-10: half the smallest subnormal, to even
  EXPECT_EQ(q::round_e4m3(0.003F), 0.00390625F);  // a subnormal: 1.536 steps of 2^-9 round to 2
}

TEST(Quantise, E2m1HasItsEightMagnitudesAndRoundsTiesToEvenCodes) {
  const float magnitudes[8] = {0.0F, 0.5F, 1.0F, 1.5F, 2.0F, 3.0F, 4.0F, 6.0F};
  for (std::uint8_t code = 0; code < 16; ++code) {
    const float v = q::decode_e2m1(code);
    EXPECT_EQ(std::fabs(v), magnitudes[code & 7]) << int(code);
    EXPECT_EQ(v < 0.0F, (code & 8) != 0 && (code & 7) != 0) << int(code);
    if (code != 8) {  // -0 encodes as +0
      EXPECT_EQ(q::encode_e2m1(v), code) << int(code);
    }
  }
  const std::pair<float, float> ties[] = {{0.25F, 0.0F}, {0.75F, 1.0F}, {1.25F, 1.0F},
                                          {1.75F, 2.0F}, {2.5F, 2.0F},  {3.5F, 4.0F},
                                          {5.0F, 4.0F},  {7.0F, 6.0F},  {-2.6F, -3.0F}};
  for (const auto& [in, out] : ties) EXPECT_EQ(q::decode_e2m1(q::encode_e2m1(in)), out) << in;
}

TEST(Quantise, E8m0IsAPowerOfTwo) {
  EXPECT_EQ(q::encode_e8m0(0), 127);
  EXPECT_EQ(q::decode_e8m0(127), 1.0F);
  EXPECT_EQ(q::decode_e8m0(q::encode_e8m0(-3)), 0.125F);
  EXPECT_EQ(q::decode_e8m0(q::encode_e8m0(10)), 1024.0F);
  EXPECT_EQ(q::encode_e8m0(500), 254);  // clamped
  EXPECT_EQ(q::encode_e8m0(-500), 0);
  EXPECT_TRUE(std::isnan(q::decode_e8m0(255)));
}

// Each fp32-scaled FP8 recipe maps every block's largest element to 448 and holds every element
// within e4m3's rounding (half a step: 2^-4 of the value, or of the block's subnormal step).
TEST(Quantise, Fp8RecipesScaleEachBlockToTheFormatsRange) {
  struct Case {
    q::Recipe recipe;
    std::int64_t block_rows, block_cols;
  };
  const std::int64_t rows = 192, cols = 640;
  for (const Case& c : {Case{q::Recipe::rowwise, 1, cols}, Case{q::Recipe::block_1x128, 1, 128},
                        Case{q::Recipe::block_128x128, 128, 128}}) {
    const std::vector<double> v = random_values(rows * cols, 7, 3.0);
    const q::Quantised qz = q::quantise(c.recipe, v, rows, cols);
    const std::int64_t scale_rows = (rows + c.block_rows - 1) / c.block_rows;
    ASSERT_EQ(qz.scale_rows, scale_rows);
    ASSERT_EQ(qz.scale_cols, cols / c.block_cols);
    ASSERT_EQ(qz.scales.size(), static_cast<std::size_t>(scale_rows * qz.scale_cols));
    ASSERT_EQ(qz.codes.size(), v.size());
    for (std::int64_t br = 0; br < scale_rows; ++br) {
      for (std::int64_t bc = 0; bc < qz.scale_cols; ++bc) {
        const std::int64_t r0 = br * c.block_rows, r1 = std::min(rows, r0 + c.block_rows);
        const std::int64_t c0 = bc * c.block_cols, c1 = c0 + c.block_cols;
        const double amax = amax_of(v, cols, r0, r1, c0, c1);
        const float scale = qz.scales[br * qz.scale_cols + bc];
        EXPECT_NEAR(scale, amax / 448.0, 1e-6 * amax);
        float largest = 0.0F;
        for (std::int64_t r = r0; r < r1; ++r) {
          for (std::int64_t col = c0; col < c1; ++col) {
            const std::int64_t i = r * cols + col;
            const float code = q::decode_e4m3(qz.codes[i]);
            largest = std::max(largest, std::fabs(code));
            EXPECT_DOUBLE_EQ(qz.dequantised[i], static_cast<double>(code) * scale);
            EXPECT_LE(std::fabs(qz.dequantised[i] - v[i]),
                      std::max(std::fabs(v[i]) / 16.0, scale * std::ldexp(1.0, -10)) * 1.0001);
          }
        }
        EXPECT_EQ(largest, 448.0F) << "block " << br << "," << bc;
      }
    }
  }
}

// MX: a power-of-two scale per 32 that puts the block's largest element in the format's top
// binade (e4m3: [256, 448], saturating; e2m1: [4, 6]); codes packed two to a byte for FP4.
TEST(Quantise, MxRecipesUsePowerOfTwoScalesPer32) {
  const std::int64_t rows = 3, cols = 96;
  for (const auto recipe : {q::Recipe::mx_e4m3, q::Recipe::mx_e2m1}) {
    const bool fp4 = recipe == q::Recipe::mx_e2m1;
    const std::vector<double> v = random_values(rows * cols, 11, 100.0);
    const q::Quantised qz = q::quantise(recipe, v, rows, cols);
    ASSERT_EQ(qz.codes.size(), static_cast<std::size_t>(fp4 ? rows * cols / 2 : rows * cols));
    ASSERT_EQ(qz.scale_bytes.size(), static_cast<std::size_t>(rows * cols / 32));
    EXPECT_TRUE(qz.scales.empty());
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t b = 0; b < cols / 32; ++b) {
        const double amax = amax_of(v, cols, r, r + 1, b * 32, b * 32 + 32);
        const float scale = q::decode_e8m0(qz.scale_bytes[r * (cols / 32) + b]);
        EXPECT_EQ(scale,
                  std::ldexp(1.0F, static_cast<int>(std::floor(std::log2(amax))) - (fp4 ? 2 : 8)));
        float largest = 0.0F;
        for (std::int64_t c = b * 32; c < b * 32 + 32; ++c) {
          const std::int64_t i = r * cols + c;
          const std::uint8_t code = code_at(qz, i, fp4);
          const float value = fp4 ? q::decode_e2m1(code) : q::decode_e4m3(code);
          largest = std::max(largest, std::fabs(value));
          EXPECT_DOUBLE_EQ(qz.dequantised[i], static_cast<double>(value) * scale);
        }
        EXPECT_GE(largest, fp4 ? 4.0F : 256.0F);
        EXPECT_LE(largest, fp4 ? 6.0F : 448.0F);
      }
    }
  }
}

// NVFP4: the tensor's largest element lands on 6 x 448 in units of the tensor scale; each block of
// 16 has an e4m3 scale, and every value is its code times both scales.
TEST(Quantise, Nvfp4HasATensorScaleAndE4m3ScalesPer16) {
  const std::int64_t rows = 4, cols = 64;
  const std::vector<double> v = random_values(rows * cols, 13, 0.01);
  const q::Quantised qz = q::quantise(q::Recipe::nv_e2m1, v, rows, cols);
  const double amax = amax_of(v, cols, 0, rows, 0, cols);
  EXPECT_NEAR(qz.tensor_scale, amax / (6.0 * 448.0), 1e-6 * qz.tensor_scale);
  ASSERT_EQ(qz.scale_bytes.size(), static_cast<std::size_t>(rows * cols / 16));
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    const float block_scale = q::decode_e4m3(qz.scale_bytes[i / 16]);
    const float code = q::decode_e2m1(code_at(qz, i, true));
    EXPECT_NEAR(qz.dequantised[i],
                static_cast<double>(code) * block_scale * static_cast<double>(qz.tensor_scale),
                1e-12);
    const double block_amax =
        amax_of(v, cols, i / cols, i / cols + 1, i % cols / 16 * 16, i % cols / 16 * 16 + 16);
    EXPECT_LE(std::fabs(qz.dequantised[i] - v[i]), 0.25 * block_amax) << i;
  }
  // The block holding the tensor's largest element has the largest block scale, 448, and that
  // element is coded as 6.
  std::int64_t largest = 0;
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    if (std::fabs(v[i]) > std::fabs(v[largest])) largest = i;
  }
  EXPECT_EQ(q::decode_e4m3(qz.scale_bytes[largest / 16]), 448.0F);
  EXPECT_EQ(std::fabs(q::decode_e2m1(code_at(qz, largest, true))), 6.0F);
}

TEST(Quantise, Int8IsSymmetricPerRowAndItsValuesAreTheCodes) {
  const std::int64_t rows = 5, cols = 40;
  const std::vector<double> v = random_values(rows * cols, 17);
  const q::Quantised qz = q::quantise(q::Recipe::int8_rowwise, v, rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    int largest = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto code = static_cast<std::int8_t>(qz.codes[r * cols + c]);
      largest = std::max(largest, std::abs(static_cast<int>(code)));
      EXPECT_EQ(qz.dequantised[r * cols + c], static_cast<double>(code));
      EXPECT_NEAR(code * qz.scales[r], v[r * cols + c], qz.scales[r] * 0.5001);
    }
    EXPECT_EQ(largest, 127);
  }
}

TEST(Quantise, ShapesThatAreNotWholeBlocksAreRefused) {
  const std::vector<double> v(3 * 100, 1.0);
  EXPECT_THROW(q::quantise(q::Recipe::block_1x128, v, 3, 100), std::invalid_argument);
  EXPECT_THROW(q::quantise(q::Recipe::mx_e4m3, v, 3, 100), std::invalid_argument);
  EXPECT_THROW(q::quantise(q::Recipe::rowwise, v, 4, 100), std::invalid_argument);
  EXPECT_NO_THROW(q::quantise(q::Recipe::nv_e2m1, std::vector<double>(3 * 96, 1.0), 3, 96));
  // Values a fp32 scale cannot hold are refused, not turned into NaN or undefined behaviour.
  std::vector<double> bad(32, 1.0);
  bad[3] = std::nan("");
  EXPECT_THROW(q::quantise(q::Recipe::int8_rowwise, bad, 1, 32), std::invalid_argument);
  bad[3] = 1e300;
  EXPECT_THROW(q::quantise(q::Recipe::rowwise, bad, 1, 32), std::invalid_argument);
  EXPECT_THROW(q::quantise(q::Recipe::nv_e2m1, std::vector<double>(32, 1e-300), 1, 32),
               std::invalid_argument);
  EXPECT_THROW(q::unit_scales(q::Recipe::rowwise, 4, 0), std::invalid_argument);
  // All-zero blocks quantise to zeros, not NaN.
  const q::Quantised zeros = q::quantise(q::Recipe::nv_e2m1, std::vector<double>(32, 0.0), 1, 32);
  for (double x : zeros.dequantised) EXPECT_EQ(x, 0.0);
}

// The layout of PyTorch's to_blocked, done as it does it: pad to (128 x 4) tiles, view as
// [row blocks, 128, col blocks, 4], permute to [row blocks, col blocks, 128, 4], view each tile
// as [4, 32, 4], swap the first two of those, flatten.
TEST(Quantise, BlockedLayoutIsPyTorchsToBlocked) {
  for (const auto& [rows, cols] :
       {std::pair<std::int64_t, std::int64_t>{1, 1}, {192, 20}, {320, 40}, {128, 4}, {130, 7}}) {
    std::vector<std::uint8_t> scales(static_cast<std::size_t>(rows * cols));
    for (std::size_t i = 0; i < scales.size(); ++i)
      scales[i] = static_cast<std::uint8_t>(i * 37 + 1);
    const std::vector<std::uint8_t> blocked = q::to_blocked(scales, rows, cols);
    const std::int64_t row_blocks = (rows + 127) / 128, col_blocks = (cols + 3) / 4;
    ASSERT_EQ(blocked.size(), static_cast<std::size_t>(row_blocks * 128 * col_blocks * 4));
    std::size_t out = 0;
    for (std::int64_t rb = 0; rb < row_blocks; ++rb) {
      for (std::int64_t cb = 0; cb < col_blocks; ++cb) {
        for (std::int64_t r2 = 0; r2 < 32; ++r2) {  // after the swap: [32, 4 (r1), 4 (c)]
          for (std::int64_t r1 = 0; r1 < 4; ++r1) {
            for (std::int64_t c = 0; c < 4; ++c, ++out) {
              const std::int64_t row = rb * 128 + r1 * 32 + r2;
              const std::int64_t col = cb * 4 + c;
              const std::uint8_t want =
                  row < rows && col < cols ? scales[static_cast<std::size_t>(row * cols + col)] : 0;
              ASSERT_EQ(blocked[out], want) << rows << "x" << cols << " at " << row << "," << col;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(q::blocked_offset(1, 0, 8), 16);
  EXPECT_EQ(q::blocked_offset(32, 0, 8), 4);
  EXPECT_EQ(q::blocked_offset(0, 4, 8), 512);
  EXPECT_EQ(q::blocked_offset(128, 0, 8), 1024);
}

TEST(Quantise, BlockwiseScalesArePaddedToFourColumns) {
  const std::vector<float> s = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(q::padded_to_4(5), 8);
  EXPECT_EQ(q::padded_to_4(8), 8);
  EXPECT_EQ(q::pad_columns_to_4(s, 2, 5),
            (std::vector<float>{1, 2, 3, 4, 5, 0, 0, 0, 6, 7, 8, 9, 10, 0, 0, 0}));
  const q::Quantised unit = q::unit_scales(q::Recipe::block_128x128, 320, 640);
  EXPECT_EQ(unit.scale_rows, 3);
  EXPECT_EQ(unit.scale_cols, 5);
  EXPECT_EQ(unit.scales, std::vector<float>(15, 1.0F));
  EXPECT_EQ(q::unit_scales(q::Recipe::nv_e2m1, 2, 32).scale_bytes,
            std::vector<std::uint8_t>(4, q::encode_e4m3(1.0F)));
}

namespace {

// The formats' arithmetic definition, in double precision with libm (the encoders were this until
// they worked on the float's bits): the nearest value, ties to even, e4m3 saturating at 448.
float nearest_e4m3(float x) {
  if (std::isnan(x)) return x;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 448.0) return std::copysign(448.0F, x);
  if (a == 0.0) return std::copysign(0.0F, x);
  int e = 0;
  std::frexp(a, &e);
  const int quantum = a < 0.015625 ? -9 : e - 1 - 3;
  const double r = std::ldexp(std::nearbyint(std::ldexp(a, -quantum)), quantum);
  return std::copysign(static_cast<float>(r), x);
}

std::uint8_t nearest_e2m1_code(float x) {
  constexpr float kMagnitudes[] = {0.0F, 0.5F, 1.0F, 1.5F, 2.0F, 3.0F, 4.0F, 6.0F};
  const float a = std::min(std::fabs(x), 6.0F);
  unsigned best = 0;
  for (unsigned code = 1; code < 8; ++code) {
    const float d = std::fabs(kMagnitudes[code] - a);
    const float best_d = std::fabs(kMagnitudes[best] - a);
    if (d < best_d || (d == best_d && code % 2 == 0)) best = code;
  }
  return static_cast<std::uint8_t>(best | (x < 0.0F && best != 0 ? 0x8U : 0x0U));
}

float float_of(std::uint32_t u) {
  float x = 0.0F;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// Floats where rounding is decided: for every exponent from 2^-30 to 2^10 and every top 4 bits of
// the mantissa (e4m3 keeps 3, the 4th is the half), the low 19 bits at their edges (0, 1, a tie,
// either side of it, all ones) and at random; both signs; the special values; and 2^20 floats at
// random over every bit pattern.
std::vector<float> deciding_floats() {
  std::vector<float> out;
  std::mt19937 gen(7);
  const std::uint32_t edges[] = {0U, 1U, 0x3ffffU, 0x40000U, 0x40001U, 0x7fffeU, 0x7ffffU};
  for (std::uint32_t exponent = 127 - 30; exponent <= 127 + 10; ++exponent) {
    for (std::uint32_t top = 0; top < 16; ++top) {
      std::vector<std::uint32_t> lows(std::begin(edges), std::end(edges));
      for (int i = 0; i < 4; ++i) lows.push_back(gen() & 0x7ffffU);
      for (std::uint32_t low : lows) {
        const std::uint32_t bits = (exponent << 23U) | (top << 19U) | low;
        out.push_back(float_of(bits));
        out.push_back(float_of(bits | 0x80000000U));
      }
    }
  }
  for (float special : {0.0F,
                        -0.0F,
                        448.0F,
                        464.0F,
                        480.0F,
                        0.015625F,
                        0.0009765625F,
                        std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::max(),
                        std::numeric_limits<float>::denorm_min(),
                        std::numeric_limits<float>::min(),
                        0.25F,
                        0.75F,
                        1.25F,
                        1.75F,
                        2.5F,
                        3.5F,
                        5.0F,
                        6.0F,
                        7.0F}) {
    for (float f : {special, std::nextafter(special, 0.0F), std::nextafter(special, 1e30F)}) {
      out.push_back(f);
      out.push_back(-f);
    }
  }
  for (int i = 0; i < (1 << 20); ++i) out.push_back(float_of(gen()));
  return out;
}

}  // namespace

// The encoders on the float's bits agree with the formats' arithmetic definition, bit for bit, on
// every float where rounding is decided, NaN included (e4m3's NaN is 0x7F whatever its sign).
TEST(Quantise, TheBitLevelEncodersAreTheArithmeticDefinition) {
  std::size_t checked = 0;
  for (float x : deciding_floats()) {
    const float want = nearest_e4m3(x);
    const float got = q::round_e4m3(x);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << x;
      ASSERT_EQ(q::encode_e4m3(x), 0x7F) << x;
    } else {
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hexfloat << x;
      ASSERT_EQ(got, want) << std::hexfloat << x;
      ASSERT_EQ(q::decode_e4m3(q::encode_e4m3(x)), want) << std::hexfloat << x;
    }
    ASSERT_EQ(q::encode_e2m1(x), nearest_e2m1_code(x)) << std::hexfloat << x;
    ++checked;
  }
  EXPECT_GT(checked, 1000000U);
  EXPECT_EQ(q::encode_e2m1(std::numeric_limits<float>::quiet_NaN()), 0);
}
