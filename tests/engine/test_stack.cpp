#include <gtest/gtest.h>

#include "engine/engine.hpp"

namespace pp = precision_probe;
namespace eng = precision_probe::engine;

TEST(EngineStack, DescribesThisLibTorch) {
  const pp::StackInfo s = eng::describe_stack(true);
  EXPECT_TRUE(s.available);
  EXPECT_EQ(s.libtorch_version, TORCH_VERSION);
  EXPECT_GE(s.cpu_threads, 1);
#ifdef PP_TORCH_CUDA
  EXPECT_TRUE(s.cuda_built);
  EXPECT_FALSE(s.cuda_version.empty());
  EXPECT_FALSE(s.arch_list.empty()) << s.error;
#else
  EXPECT_FALSE(s.cuda_built);
  EXPECT_TRUE(s.arch_list.empty());
#endif
}

TEST(EngineStack, TheCheapDescriptionSkipsTheCudaConfiguration) {
  const pp::StackInfo s = eng::describe_stack(false);
  EXPECT_TRUE(s.available);
  EXPECT_EQ(s.libtorch_version, TORCH_VERSION);
  EXPECT_TRUE(s.arch_list.empty());
  EXPECT_TRUE(s.cuda_version.empty());
}

TEST(EngineStack, CudnnVersionsOfBothEncodings) {
  EXPECT_EQ(eng::format_cudnn_version(8907), "8.9.7");
  EXPECT_EQ(eng::format_cudnn_version(91900), "9.19.0");
  EXPECT_EQ(eng::format_cudnn_version(90100), "9.1.0");
  EXPECT_EQ(eng::format_cudnn_version(0), "");
}

TEST(EngineStack, ParsesLibTorchsCudaConfiguration) {
  // The CUDA part of torch.__config__.show(), as LibTorch 2.x prints it.
  const std::string config =
      "  - CUDA Runtime 12.8\n"
      "  - NVCC architecture flags: "
      "-gencode;arch=compute_75,code=sm_75;-gencode;arch=compute_80,code=sm_80;"
      "-gencode;arch=compute_90,code=sm_90;-gencode;arch=compute_120,code=compute_120\n"
      "  - CuDNN 9.7.1\n";
  pp::StackInfo s;
  eng::parse_show_config(config, s);
  EXPECT_EQ(s.cuda_version, "12.8");
  EXPECT_EQ(s.cudnn_version, "9.7.1");
  EXPECT_EQ(s.arch_list, (std::vector<std::string>{"sm_75", "sm_80", "sm_90", "compute_120"}));
  // "Built with" wins over the runtime found at run time.
  pp::StackInfo t;
  eng::parse_show_config("  - CUDA Runtime 13.0\n  - Built with CUDA Runtime 12.8\n", t);
  EXPECT_EQ(t.cuda_version, "12.8");
}
