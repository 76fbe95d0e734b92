#pragma once
// The element formats the engine puts on a device, made on the host: float16, bfloat16 and
// float8_e5m2 bits from a float (round to nearest, ties to even, as a CUDA or CPU conversion
// does), and back. The engine draws its inputs and builds their float64 references here, before
// LibTorch has loaded; the bits it uploads are exactly the values the reference multiplies.
// (e4m3, e2m1 and e8m0 are in quantise.hpp, with the recipes that use them.)

#include <cstdint>
#include <cstring>

namespace precision_probe {

std::uint16_t encode_fp16(float x);
float decode_fp16(std::uint16_t bits);

std::uint16_t encode_bf16(float x);
float decode_bf16(std::uint16_t bits);

// e5m2 is float16 with two mantissa bits: its top byte, rounded.
std::uint8_t encode_e5m2(float x);
float decode_e5m2(std::uint8_t bits);

// What every encoder on a float's bits uses (these and quantise.hpp's e4m3; inline: they run for
// every element of every input): the bits, and a right shift rounded to nearest, ties to even (0
// from 32 bits on; `value` itself for 0 or less).
inline std::uint32_t float_bits(float x) {
  std::uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

inline std::uint32_t shift_rounded(std::uint32_t value, int shift) {
  if (shift <= 0) return value;
  if (shift >= 32) return 0;
  const std::uint32_t kept = value >> static_cast<unsigned>(shift);
  const std::uint32_t rest = value & ((1U << static_cast<unsigned>(shift)) - 1U);
  const std::uint32_t half = 1U << static_cast<unsigned>(shift - 1);
  if (rest > half || (rest == half && (kept & 1U) != 0)) return kept + 1;
  return kept;
}

}  // namespace precision_probe
