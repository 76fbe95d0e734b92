// Stands in for PyTorch's libtorch_python.so in test_fatbin.cpp: the string that
// torch/csrc/cuda/Module.cpp compiles in (C10_STRINGIZE(CUDA_ARCH_FLAGS)) and
// torch._C._cuda_getArchFlags() returns. Built by the host compiler: no CUDA needed.

#ifndef PP_FAKE_ARCH_FLAGS
#define PP_FAKE_ARCH_FLAGS "sm_80 sm_90 compute_90"
#endif

extern "C" const char* pp_fake_cuda_arch_flags() {
  static const char* flags = PP_FAKE_ARCH_FLAGS;
  return flags;
}
