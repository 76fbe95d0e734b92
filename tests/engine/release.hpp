#pragma once
// The LibTorch release an engine test runs against: the one ctest names (PP_TEST_TORCH, a
// site-packages holding torch/; its version from its version.py: tests/CMakeLists.txt registers
// the tests once per release). A test says which release it means by asking this.

#include <memory>
#include <string>

#include "engine/checks/target.hpp"
#include "engine/torch/torch.hpp"

namespace precision_probe::testing {

struct Release {
  std::string site;               // holds torch/lib/libtorch_cpu.so
  std::string version;            // "2.9.1"
  Version release;                // 2.9
  bool has_cuda_library() const;  // torch/lib/libtorch_cuda.so is there (not in ./dev's cache)
  std::string cpu_library() const { return site + "/torch/lib/libtorch_cpu.so"; }
  std::string cuda_library() const { return site + "/torch/lib/libtorch_cuda.so"; }
};

// The release of this test process; nullptr where ctest named none (the test then skips).
const Release* release();

// The release's libtorch_cpu.so, loaded once for the process (its stderr captured, as the worker
// does), or why it cannot be.
Expected<const engine::Torch*> cpu_torch();

// A target on the CPU of the loaded release.
engine::Target cpu_target(const engine::Torch& torch);

// `library` of the release opened again, its operator table as the image's native_functions.yaml
// would set it with every entry whose `func:` starts `name(` taken out (a release that has
// dropped the operator), or why it cannot be.
Expected<std::unique_ptr<engine::Torch>> torch_without(const std::string& library, bool cuda,
                                                       const std::string& name);

}  // namespace precision_probe::testing

// Skips (saying why) unless a release is given and its libtorch_cpu.so loads.
#define PP_REQUIRE_CPU_TORCH(torch)                                \
  const auto pp_loaded_ = ::precision_probe::testing::cpu_torch(); \
  if (!pp_loaded_) GTEST_SKIP() << pp_loaded_.error();             \
  const ::precision_probe::engine::Torch* torch = *pp_loaded_
