// The engine for real, on the CPU, with whatever LibTorch the build found.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/engine.hpp"

namespace pp = precision_probe;
namespace eng = precision_probe::engine;
using pp::Mode;

namespace {
const eng::Target kCpu{};
}

TEST(EngineCpu, Fp32MatchesTheFloat64ReferenceWithinTolerance) {
  const auto o = eng::run_smoke(Mode::fp32, kCpu, 1);
  ASSERT_TRUE(o.ran) << o.error;
  EXPECT_TRUE(o.ok) << o.error;
  ASSERT_TRUE(o.rel_error.has_value());
  EXPECT_LT(*o.rel_error, o.tolerance);
  // Random inputs, not zeros: fp32 accumulation leaves a small, non-zero error.
  EXPECT_GT(*o.rel_error, 0.0);
  EXPECT_EQ(o.m, 128);
  EXPECT_TRUE(o.ms.has_value());
}

TEST(EngineCpu, Bf16RunsWithinItsToleranceAndIsLessPreciseThanFp32) {
  const auto bf16 = eng::run_smoke(Mode::bf16, kCpu, 2);
  const auto fp32 = eng::run_smoke(Mode::fp32, kCpu, 2);
  ASSERT_TRUE(bf16.ok) << bf16.error;
  EXPECT_GT(*bf16.rel_error, *fp32.rel_error);
  EXPECT_LT(*bf16.rel_error, pp::smoke_tolerance(Mode::bf16));
}

TEST(EngineCpu, Fp16OnTheCpuDependsOnTheLibTorchVersion) {
  const auto o = eng::run_smoke(Mode::fp16, kCpu, 3);
#if PP_TORCH_AT_LEAST(2, 0)
  EXPECT_TRUE(o.ok) << o.error;
#else
  // LibTorch 1.13 has no CPU fp16 matmul: refused, reported as not supported with its message.
  EXPECT_FALSE(o.ran);
  EXPECT_EQ(o.error_kind, pp::ErrorKind::not_supported);
  EXPECT_NE(o.error.find("not implemented for 'Half'"), std::string::npos) << o.error;
#endif
}

TEST(EngineCpu, FreshSeedsGiveFreshInputs) {
  const auto a = eng::run_smoke(Mode::bf16, kCpu, 100);
  const auto b = eng::run_smoke(Mode::bf16, kCpu, 101);
  const auto a_again = eng::run_smoke(Mode::bf16, kCpu, 100);
  ASSERT_TRUE(a.ok && b.ok && a_again.ok);
  EXPECT_NE(*a.rel_error, *b.rel_error);
  EXPECT_DOUBLE_EQ(*a.rel_error, *a_again.rel_error);  // a seed reproduces its run
}

TEST(EngineCpu, ModesThisLibTorchLacksAreNotRunWithAReason) {
  const auto fp4 = eng::run_smoke(Mode::nvfp4, kCpu, 4);
#if !PP_TORCH_AT_LEAST(2, 10)
  EXPECT_EQ(fp4.error_kind, pp::ErrorKind::not_supported);
  EXPECT_NE(fp4.error.find("upgrade to LibTorch (PyTorch) 2.10 or later"), std::string::npos)
      << fp4.error;
#else
  EXPECT_FALSE(fp4.ok);  // no FP4 matmul on a CPU
#endif
  const auto amp = eng::run_smoke(Mode::amp_bf16, kCpu, 5);
  EXPECT_EQ(amp.error_kind, pp::ErrorKind::not_run);
}

TEST(EngineCpu, TheTf32SettingIsRestoredAfterItsTest) {
  const auto before = at::globalContext().float32MatmulPrecision();
  eng::run_smoke(Mode::tf32, kCpu, 6);
  EXPECT_EQ(at::globalContext().float32MatmulPrecision(), before);
}

TEST(EngineCpu, BenchMeasuresAPositiveThroughput) {
  auto o = eng::run_bench(Mode::fp32, kCpu, 128, 1);
  ASSERT_TRUE(o.ok) << o.error;
  eng::measure_sustained(Mode::fp32, kCpu, 1, o);
  EXPECT_FALSE(o.sustained_tflops.has_value());  // a GPU figure only
  EXPECT_GT(*o.tflops, 0.0);
  EXPECT_GE(o.reps, 3);
  EXPECT_EQ(o.timer, "steady clock");
  // The throughput is what the time says: 2 n^3 FLOP per GEMM.
  EXPECT_NEAR(*o.tflops, 2.0 * 128 * 128 * 128 / (*o.ms * 1e-3) / 1e12, 1e-9);
}

TEST(EnginePreloads, AllRunAtOnceAndOneThatThrowsStopsNoOther) {
  constexpr int kCount = 4;
  std::atomic<int> started{0};
  std::atomic<int> saw_all{0};
  std::vector<eng::Preload> preloads;
  for (int i = 0; i < kCount; ++i) {
    preloads.emplace_back([&, i] {
      ++started;
      // Each waits (up to 10 s) for the others to have started: only preloads on threads of
      // their own, all at once, all see every one started.
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (started.load() < kCount && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
      if (started.load() == kCount) ++saw_all;
      if (i == 1) throw std::runtime_error("no kernel image is available for execution");
    });
  }
  EXPECT_NO_THROW(eng::run_preloads(preloads));
  EXPECT_EQ(started.load(), kCount);
  EXPECT_EQ(saw_all.load(), kCount);
}

TEST(EnginePreloads, NothingToLoadOnTheCpu) {
  const std::vector<eng::PreparedSmoke> prepared = {eng::prepare_smoke(Mode::fp32, kCpu, 3)};
  ASSERT_TRUE(prepared.front().ready);
  EXPECT_TRUE(eng::smoke_preloads(prepared, kCpu).empty());
  EXPECT_TRUE(eng::amp_preloads({Mode::amp_fp16, Mode::amp_bf16}, kCpu).empty());
}
