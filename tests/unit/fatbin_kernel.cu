// GPU code for the fat-binary fixtures of test_fatbin.cpp, compiled by nvcc (tests/CMakeLists.txt).
// Each translation unit becomes one fat-binary container: the fixture that needs several compiles
// this file several times, under other names.
#ifndef PP_FATBIN_KERNEL
#define PP_FATBIN_KERNEL add_one
#define PP_FATBIN_LAUNCH launch_add_one
#endif

namespace {

__global__ void PP_FATBIN_KERNEL(float* x, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] += 1.0f;
}

}  // namespace

extern "C" void PP_FATBIN_LAUNCH(float* x, int n) {
  PP_FATBIN_KERNEL<<<(n + 255) / 256, 256>>>(x, n);
}
