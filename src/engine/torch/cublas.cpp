#include "engine/torch/cublas.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "engine/torch/torch.hpp"

#if defined(PP_HAVE_CUBLAS_H) && __has_include(<cublas_api.h>)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wswitch-enum"  // the header's own inline functions
#include <cublas_api.h>
#pragma GCC diagnostic pop
static_assert(CUBLAS_OP_N == 0 && CUBLAS_GEMM_DEFAULT == -1 && CUDA_R_32F == 0);
static_assert(CUBLAS_COMPUTE_32F_FAST_TF32 == 77 && CUBLAS_STATUS_SUCCESS == 0);
static_assert(MAJOR_VERSION == 0 && MINOR_VERSION == 1 && PATCH_LEVEL == 2);
#endif

namespace precision_probe::engine {

namespace {

using Status = int;  // cublasStatus_t
constexpr int kOpN = 0;
constexpr int kGemmDefault = -1;
constexpr int kR32F = 0;
constexpr int kCompute32FFastTf32 = 77;

}  // namespace

// The entry points, with the versioned names cublas_v2.h maps the plain ones to.
struct Cublas::Api {
  Status (*create)(void**) = nullptr;            // cublasCreate_v2
  Status (*destroy)(void*) = nullptr;            // cublasDestroy_v2
  Status (*set_stream)(void*, void*) = nullptr;  // cublasSetStream_v2
  Status (*gemm_ex)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*,
                    int, int, const void*, void*, int, int, int, int) = nullptr;
  Status (*get_property)(int,
                         int*) = nullptr;  // cublasGetProperty (MAJOR_VERSION 0, MINOR 1, PATCH 2)
  const char* (*status_name)(Status) = nullptr;  // cublasGetStatusName
};

Expected<std::unique_ptr<Cublas>> Cublas::open(const Torch& torch, void* stream) {
  return open([&torch](const char* name) { return torch.symbol(name); }, stream);
}

Expected<std::unique_ptr<Cublas>> Cublas::open(const SymbolFinder& symbol, void* stream) {
  std::unique_ptr<Cublas> c(new Cublas);
  c->api_ = std::make_unique<Api>();
  Api& a = *c->api_;
  auto find = [&symbol](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(symbol(name));
    return slot != nullptr;
  };
  for (auto [ok, name] : {std::pair{find(a.create, "cublasCreate_v2"), "cublasCreate_v2"},
                          {find(a.destroy, "cublasDestroy_v2"), "cublasDestroy_v2"},
                          {find(a.set_stream, "cublasSetStream_v2"), "cublasSetStream_v2"},
                          {find(a.gemm_ex, "cublasGemmEx"), "cublasGemmEx"}}) {
    if (!ok) return Unexpected{fmt::format("the image's LibTorch carries no cuBLAS {}", name)};
  }
  find(a.get_property, "cublasGetProperty");
  find(a.status_name, "cublasGetStatusName");
  if (const Status s = a.create(&c->handle_); s != 0) {
    return Unexpected{fmt::format("cublasCreate failed: status {}", s)};
  }
  if (const Status s = a.set_stream(c->handle_, stream); s != 0) {
    return Unexpected{fmt::format("cublasSetStream failed: status {}", s)};
  }
  int v[3] = {};
  c->name_ = "cuBLAS";
  if (a.get_property != nullptr && a.get_property(0, &v[0]) == 0 && a.get_property(1, &v[1]) == 0 &&
      a.get_property(2, &v[2]) == 0) {
    c->name_ = fmt::format("cuBLAS {}.{}.{}", v[0], v[1], v[2]);
  }
  return c;
}

Cublas::~Cublas() {
  if (handle_ != nullptr) api_->destroy(handle_);
}

void Cublas::gemm_tf32(const Tensor& a, const Tensor& b, const Tensor& c) const {
  const Sizes sa = a.sizes();
  const Sizes sb = b.sizes();
  const Sizes sc = c.sizes();
  const bool shapes = sa.size() == 2 && sb.size() == 2 && sc.size() == 2 && sa[1] == sb[0] &&
                      sc[0] == sa[0] && sc[1] == sb[1];
  for (const Tensor* t : {&a, &b, &c}) {
    if (!shapes || t->scalar() != Scalar::f32 || t->strides() != contiguous_strides(t->sizes())) {
      throw std::logic_error("cuBLAS's TF32 GEMM takes row-major fp32 matrices of matching sizes");
    }
  }
  const auto m = static_cast<int>(sa[0]);
  const auto k = static_cast<int>(sa[1]);
  const auto n = static_cast<int>(sb[1]);
  const float one = 1.0F;
  const float zero = 0.0F;
  // Row-major C = A B is column-major C^T = B^T A^T: B's rows are B^T's columns (ld n), A's A^T's.
  const Status s =
      api_->gemm_ex(handle_, kOpN, kOpN, n, m, k, &one, b.data(), kR32F, n, a.data(), kR32F, k,
                    &zero, c.data(), kR32F, n, kCompute32FFastTf32, kGemmDefault);
  if (s != 0) {
    const char* status = api_->status_name != nullptr ? api_->status_name(s) : nullptr;
    throw std::runtime_error(fmt::format("cublasGemmEx (TF32) failed: {}",
                                         status != nullptr ? status : std::to_string(s)));
  }
}

}  // namespace precision_probe::engine
