#pragma once
// The kernel of each matmul mode, keyed by the mode table's enum (modes.hpp): how its operands
// are made on the host from float64 data (the scaled recipes through engine/host/quantise.hpp),
// what they then stand for (for the float64 reference), which operator multiplies them, and what a
// release's C ABI must have for it. The smoke tests, the benchmark and the soak all go through
// here; adding a mode means a case in each switch of kernels.cpp (the compiler names a missing
// one).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/checks/target.hpp"
#include "engine/torch/cublas.hpp"
#include "engine/torch/ops.hpp"
#include "precision_probe/modes.hpp"

namespace precision_probe::engine {

// The smoke test's GEMM, [m, k] x [k, n].
struct Shape {
  std::int64_t m, k, n;
};
Shape smoke_shape(Mode mode, bool gpu);
// The benchmark's size for a mode asked to run at `n` (block-scaled recipes need whole blocks).
std::int64_t bench_size_for(Mode mode, std::int64_t n);

// A tensor's bytes on the host, laid out as the call wants it on the device.
struct HostTensor {
  std::vector<std::uint8_t> bytes;
  Sizes sizes;
  Sizes strides;  // of the device tensor (and of `bytes`): column-major operands are (1, rows)
  Scalar scalar = Scalar::f32;
};

// A mode's operands on the host, made from float64 data.
struct HostOperands {
  HostTensor a, b;  // b is [k, n] as the call sees it
  std::vector<HostTensor> scales_a, scales_b;
  std::vector<double> a_values;  // [m, k] row-major: what `a` and its scales stand for
  std::vector<double> b_values;  // [k, n] row-major
  bool exact = false;            // int8: the product is exact
  std::string method;            // "aten::mm bfloat16"
};

// From float64 inputs a64 [m, k] and b64 [k, n], row-major.
HostOperands host_operands(Mode mode, const std::vector<double>& a64,
                           const std::vector<double>& b64, Shape shape);

// One GEMM of a mode, ready to be called again and again: operands and scales on the device in
// the layout the call wants, made once.
// tf32 on a GPU asks the image's cuBLAS for TF32 by name (engine/torch/cublas.hpp) on LibTorch's
// current stream of the operands' device, as it was when the Gemm was made.
class Gemm {
 public:
  Gemm(Mode mode, Tensor a, Tensor b, std::vector<Tensor> scales_a, std::vector<Tensor> scales_b);
  Tensor operator()() const;

 private:
  Mode mode_;
  Tensor a_, b_;
  std::vector<Tensor> scales_a_, scales_b_;
  Op op_;                           // kernel_op's, on the operands' device
  std::shared_ptr<Cublas> cublas_;  // tf32 on a GPU
};

Tensor to_device(const HostTensor& t, const Target& target);
Gemm device_gemm(Mode mode, const HostOperands& operands, const Target& target);
// Random square operands of size `n` (bench_size_for) made on the device (normal_, random_), with
// scales of 1: the benchmark's.
Gemm random_gemm(Mode mode, const Target& target, std::int64_t n);
// Square operands of size `n` that depend on `seed` alone (a host-drawn tile repeated over each
// operand), the same on every device: the soak's, whose golden results are compared across GPUs.
Gemm seeded_gemm(Mode mode, const Target& target, std::int64_t n, std::uint64_t seed);

// The operator that multiplies a mode's operands with this LibTorch on `device`. The scaled FP8
// modes and MXFP8 go through _scaled_mm_v2 wherever it runs (lists, 2.10; on the CPU a kernel,
// 2.12), and through _scaled_mm (v1) where it does not, or where the image's schema of v2
// differs; an image without v1 gets v2 in any case (kernel_problem says when that cannot run).
// NVFP4 and MXFP4: v2 only. Throws std::logic_error for the training modes.
Op kernel_op(Mode mode, const Torch& torch, Device device);

// How the mode's product is called with this LibTorch on `device`: `method` (HostOperands',
// which names the mode table's operator), or, where kernel_op chose _scaled_mm, that name and why.
std::string kernel_method(Mode mode, const std::string& method, const Torch& torch, Device device);

// Why this LibTorch cannot run the mode's kernel on `device` through its stable C ABI ("" when it
// can): the element types (2.11) or list arguments (2.10) its call needs, a CPU kernel the release
// lacks, or an operator whose schema in the image differs or is missing (for the modes either
// scaled-mm operator can run: both of them).
std::string kernel_problem(Mode mode, const Torch& torch, Device device);

// Bytes per element of the mode's operands and of its output (for sizing a benchmark).
double operand_bytes(Mode mode);
double output_bytes(Mode mode);

}  // namespace precision_probe::engine
