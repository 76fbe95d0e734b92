// The engine's checks on a real GPU, through the release ctest names (release.hpp: on the GPU
// machine, its python3's torch). Label gpu: each test skips, saying why, where the release has no
// libtorch_cuda.so (./dev's CPU cache) or no GPU is visible.

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "wire/protocol.hpp"
#include "engine/checks/checks.hpp"
#include "engine/torch/stderr_log.hpp"
#include "process/process.hpp"
#include "release.hpp"

namespace pp = precision_probe;
namespace eng = precision_probe::engine;
using pp::Mode;

namespace {

// libtorch_cuda.so of the release, and the driver bound to GPU 0, once for the process.
struct Gpu {
  std::unique_ptr<eng::Torch> torch;
  std::unique_ptr<eng::CudaDriver> cuda;
  eng::Target target;
  std::optional<pp::ComputeCapability> cc;
};

pp::Expected<const Gpu*> gpu() {
  static std::once_flag once;
  static std::unique_ptr<Gpu> loaded;
  static std::string error;
  std::call_once(once, [] {
    const pp::testing::Release* r = pp::testing::release();
    if (r == nullptr) {
      error = "no LibTorch release named (PP_TEST_TORCH)";
      return;
    }
    if (!r->has_cuda_library()) {
      error = "LibTorch " + r->version + " here has no libtorch_cuda.so (a CPU cache)";
      return;
    }
    pp::Expected<std::unique_ptr<eng::CudaDriver>> driver = eng::CudaDriver::open();
    if (!driver || (*driver)->device_count() == 0) {
      error = "no GPU: " + (driver ? std::string("no CUDA device") : driver.error());
      return;
    }
    if (pp::Expected<void> bound = (*driver)->bind(0); !bound) {
      error = "no GPU: " + bound.error();
      return;
    }
    eng::capture_stderr();
    pp::Expected<std::unique_ptr<eng::Torch>> torch = eng::Torch::open(r->cuda_library(), true);
    if (!torch) {
      error = "LibTorch " + r->version + "'s libtorch_cuda.so did not load: " + torch.error();
      return;
    }
    auto g = std::make_unique<Gpu>();
    g->torch = std::move(*torch);
    g->cuda = std::move(*driver);
    g->target = eng::Target{g->torch.get(), g->cuda.get(), eng::Device{true, 0}};
    g->cc = g->cuda->capability();
    loaded = std::move(g);
  });
  if (!loaded) return pp::Unexpected{error};
  return static_cast<const Gpu*>(loaded.get());
}

#define PP_REQUIRE_GPU(g)                              \
  const pp::Expected<const Gpu*> pp_loaded_ = gpu();   \
  if (!pp_loaded_) GTEST_SKIP() << pp_loaded_.error(); \
  const Gpu* g = *pp_loaded_

pp::SmokeOutcome smoke(const eng::Target& target, Mode mode) {
  const std::vector<eng::PreparedSmoke> prepared = eng::prepare_smoke({mode}, true, 11, 4);
  return eng::execute_smoke(prepared.front(), target);
}

bool at_least(const Gpu& g, pp::ComputeCapability cc) { return g.cc && *g.cc >= cc; }

}  // namespace

// Every matmul precision the GPU has natively, against the float64 reference, each within its
// tolerance and none exact (random inputs: each leaves its rounding), int8 exactly.
TEST(EngineGpu, EveryNativePrecisionMatchesTheFloat64Reference) {
  PP_REQUIRE_GPU(g);
  std::vector<Mode> modes = {Mode::fp32, Mode::fp16};
  if (at_least(*g, {8, 0})) modes.push_back(Mode::bf16);
  if (at_least(*g, {7, 5})) modes.push_back(Mode::int8);
  if (at_least(*g, {8, 9})) {
    for (Mode m : {Mode::fp8_e4m3, Mode::fp8_e5m2, Mode::fp8_rowwise}) modes.push_back(m);
  }
  if (g->cc && *g->cc == pp::ComputeCapability{9, 0}) modes.push_back(Mode::fp8_blockwise);
  for (Mode mode : modes) {
    const pp::SmokeOutcome o = smoke(g->target, mode);
    ASSERT_TRUE(o.ok) << pp::mode_key(mode) << " (" << o.method << "): " << o.error;
    if (mode == Mode::int8) {
      EXPECT_EQ(*o.rel_error, 0.0);
    } else {
      EXPECT_GT(*o.rel_error, 0.0) << pp::mode_key(mode);
    }
  }
}

// 2.9's C ABI has no list arguments: its block-wise fp8 goes through _scaled_mm, which reads the
// recipe from the scales' shapes. The same call, on this GPU, made by a release told to behave as
// 2.9, gives the right numbers (cc 9.0 only: LibTorch's block-wise kernels are Hopper's).
TEST(EngineGpu, The2_9PathsRunOnThisGpu) {
  PP_REQUIRE_GPU(g);
  pp::Expected<std::unique_ptr<eng::Torch>> old =
      eng::Torch::open(pp::testing::release()->cuda_library(), true);
  ASSERT_TRUE(old) << old.error();
  (*old)->behave_as({2, 9});
  const eng::Target target{old->get(), g->cuda.get(), eng::Device{true, 0}};
  if (g->cc && *g->cc == pp::ComputeCapability{9, 0}) {
    const pp::SmokeOutcome blockwise = smoke(target, Mode::fp8_blockwise);
    EXPECT_TRUE(blockwise.ok) << blockwise.method << ": " << blockwise.error;
    EXPECT_NE(blockwise.method.find("aten::_scaled_mm fp8_blockwise"), std::string::npos)
        << blockwise.method;
  }
  const eng::AmpSetup setup = eng::prepare_amp(eng::amp_batch(true, 1), 3);
  const auto runs = eng::run_amp({Mode::amp_fp16}, setup, target, eng::CpuRuns::at_once);
  const pp::AmpOutcome& run = runs.at(Mode::amp_fp16);
  ASSERT_TRUE(run.ok) << run.error;
  EXPECT_NE(run.method.find("written out per tensor"), std::string::npos);
}

// The scaled FP8 modes go through _scaled_mm_v2 from 2.10, through _scaled_mm on 2.9 (a release
// told to behave as it), and through v2 where the image has no v1: both reach the same cuBLASLt
// call (LibTorch's _scaled_gemm), so the same inputs give the same numbers.
TEST(EngineGpu, TheScaledFp8ModesRunThroughV2AndV1Alike) {
  PP_REQUIRE_GPU(g);
  if (!at_least(*g, {8, 9})) GTEST_SKIP() << "no FP8 tensor cores before cc 8.9";
  if (pp::testing::release()->release < pp::Version{2, 10}) GTEST_SKIP() << "v2 needs 2.10";
  const std::string library = pp::testing::release()->cuda_library();
  pp::Expected<std::unique_ptr<eng::Torch>> old = eng::Torch::open(library, true);
  ASSERT_TRUE(old) << old.error();
  (*old)->behave_as({2, 9});
  pp::Expected<std::unique_ptr<eng::Torch>> no_v1 =
      pp::testing::torch_without(library, true, "_scaled_mm");
  ASSERT_TRUE(no_v1) << no_v1.error();
  const eng::Target v1_target{old->get(), g->cuda.get(), eng::Device{true, 0}};
  const eng::Target no_v1_target{no_v1->get(), g->cuda.get(), eng::Device{true, 0}};
  std::vector<Mode> modes = {Mode::fp8_e4m3, Mode::fp8_e5m2, Mode::fp8_rowwise};
  if (g->cc && *g->cc == pp::ComputeCapability{9, 0}) modes.push_back(Mode::fp8_blockwise);
  for (Mode mode : modes) {
    const pp::SmokeOutcome v2 = smoke(g->target, mode);
    const pp::SmokeOutcome v1 = smoke(v1_target, mode);
    const pp::SmokeOutcome only_v2 = smoke(no_v1_target, mode);
    ASSERT_TRUE(v2.ok && v1.ok && only_v2.ok)
        << pp::mode_key(mode) << ": " << v2.error << " / " << v1.error << " / " << only_v2.error;
    EXPECT_EQ(v2.method.rfind("aten::_scaled_mm_v2 ", 0), 0U) << v2.method;
    EXPECT_EQ(only_v2.method, v2.method);
    EXPECT_EQ(v1.method.rfind("aten::_scaled_mm ", 0), 0U) << v1.method;
    EXPECT_DOUBLE_EQ(*v1.rel_error, *v2.rel_error) << pp::mode_key(mode);
    EXPECT_DOUBLE_EQ(*only_v2.rel_error, *v2.rel_error) << pp::mode_key(mode);
  }
}

// The MX and NVFP4 recipes need Blackwell's tensor cores. On an older GPU the engine's call still
// reaches LibTorch, whose own refusal comes back: the call was well formed up to its architecture
// check (a mis-boxed argument would fail before, or crash).
TEST(EngineGpu, TheBlockScaledCallsReachLibTorch) {
  PP_REQUIRE_GPU(g);
  if (pp::testing::release()->release < pp::Version{2, 11}) GTEST_SKIP() << "needs 2.11's dtypes";
  for (Mode mode : {Mode::mxfp8, Mode::nvfp4, Mode::mxfp4}) {
    const pp::SmokeOutcome o = smoke(g->target, mode);
    EXPECT_EQ(o.method.rfind("aten::_scaled_mm_v2 ", 0), 0U) << o.method;
    if (at_least(*g, {10, 0})) {
      EXPECT_TRUE(o.ok || o.error_kind == pp::ErrorKind::not_supported)
          << pp::mode_key(mode) << ": " << o.error;
      continue;
    }
    EXPECT_FALSE(o.ok) << pp::mode_key(mode);
    EXPECT_NE(o.error_kind, pp::ErrorKind::not_run) << pp::mode_key(mode) << ": " << o.error;
    EXPECT_FALSE(o.error.empty());
    std::cout << "  " << pp::mode_key(mode) << ": LibTorch said: " << o.error << "\n";
  }
}

TEST(EngineGpu, BothTrainingModesTrainLikeFp32WithTheirMemoryCounted) {
  PP_REQUIRE_GPU(g);
  const eng::AmpSetup setup = eng::prepare_amp(eng::amp_batch(true, 1), 5);
  std::vector<Mode> modes = {Mode::amp_fp16};
  if (at_least(*g, {8, 0})) modes.push_back(Mode::amp_bf16);
  for (const auto& [mode, o] : eng::run_amp(modes, setup, g->target, eng::CpuRuns::at_once)) {
    ASSERT_TRUE(o.ok) << pp::mode_key(mode) << ": " << o.error;
    EXPECT_EQ(o.matmul_dtype, mode == Mode::amp_fp16 ? pp::DType::fp16 : pp::DType::bf16);
    ASSERT_TRUE(o.peak_bytes && o.fp32_peak_bytes) << pp::mode_key(mode);
    EXPECT_GT(*o.peak_bytes, 0);
    EXPECT_LT(*o.peak_bytes, *o.fp32_peak_bytes) << "the low precision holds less";
  }
}

TEST(EngineGpu, BenchTimesWithCudaEventsBothFigures) {
  PP_REQUIRE_GPU(g);
  // As in a worker, the precision's kernels are loaded (its smoke test) before it is timed: a first
  // call that pays for loading them is a slow call, which gets three repetitions.
  ASSERT_TRUE(smoke(g->target, Mode::fp16).ok);
  pp::BenchOutcome o = eng::run_bench(Mode::fp16, g->target, 2048);
  ASSERT_TRUE(o.ok) << o.error;
  eng::measure_sustained(Mode::fp16, g->target, o);
  EXPECT_EQ(o.timer, "cuda events");
  EXPECT_GE(o.reps, 8);
  ASSERT_TRUE(o.sustained_tflops.has_value());
  EXPECT_GT(*o.sustained_tflops, 0.0);
  EXPECT_NEAR(*o.tflops, 2.0 * 2048.0 * 2048.0 * 2048.0 / (*o.ms * 1e-3) / 1e12, 1e-6);
}

// The all-reduce through the image's NCCL and its own C API, over the GPUs visible (one rank on a
// one-GPU machine): every sum exact.
TEST(EngineGpu, TheAllReduceIsExactThroughNcclsOwnApi) {
  PP_REQUIRE_GPU(g);
  std::string version;
  std::vector<int> ordinals;
  for (int i = 0; i < g->cuda->device_count(); ++i) ordinals.push_back(i);
  const auto outcomes = eng::run_collectives(*g->torch, ordinals, 64LL << 20U, version);
  ASSERT_EQ(outcomes.size(), pp::kAllReduceDTypes.size());
  for (const pp::CollectiveOutcome& o : outcomes) {
    EXPECT_TRUE(o.ok) << pp::to_string(o.dtype) << ": " << o.error;
    EXPECT_EQ(o.ranks, g->cuda->device_count());
  }
  EXPECT_FALSE(version.empty());
}

// tf32 and fp32 in one plan, one process (the real engine): tf32 asks the image's cuBLAS for TF32
// by name, less precise than the fp32 check, within tf32's tolerance; fp32 stays fp32.
TEST(EngineGpu, Tf32AndFp32InOneProcessEachAsItself) {
  PP_REQUIRE_GPU(g);
  if (!at_least(*g, {8, 0})) GTEST_SKIP() << "no TF32 tensor cores before cc 8.0";
  pp::WorkerPlan plan;
  plan.kind = pp::DeviceKind::cuda;
  plan.index = 0;
  plan.ordinals = {0};
  plan.smoke = {Mode::fp32, Mode::tf32};
  plan.seed = 1;
  const pp::ProcessOutput out = pp::run_process(
      {PP_REAL_ENGINE, "--worker", "gpu", "--libtorch", pp::testing::release()->cuda_library()},
      pp::environment_with({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"}), pp::encode_plan(plan) + "\n",
      std::chrono::seconds(120));
  pp::WorkerResult result;
  std::istringstream lines(out.out);
  for (std::string line; std::getline(lines, line);) pp::apply_result_line(line, result);
  ASSERT_TRUE(result.smoke.contains(Mode::fp32) && result.smoke.contains(Mode::tf32)) << out.err;
  const pp::SmokeOutcome& f = result.smoke.at(Mode::fp32);
  const pp::SmokeOutcome& t = result.smoke.at(Mode::tf32);
  ASSERT_TRUE(f.ok && t.ok) << f.error << " / " << t.error;
  EXPECT_GT(*t.rel_error, 10.0 * *f.rel_error) << "TF32 was not in effect";
  EXPECT_LT(*t.rel_error, 5e-3);
  EXPECT_LT(*f.rel_error, 1e-5) << "the fp32 check ran as TF32";
  EXPECT_NE(t.method.find("cublasGemmEx"), std::string::npos) << t.method;
  EXPECT_NE(t.method.find("CUBLAS_COMPUTE_32F_FAST_TF32"), std::string::npos) << t.method;
}
