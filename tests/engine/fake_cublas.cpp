// A stand-in for cuBLAS's few functions the engine calls (engine/torch/cublas.hpp), on host memory:
// cublasGemmEx multiplies column-major fp32 matrices as cuBLAS does, and only with the compute
// type the engine must ask for (CUBLAS_COMPUTE_32F_FAST_TF32, 77). FAKE_CUBLAS_FAIL=1 makes the
// GEMM fail with CUBLAS_STATUS_EXECUTION_FAILED.

#include <cstdlib>

extern "C" {

namespace {
int g_handle = 0;
}

int cublasCreate_v2(void** handle) {
  *handle = &g_handle;
  return 0;
}
int cublasDestroy_v2(void* /*handle*/) { return 0; }
int cublasSetStream_v2(void* /*handle*/, void* /*stream*/) { return 0; }
int cublasGetProperty(int type, int* value) {
  static const int kVersion[] = {13, 1, 0};
  if (type < 0 || type > 2) return 7;
  *value = kVersion[type];
  return 0;
}
const char* cublasGetStatusName(int status) {
  return status == 13 ? "CUBLAS_STATUS_EXECUTION_FAILED" : "CUBLAS_STATUS_INVALID_VALUE";
}

// C (m x n, ldc) = alpha op(A) (m x k, lda) op(B) (k x n, ldb) + beta C, column-major, no
// transposes.
int cublasGemmEx(void* /*handle*/, int transa, int transb, int m, int n, int k, const void* alpha,
                 const void* a, int atype, int lda, const void* b, int btype, int ldb,
                 const void* beta, void* c, int ctype, int ldc, int compute, int /*algo*/) {
  const char* fail = std::getenv("FAKE_CUBLAS_FAIL");
  if (fail != nullptr && fail[0] == '1') return 13;
  if (transa != 0 || transb != 0 || atype != 0 || btype != 0 || ctype != 0 || compute != 77 ||
      lda < m || ldb < k || ldc < m) {
    return 7;
  }
  const auto* fa = static_cast<const float*>(a);
  const auto* fb = static_cast<const float*>(b);
  auto* fc = static_cast<float*>(c);
  const float al = *static_cast<const float*>(alpha);
  const float be = *static_cast<const float*>(beta);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0.0;
      for (int p = 0; p < k; ++p) sum += double(fa[i + p * lda]) * double(fb[p + j * ldb]);
      float& out = fc[i + j * ldc];
      out = static_cast<float>(al * sum + (be == 0.0F ? 0.0 : be * out));
    }
  }
  return 0;
}

}  // extern "C"
