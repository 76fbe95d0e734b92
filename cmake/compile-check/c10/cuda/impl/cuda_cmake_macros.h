#pragma once
// Stand-in for the header a CUDA build of LibTorch generates. Used only by the compile-only
// check of the engine's CUDA code against a CPU-only LibTorch (src/CMakeLists.txt).
