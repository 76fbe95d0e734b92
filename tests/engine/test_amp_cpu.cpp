// Mixed-precision training on the CPU, for real, with whatever LibTorch the build found.

#include <gtest/gtest.h>

#include "engine/engine.hpp"

namespace pp = precision_probe;
namespace eng = precision_probe::engine;
using pp::Mode;

namespace {
const eng::Target kCpu{};
}

namespace {
pp::AmpOutcome run_one(Mode mode, const eng::AmpSetup& s) {
  const auto outcomes = eng::run_amp({mode}, s, kCpu);
  EXPECT_EQ(outcomes.size(), 1U);
  EXPECT_EQ(outcomes.front().first, mode);
  return outcomes.front().second;
}
}  // namespace

TEST(EngineAmpCpu, TheFp32ReferenceRunLearns) {
  const eng::AmpSetup s = eng::prepare_amp(kCpu, 7);
  ASSERT_TRUE(s.ready) << s.error;
  const std::vector<double> losses = eng::train_fp32(s, kCpu);
  ASSERT_EQ(losses.size(), 24U);
  EXPECT_LT(losses.back(), 0.9 * losses.front());
  for (double l : losses) EXPECT_TRUE(std::isfinite(l));
  // The same steps on the same data give the same losses: runs are reproducible, so the AMP
  // runs can be compared with it.
  EXPECT_EQ(eng::train_fp32(s, kCpu), losses);
}

TEST(EngineAmpCpu, BothModesAtOnceGiveWhatEachGivesAlone) {
  const eng::AmpSetup s = eng::prepare_amp(kCpu, 10);
  const auto both = eng::run_amp({Mode::amp_fp16, Mode::amp_bf16}, s, kCpu);
  ASSERT_EQ(both.size(), 2U);
  EXPECT_EQ(both[0].first, Mode::amp_fp16);
  EXPECT_EQ(both[1].first, Mode::amp_bf16);
  for (const auto& [mode, o] : both) {
    const pp::AmpOutcome alone = run_one(mode, s);
    EXPECT_EQ(o.ok, alone.ok) << pp::mode_key(mode) << ": " << o.error << " / " << alone.error;
    EXPECT_EQ(o.error_kind, alone.error_kind) << pp::mode_key(mode);
    EXPECT_EQ(o.loss_end, alone.loss_end) << pp::mode_key(mode);
    EXPECT_EQ(o.fp32_loss_end, alone.fp32_loss_end) << pp::mode_key(mode);
  }
}

TEST(EngineAmpCpu, Bf16AutocastTrainsOrSaysWhyNot) {
  const eng::AmpSetup s = eng::prepare_amp(kCpu, 8);
  const pp::AmpOutcome o = run_one(Mode::amp_bf16, s);
#if PP_TORCH_AT_LEAST(2, 0)
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.matmul_dtype, pp::DType::bf16);
  EXPECT_EQ(o.loss_dtype, pp::DType::fp32);
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
  const pp::AmpOutcome o = run_one(Mode::amp_fp16, s);
#if PP_TORCH_AT_LEAST(2, 3)
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_TRUE(o.overflow_handled);
  EXPECT_GE(o.skipped_steps, 1);
#else
  EXPECT_EQ(o.error_kind, pp::ErrorKind::not_supported) << o.error;
  EXPECT_FALSE(o.error.empty());
#endif
}
