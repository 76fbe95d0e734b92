#pragma once
// The kernel of each matmul mode, keyed by the mode table's enum (modes.hpp): how its operands
// are made from float64 data, what they then hold (for the float64 reference), and how the
// product is computed on a device. The smoke tests and the benchmark both go through here; adding
// a mode means a case in each switch of kernels.cpp (the compiler names a missing one).

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "engine/engine.hpp"

namespace precision_probe::engine {

// From float64 inputs a64 [m, k] and b64 [k, n] (fp4 draws its codes from `gen` instead).
QuantisedOperands quantise_operands(Mode mode, const at::Tensor& a64, const at::Tensor& b64,
                                    at::Generator& gen);

// One GEMM of a mode, ready to be called again and again: operands on the device in the layout
// the call wants, and what the call needs besides (fp8's and fp4's scales), made once.
class Gemm {
 public:
  Gemm(Mode mode, at::Tensor a, at::Tensor b, const Target& target);
  at::Tensor operator()() const;

 private:
  Mode mode_;
  at::Tensor a_, b_, scale_a_, scale_b_;
};

// `operands` (from quantise_operands) on the device, as a GEMM.
Gemm device_gemm(Mode mode, const QuantisedOperands& operands, const Target& target);
// Random square operands of size `n`, made on the device, as a GEMM (the benchmark's).
Gemm random_gemm(Mode mode, const Target& target, std::int64_t n, at::Generator& gen);

// Whether this LibTorch has the API the mode's kernel needs, and on a GPU was built with the CUDA
// it needs (the mode table's versions); `why` says what lacks.
bool available_in_this_libtorch(Mode mode, const Target& target, std::string& why);

// Bytes per element of the mode's operands and of its output (for sizing a benchmark).
double operand_bytes(Mode mode);
double output_bytes(Mode mode);

}  // namespace precision_probe::engine
