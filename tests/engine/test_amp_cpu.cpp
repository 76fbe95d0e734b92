// Mixed-precision training on the CPU, for real, with whatever LibTorch the build found.

#include <gtest/gtest.h>

#include "engine.hpp"

namespace pp = precision_probe;
namespace eng = precision_probe::engine;
using pp::Mode;

namespace {
const eng::Target kCpu{};
}

TEST(EngineAmpCpu, TheFp32ReferenceRunLearns) {
  const eng::AmpSetup s = eng::prepare_amp(kCpu, 7);
  ASSERT_TRUE(s.ready) << s.error;
  ASSERT_EQ(s.fp32_losses.size(), 24U);
  EXPECT_LT(s.fp32_losses.back(), 0.9 * s.fp32_losses.front());
  for (double l : s.fp32_losses) EXPECT_TRUE(std::isfinite(l));
}

TEST(EngineAmpCpu, Bf16AutocastTrainsOrSaysWhyNot) {
  const eng::AmpSetup s = eng::prepare_amp(kCpu, 8);
  const pp::AmpOutcome o = eng::run_amp(Mode::amp_bf16, s, kCpu);
#if PP_TORCH_AT_LEAST(2, 0)
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.matmul_dtype, "bf16");
  EXPECT_EQ(o.loss_dtype, "fp32");
  EXPECT_LE(*o.loss_rel_diff, o.loss_tolerance);
  EXPECT_TRUE(o.params_changed);
  EXPECT_FALSE(o.peak_bytes.has_value());  // no allocator statistics on the CPU
#else
  // LibTorch 1.13's CPU autocast leaves layer_norm's fp32 parameters next to a bf16 input.
  EXPECT_FALSE(o.ran);
  EXPECT_EQ(o.error_kind, pp::ErrorKind::not_supported);
  EXPECT_NE(o.error.find("layer_norm"), std::string::npos) << o.error;
#endif
}

TEST(EngineAmpCpu, Fp16LossScalingNeedsItsCpuKernels) {
  const eng::AmpSetup s = eng::prepare_amp(kCpu, 9);
  const pp::AmpOutcome o = eng::run_amp(Mode::amp_fp16, s, kCpu);
#if PP_TORCH_AT_LEAST(2, 3)
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_TRUE(o.overflow_handled);
  EXPECT_GE(o.skipped_steps, 1);
#else
  EXPECT_EQ(o.error_kind, pp::ErrorKind::not_supported) << o.error;
  EXPECT_FALSE(o.error.empty());
#endif
}
