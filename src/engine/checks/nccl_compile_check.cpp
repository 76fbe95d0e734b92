// Compiles the NCCL collective (nccl.cpp) with NCCL enabled, for the compile-only check of GPU
// code against a CPU-only LibTorch (src/CMakeLists.txt). Never linked.
#define PP_HAVE_NCCL 1
#define USE_C10D_NCCL 1
#include "nccl.cpp"  // NOLINT(bugprone-suspicious-include)
