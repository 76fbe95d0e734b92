// Stands in for a LibTorch's libtorch_cpu.so and libtorch_cuda.so in the fake stacks of the CLI
// tests (tests/CMakeLists.txt): the probe's finder only sees that they are there (a real engine
// that loaded one would find none of the stable C ABI in it). It also stands in for the cuBLAS and
// CUDA runtime functions that bench/floor.c's --gemms finds through LibTorch's handle: each call
// succeeds and is counted on stderr ("fake cublas: NAME"), unless FAKE_CUBLAS_STATUS makes every
// GEMM return that status, or FAKE_CUDA_MALLOC_STATUS cudaMalloc.

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {

int pp_fake_libtorch() { return 0; }

namespace {

int gemm_status(const char* name) {
  std::fprintf(stderr, "fake cublas: %s\n", name);
  const char* status = std::getenv("FAKE_CUBLAS_STATUS");
  return status != nullptr ? std::atoi(status) : 0;
}

}  // namespace

int cudaSetDevice(int /*device*/) { return 0; }
int cudaMalloc(void** p, std::size_t bytes) {
  if (const char* status = std::getenv("FAKE_CUDA_MALLOC_STATUS")) return std::atoi(status);
  *p = std::malloc(bytes);
  return *p != nullptr ? 0 : 2;
}
int cudaMemset(void* p, int value, std::size_t bytes) {
  std::memset(p, value, bytes);
  return 0;
}
int cudaDeviceSynchronize() { return 0; }
int cublasCreate_v2(void** handle) {
  static int the_handle = 0;
  *handle = &the_handle;
  return 0;
}
int cublasSgemm_v2(void* /*handle*/, int /*ta*/, int /*tb*/, int /*m*/, int /*n*/, int /*k*/,
                   const float* /*alpha*/, const float* /*a*/, int /*lda*/, const float* /*b*/,
                   int /*ldb*/, const float* /*beta*/, float* /*c*/, int /*ldc*/) {
  return gemm_status("cublasSgemm_v2");
}
int cublasGemmEx(void* /*handle*/, int ta, int /*tb*/, int /*m*/, int /*n*/, int /*k*/,
                 const void* /*alpha*/, const void* /*a*/, int atype, int /*lda*/,
                 const void* /*b*/, int /*btype*/, int /*ldb*/, const void* /*beta*/, void* /*c*/,
                 int ctype, int /*ldc*/, int compute, int /*algo*/) {
  char name[96];
  std::snprintf(name, sizeof name, "cublasGemmEx type %d out %d compute %d transa %d", atype, ctype,
                compute, ta);
  return gemm_status(name);
}

}  // extern "C"
