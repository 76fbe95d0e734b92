// The engine on a real GPU. Label "gpu": each test skips, with the reason, where none is present.

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/checks/kernels.hpp"
#include "engine/engine.hpp"

#ifdef PP_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif
#include "common/arch.hpp"

namespace pp = precision_probe;
namespace eng = precision_probe::engine;
using pp::Mode;

namespace {

eng::Target gpu0() {
  eng::Target t;
  t.cuda = true;
  t.device = at::Device(at::kCUDA, 0);
  return t;
}

// The compute capability of GPU 0, or nullopt when LibTorch sees no GPU.
std::optional<pp::ComputeCapability> gpu_cc() {
#ifdef PP_TORCH_CUDA
  if (!at::hasCUDA()) return std::nullopt;
  const std::string name = eng::device_name(gpu0());  // "NAME (cc X.Y, N SMs)"
  const auto pos = name.rfind("(cc ");
  return pp::parse_compute_capability(name.substr(pos + 4, name.find(',', pos) - pos - 4));
#else
  return std::nullopt;
#endif
}

#define REQUIRE_GPU(cc)     \
  const auto cc = gpu_cc(); \
  if (!cc) GTEST_SKIP() << "no CUDA GPU visible to LibTorch (or a CPU-only LibTorch build)"

}  // namespace

namespace {

// What this LibTorch lacks for a mode on GPU 0, by the mode table ("" when nothing).
std::string stack_lacks(Mode m, pp::ComputeCapability cc) {
  return pp::missing_for(m, {TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR}, eng::cuda_build_version(),
                         cc);
}

}  // namespace

TEST(EngineGpu, EveryPrecisionTheHardwareHasComputesTheRightNumbers) {
  REQUIRE_GPU(cc);
  for (Mode m : pp::matmul_modes()) {
    const auto hw = pp::gpu_hardware_support(*cc, m);
    if (hw.hardware == pp::Hardware::unsupported) continue;
    const auto o = eng::run_smoke(m, gpu0(), 42);
    SCOPED_TRACE(std::string(pp::mode_key(m)) + ": " + o.method + " " + o.error);
    if (const std::string lacks = stack_lacks(m, *cc); !lacks.empty()) {
      // Refused before it is called, saying which layer lacks it.
      EXPECT_FALSE(o.ran);
      EXPECT_EQ(o.error_kind, pp::ErrorKind::not_supported);
      EXPECT_EQ(o.error, lacks);
      continue;
    }
    EXPECT_TRUE(o.ran);
    EXPECT_TRUE(o.ok);
    ASSERT_TRUE(o.rel_error.has_value());
    if (m == Mode::int8) {
      EXPECT_EQ(*o.rel_error, 0.0);  // exact
    } else {
      EXPECT_GT(*o.rel_error, 0.0);
    }
    EXPECT_LE(*o.rel_error, o.tolerance);
    EXPECT_EQ(o.m, eng::smoke_shape(m, gpu0()).m);
  }
}

// --bench covers every recipe the GPU runs natively.
TEST(EngineGpu, EveryNativeRecipeIsBenchmarked) {
  REQUIRE_GPU(cc);
  for (Mode m : pp::matmul_modes()) {
    if (pp::gpu_hardware_support(*cc, m).hardware != pp::Hardware::native) continue;
    if (!stack_lacks(m, *cc).empty()) continue;
    const auto b = eng::run_bench(m, gpu0(), 2000, 3);
    SCOPED_TRACE(std::string(pp::mode_key(m)) + ": " + b.error);
    EXPECT_TRUE(b.ok);
    EXPECT_EQ(b.size, eng::bench_size_for(m, 2000));
    ASSERT_TRUE(b.tflops.has_value());
    EXPECT_GT(*b.tflops, 1.0);
  }
}

TEST(EngineGpu, EverySmokePreloadRunsOnTheGpu) {
  REQUIRE_GPU(cc);
  // A preload that throws is passed over in silence (its check reports the error): here each must
  // run, or the code it should load is loaded later, one module after another.
  std::vector<eng::PreparedSmoke> prepared;
  std::vector<Mode> modes;
  for (Mode m : pp::matmul_modes()) {
    if (pp::gpu_hardware_support(*cc, m).hardware != pp::Hardware::native) continue;
    eng::PreparedSmoke p = eng::prepare_smoke(m, gpu0(), 5);
    if (!p.ready) continue;  // this LibTorch lacks the API
    prepared.push_back(std::move(p));
    modes.push_back(m);
  }
  const std::vector<eng::Preload> preloads = eng::smoke_preloads(prepared, gpu0());
  const bool has_tf32 = std::find(modes.begin(), modes.end(), Mode::tf32) != modes.end();
  EXPECT_EQ(preloads.size(), modes.size() - (has_tf32 ? 1 : 0));  // tf32 shares fp32's code
  for (std::size_t i = 0; i < preloads.size(); ++i) {
    EXPECT_NO_THROW(preloads[i]()) << "preload " << i;
  }
}

TEST(EngineGpu, Tf32IsReallyEngagedOnAmpereAndLater) {
  REQUIRE_GPU(cc);
  if (cc->major < 8) GTEST_SKIP() << "no TF32 before cc 8.0";
  const auto fp32 = eng::run_smoke(Mode::fp32, gpu0(), 7);
  const auto tf32 = eng::run_smoke(Mode::tf32, gpu0(), 7);
  ASSERT_TRUE(fp32.ok && tf32.ok) << fp32.error << tf32.error;
  // Same inputs: TF32 rounds them to 10 mantissa bits, so its error is orders of magnitude larger.
  EXPECT_GT(*tf32.rel_error, 50.0 * *fp32.rel_error);
}

TEST(EngineGpu, Fp8NeedsAdaOrHopper) {
  REQUIRE_GPU(cc);
  if (const std::string lacks = stack_lacks(Mode::fp8_e4m3, *cc); !lacks.empty()) {
    GTEST_SKIP() << lacks;
  }
  const auto o = eng::run_smoke(Mode::fp8_e4m3, gpu0(), 9);
  if (*cc >= pp::ComputeCapability{8, 9}) {
    EXPECT_TRUE(o.ok) << o.error;
  } else {
    EXPECT_EQ(o.error_kind, pp::ErrorKind::not_supported) << o.error;
  }
}

TEST(EngineGpu, BenchShowsTensorCoreSpeedUp) {
  REQUIRE_GPU(cc);
  auto fp32 = eng::run_bench(Mode::fp32, gpu0(), 4096, 1);
  auto fp16 = eng::run_bench(Mode::fp16, gpu0(), 4096, 2);
  ASSERT_TRUE(fp32.ok && fp16.ok) << fp32.error << fp16.error;
  EXPECT_EQ(fp32.timer, "cuda events");
  // The timed calls fill about 30 ms of load, 8 to 20 of them (an H200 holds its first clocks
  // for 30-45 ms of tensor-core load).
  for (const pp::BenchOutcome* b : {&fp32, &fp16}) {
    EXPECT_GE(b->reps, 8);
    EXPECT_LE(b->reps, 20);
    if (b->reps > 8) {
      EXPECT_LE(b->reps * *b->ms, 45.0) << b->reps << " x " << *b->ms << " ms";
    }
  }
  if (cc->major >= 7) {
    EXPECT_GT(*fp16.tflops, 4.0 * *fp32.tflops);  // tensor cores: far more than 4x on any of them
  }
  // Under continuous load: a figure of its own, of the same order (clocks drop by tens of
  // percent at most, never by a factor of two).
  eng::measure_sustained(Mode::fp16, gpu0(), 2, fp16);
  ASSERT_TRUE(fp16.sustained_tflops.has_value());
  EXPECT_GT(*fp16.sustained_tflops, 0.5 * *fp16.tflops);
  EXPECT_LT(*fp16.sustained_tflops, 1.5 * *fp16.tflops);
}

TEST(EngineGpu, NcclAllReduceOverTheVisibleGpus) {
  REQUIRE_GPU(cc);
  // Every visible GPU takes part (one is enough to exercise c10d's ProcessGroupNCCL for real; two
  // or more make it a real collective).
#ifdef PP_TORCH_CUDA
  const int ranks = static_cast<int>(at::cuda::device_count());
#else
  const int ranks = 1;
#endif
  std::string version;
  const auto outcomes = eng::run_collectives(ranks, 64LL << 20U, version);
  ASSERT_EQ(outcomes.size(), 3U);
  for (const auto& o : outcomes) {
    if (o.error_kind == pp::ErrorKind::not_supported) GTEST_SKIP() << o.error;
    EXPECT_TRUE(o.ok) << pp::to_string(o.dtype) << ": " << o.error;
    EXPECT_EQ(o.ranks, ranks);
    ASSERT_TRUE(o.busbw_gbps.has_value());
    EXPECT_GT(*o.algbw_gbps, 0.0);
  }
  EXPECT_FALSE(version.empty());
}
