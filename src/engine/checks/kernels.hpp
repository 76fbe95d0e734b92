#pragma once
// The kernel of each matmul mode, keyed by the mode table's enum (modes.hpp): how its operands
// are made from float64 data (the scaled recipes through common/quantise.hpp), what they then
// stand for (for the float64 reference), and how the product is computed on a device. The smoke
// tests and the benchmark both go through here; adding a mode means a case in each switch of
// kernels.cpp (the compiler names a missing one).

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.hpp"

namespace precision_probe::engine {

// The smoke test's GEMM, [m, k] x [k, n].
struct Shape {
  std::int64_t m, k, n;
};
Shape smoke_shape(Mode mode, const Target& target);
// The benchmark's size for a mode asked to run at `n` (block-scaled recipes need whole blocks).
std::int64_t bench_size_for(Mode mode, std::int64_t n);

// From float64 inputs a64 [m, k] and b64 [k, n].
QuantisedOperands quantise_operands(Mode mode, const at::Tensor& a64, const at::Tensor& b64);

// One GEMM of a mode, ready to be called again and again: operands and scales on the device in
// the layout the call wants, made once.
class Gemm {
 public:
  Gemm(Mode mode, at::Tensor a, at::Tensor b, std::vector<at::Tensor> scales_a,
       std::vector<at::Tensor> scales_b);
  at::Tensor operator()() const;

 private:
  Mode mode_;
  at::Tensor a_, b_;
  std::vector<at::Tensor> scales_a_, scales_b_;
};

// `operands` (from quantise_operands) on the device, as a GEMM.
Gemm device_gemm(Mode mode, const QuantisedOperands& operands, const Target& target);
// Random square operands of size `n` (bench_size_for), made on the device with scales of 1, as a
// GEMM (the benchmark's).
Gemm random_gemm(Mode mode, const Target& target, std::int64_t n, at::Generator& gen);

// Whether this LibTorch has the API the mode's kernel needs, and on a GPU was built with the CUDA
// it needs and accepts the recipe on this GPU (the mode table's); `why` says what lacks.
bool available_in_this_libtorch(Mode mode, const Target& target, std::string& why);

// Bytes per element of the mode's operands and of its output (for sizing a benchmark).
double operand_bytes(Mode mode);
double output_bytes(Mode mode);

}  // namespace precision_probe::engine
