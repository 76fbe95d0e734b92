#pragma once
// The element formats the engine puts on a device, made on the host: float16, bfloat16 and
// float8_e5m2 bits from a float (round to nearest, ties to even, as a CUDA or CPU conversion
// does), and back. The engine draws its inputs and builds their float64 references here, before
// LibTorch has loaded; the bits it uploads are exactly the values the reference multiplies.
// (e4m3, e2m1 and e8m0 are in quantise.hpp, with the recipes that use them.)

#include <cstdint>

namespace precision_probe {

std::uint16_t encode_fp16(float x);
float decode_fp16(std::uint16_t bits);

std::uint16_t encode_bf16(float x);
float decode_bf16(std::uint16_t bits);

// e5m2 is float16 with two mantissa bits: its top byte, rounded.
std::uint8_t encode_e5m2(float x);
float decode_e5m2(std::uint8_t bits);

}  // namespace precision_probe
