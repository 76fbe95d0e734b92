// Mixed-precision training on a real GPU. Label "gpu": skips, with the reason, without one.

#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.hpp"

namespace pp = precision_probe;
namespace eng = precision_probe::engine;
using pp::Mode;

namespace {

bool have_gpu() {
#ifdef PP_TORCH_CUDA
  return at::hasCUDA();
#else
  return false;
#endif
}

eng::Target gpu0() {
  eng::Target t;
  t.cuda = true;
  t.device = at::Device(at::kCUDA, 0);
  return t;
}

}  // namespace

TEST(EngineAmpGpu, Fp16WithDynamicLossScalingFollowsGradScaler) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU visible to LibTorch";
  eng::AmpSetup s = eng::prepare_amp(gpu0(), 21);
  ASSERT_TRUE(s.ready) << s.error;
  pp::AmpOutcome o = eng::run_amp({Mode::amp_fp16}, s, gpu0()).at(0).second;
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.matmul_dtype, pp::DType::fp16);
  EXPECT_EQ(o.layer_norm_dtype, pp::DType::fp32);
  EXPECT_EQ(o.softmax_dtype, pp::DType::fp32);
  EXPECT_EQ(o.loss_dtype, pp::DType::fp32);
  EXPECT_TRUE(o.overflow_handled);
  EXPECT_GE(o.skipped_steps, 1);
  EXPECT_LT(*o.loss_end, *o.loss_start);
  eng::measure_amp_memory(Mode::amp_fp16, o, s, gpu0());
  ASSERT_TRUE(o.peak_bytes && o.fp32_peak_bytes);
  // Half-precision activations: the AMP step must need clearly less than the fp32 one.
  EXPECT_LT(*o.peak_bytes, *o.fp32_peak_bytes);
}

TEST(EngineAmpGpu, Bf16WithoutLossScaling) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU visible to LibTorch";
  const eng::AmpSetup s = eng::prepare_amp(gpu0(), 22);
  const pp::AmpOutcome o = eng::run_amp({Mode::amp_bf16}, s, gpu0()).at(0).second;
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.matmul_dtype, pp::DType::bf16);
  EXPECT_FALSE(o.final_scale.has_value());
  EXPECT_LE(*o.loss_rel_diff, o.loss_tolerance);
}

TEST(EngineAmpGpu, BothModesAtOnceMatchTheirSeparateRuns) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU visible to LibTorch";
  // All four runs (two AMP, two fp32 references) on threads at once, as the worker does them:
  // the same numbers as one at a time. GPU kernels are deterministic here up to the order of
  // floating-point reductions, so the comparison allows a rounding-sized difference.
  const eng::AmpSetup s = eng::prepare_amp(gpu0(), 23);
  const auto both = eng::run_amp({Mode::amp_fp16, Mode::amp_bf16}, s, gpu0());
  ASSERT_EQ(both.size(), 2U);
  for (const auto& [mode, o] : both) {
    ASSERT_TRUE(o.ok) << pp::mode_key(mode) << ": " << o.error;
    const pp::AmpOutcome alone = eng::run_amp({mode}, s, gpu0()).at(0).second;
    ASSERT_TRUE(alone.ok) << alone.error;
    EXPECT_NEAR(*o.loss_end, *alone.loss_end, 1e-3 * std::abs(*alone.loss_end));
    EXPECT_NEAR(*o.fp32_loss_end, *alone.fp32_loss_end, 1e-4 * std::abs(*alone.fp32_loss_end));
  }
}

TEST(EngineAmpGpu, EveryTrainingPreloadRunsOnTheGpu) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA GPU visible to LibTorch";
  const std::vector<eng::Preload> preloads =
      eng::amp_preloads({Mode::amp_fp16, Mode::amp_bf16}, gpu0());
  // fp32, fp16 and bf16 linear layers (3 GEMMs each), and the rest of a step.
  EXPECT_GT(preloads.size(), 9U);
  // One that throws would be passed over in silence by run_preloads: here each must run.
  for (std::size_t i = 0; i < preloads.size(); ++i) {
    EXPECT_NO_THROW(preloads[i]()) << "preload " << i;
  }
}
