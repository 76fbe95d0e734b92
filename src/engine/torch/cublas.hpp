#pragma once
// cuBLAS as the loaded LibTorch carries it (a dependency of libtorch_cuda.so, its functions found
// with dlsym through LibTorch's handle: nothing more is loaded), for the one GEMM the engine asks
// of it directly: fp32 operands with TF32 compute named in the call (CUBLAS_COMPUTE_32F_FAST_TF32),
// what PyTorch's own fp32 matmuls run once TF32 is allowed. LibTorch reads its TF32 switch
// (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE) once per process, and its C ABI has no other; asking cuBLAS
// proves tf32 in the process that proves fp32 as fp32 (docs/engine.md, "TF32").

#include <functional>
#include <memory>
#include <string>

#include "precision_probe/expected.hpp"
#include "engine/torch/tensor.hpp"

namespace precision_probe::engine {

class Cublas {
 public:
  // A handle of the image's cuBLAS for the calling thread's current device, its work queued on
  // `stream` (LibTorch's current one); the error says which function the image lacks or failed.
  static Expected<std::unique_ptr<Cublas>> open(const Torch& torch, void* stream);
  // The same with the functions found by `symbol` (a test's stand-in for LibTorch's handle).
  using SymbolFinder = std::function<void*(const char*)>;
  static Expected<std::unique_ptr<Cublas>> open(const SymbolFinder& symbol, void* stream);
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  ~Cublas();

  // c [m, n] = a [m, k] · b [k, n]: fp32, row-major, contiguous, on the handle's device; TF32
  // tensor cores. Throws std::runtime_error naming cuBLAS's status.
  void gemm_tf32(const Tensor& a, const Tensor& b, const Tensor& c) const;
  // "cuBLAS 13.1.0" (cublasGetProperty), or "cuBLAS" where it does not say.
  const std::string& name() const { return name_; }

 private:
  Cublas() = default;
  struct Api;
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;
  std::string name_;
};

}  // namespace precision_probe::engine
