#include "engine/host/float_formats.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace precision_probe {

namespace {

float float_of(std::uint32_t u) {
  float x = 0.0F;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// A float in a format of fp16's exponent (5 bits, bias 15) and `m` mantissa bits: fp16 (10) and
// e5m2 (2). Round to nearest, ties to even; overflow gives infinity, NaN a quiet NaN.
std::uint16_t encode_e5(float x, int m) {
  const std::uint32_t u = float_bits(x);
  const auto sign = static_cast<std::uint16_t>(((u >> 31U) & 1U) << static_cast<unsigned>(5 + m));
  const std::uint32_t magnitude = u & 0x7fffffffU;
  const std::uint32_t inf = 0x1fU << static_cast<unsigned>(m);
  if (magnitude > 0x7f800000U) return static_cast<std::uint16_t>(sign | inf | (1U << (m - 1)));
  const int exponent = static_cast<int>(magnitude >> 23U) - 127;
  std::uint32_t out = 0;
  if (exponent >= -14) {
    // Normal: the exponent rebiased, the mantissa rounded; a carry out of the mantissa raises the
    // exponent, as it should, and past the largest finite value gives infinity.
    if (exponent > 15) return static_cast<std::uint16_t>(sign | inf);
    const std::uint32_t rebiased = magnitude - ((127U - 15U) << 23U);
    out = shift_rounded(rebiased, 23 - m);
  } else {
    // Subnormal: the significand with its implicit bit, in units of the smallest subnormal.
    const std::uint32_t significand = (magnitude & 0x7fffffU) | 0x800000U;
    out = shift_rounded(significand, 23 - m - 14 - exponent);
  }
  return static_cast<std::uint16_t>(sign | (out > inf ? inf : out));
}

}  // namespace

std::uint16_t encode_fp16(float x) { return encode_e5(x, 10); }

float decode_fp16(std::uint16_t bits) {
  const std::uint32_t sign = (bits & 0x8000U) << 16U;
  const int exponent = (bits >> 10U) & 0x1f;
  const std::uint32_t mantissa = bits & 0x3ffU;
  if (exponent == 0x1f) {
    return float_of(sign | 0x7f800000U | (mantissa << 13U));
  }
  if (exponent == 0) {
    const float value = std::ldexp(static_cast<float>(mantissa), -24);
    return (sign != 0U) ? -value : value;
  }
  return float_of(sign | (static_cast<std::uint32_t>(exponent + 127 - 15) << 23U) |
                  (mantissa << 13U));
}

std::uint16_t encode_bf16(float x) {
  const std::uint32_t u = float_bits(x);
  if ((u & 0x7fffffffU) > 0x7f800000U) return static_cast<std::uint16_t>((u >> 16U) | 0x40U);
  return static_cast<std::uint16_t>(shift_rounded(u, 16));
}

float decode_bf16(std::uint16_t bits) { return float_of(static_cast<std::uint32_t>(bits) << 16U); }

std::uint8_t encode_e5m2(float x) { return static_cast<std::uint8_t>(encode_e5(x, 2)); }

float decode_e5m2(std::uint8_t bits) { return decode_fp16(static_cast<std::uint16_t>(bits << 8U)); }

}  // namespace precision_probe
