// The engine's checks against a real LibTorch release, on the CPU: the release ctest names
// (release.hpp; ./dev test runs them on 2.9.1, 2.10.0 and 2.15.0 from PyPI). What differs between
// releases is asserted per release.

#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "engine/host/float_formats.hpp"
#include "engine/host/host_math.hpp"
#include "engine/host/quantise.hpp"
#include "engine/checks/checks.hpp"
#include "engine/host/cpus.hpp"
#include "engine/plan_runner.hpp"
#include "engine/torch/cublas.hpp"
#include "release.hpp"
#include "strings/strings.hpp"
#include "wire/engine_settings.hpp"

namespace pp = precision_probe;
namespace eng = precision_probe::engine;
using pp::Mode;

namespace {

bool at_least(pp::Version v) { return pp::testing::release()->release >= v; }

pp::SmokeOutcome smoke(const eng::Torch& torch, Mode mode, std::uint64_t seed = 1) {
  const std::vector<eng::PreparedSmoke> prepared = eng::prepare_smoke({mode}, false, seed, 2);
  return eng::execute_smoke(prepared.front(), pp::testing::cpu_target(torch));
}

// How the engine runs the CPU's training runs on this machine (in turn where one CPU is usable).
eng::CpuRuns engine_way() { return eng::cpu_training_way(std::nullopt, pp::usable_cpus()); }

eng::PreparedSmoke prepared_smoke(Mode mode) {
  return eng::prepare_smoke({mode}, false, 1, 2).front();
}

// A row of the product that the smoke test's reference does not hold.
std::int64_t unsampled_row(const eng::PreparedSmoke& p) {
  for (std::int64_t i = 0; i < p.outcome.m; ++i) {
    if (std::find(p.reference.rows.begin(), p.reference.rows.end(), i) == p.reference.rows.end()) {
      return i;
    }
  }
  return -1;
}

// Sets A's element (row, 3) in the bits the device gets (fp32 or int8 codes, row-major), not in
// the values the reference was computed from.
template <typename T>
void set_device_a(eng::PreparedSmoke& p, std::int64_t row, T value) {
  const std::size_t at = static_cast<std::size_t>(row * p.outcome.k + 3) * sizeof(T);
  ASSERT_LE(at + sizeof(T), p.operands.a.bytes.size());
  std::memcpy(p.operands.a.bytes.data() + at, &value, sizeof(T));
}

}  // namespace

TEST(Release, LoadsAndSaysWhichItIsAndWhatItsCAbiHas) {
  PP_REQUIRE_CPU_TORCH(torch);
  const pp::testing::Release& r = *pp::testing::release();
  EXPECT_EQ(torch->release_text(), r.version);
  EXPECT_FALSE(torch->untested());
  EXPECT_EQ(torch->features().lists, at_least({2, 10}));
  EXPECT_EQ(torch->features().versioned_dispatcher, at_least({2, 10}));
  EXPECT_EQ(torch->features().exception_text, at_least({2, 13}));
  EXPECT_EQ(torch->dtypes().has(eng::Scalar::e8m0), at_least({2, 11}));
  EXPECT_EQ(torch->dtypes().has(eng::Scalar::fp4x2), at_least({2, 11}));
  EXPECT_GE(torch->dtypes().of(eng::Scalar::bf16), 0);
}

TEST(Release, ItsOperatorSchemasAreTheOnesTheEngineCalls) {
  PP_REQUIRE_CPU_TORCH(torch);
  std::ifstream in(pp::testing::release()->site +
                   "/torchgen/packaged/ATen/native/native_functions.yaml");
  std::stringstream yaml;
  yaml << in.rdbuf();
  ASSERT_GT(yaml.str().size(), 100000U) << "no native_functions.yaml in the release";
  const auto problems = eng::compare_schemas(yaml.str());
  for (std::size_t i = 0; i < eng::kOps.size(); ++i) {
    if (!at_least(eng::kOps[i].since)) {
      // Older than the release whose C ABI can pass its arguments: the engine refuses it, and the
      // image's schema, where it has one, is still the one the engine would call.
      EXPECT_NE(eng::op_problem(*torch, eng::kOps[i].op), "") << eng::kOps[i].name;
      EXPECT_TRUE(problems[i].empty() || problems[i].find("has no") != std::string::npos)
          << problems[i];
      continue;
    }
    EXPECT_EQ(problems[i], "") << eng::kOps[i].name;
  }
}

// A failed call carries LibTorch's own message: through torch_exception_get_what_without_backtrace
// from 2.13, from the line it logged to the captured stderr before.
TEST(Release, AFailedCallCarriesLibTorchsMessage) {
  PP_REQUIRE_CPU_TORCH(torch);
  const eng::Tensor a = eng::empty(*torch, {4, 5}, eng::Scalar::f32, eng::Device{});
  const eng::Tensor b = eng::empty(*torch, {6, 7}, eng::Scalar::f32, eng::Device{});
  try {
    eng::mm(a, b);
    FAIL() << "a 4x5 by 6x7 product did not fail";
  } catch (const eng::TorchError& e) {
    EXPECT_NE(std::string(e.what()).find("mat1 and mat2 shapes cannot be multiplied (4x5 and 6x7)"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line, no backtrace";
  }
}

// The engine makes its inputs' bits on the host: they are LibTorch's own conversions, bit for
// bit, over normal data, tiny numbers and the ties between neighbours.
TEST(Release, TheHostEncodingsAreLibTorchsConversions) {
  PP_REQUIRE_CPU_TORCH(torch);
  std::vector<float> x;
  pp::HostRandom random(5);
  for (int i = 0; i < 4096; ++i) x.push_back(static_cast<float>(random.normal() * 50.0));
  for (int i = 0; i < 4096; ++i) x.push_back(static_cast<float>(random.normal() * 1e-3));
  for (float v : {0.0F, -0.0F, 1.0F + 1.0F / 2048, 1.0F + 3.0F / 2048, 65504.0F, 448.0F, 1.0625F}) {
    x.push_back(v);
  }
  const eng::Tensor f32 = eng::upload(*torch, x, {static_cast<std::int64_t>(x.size())},
                                      eng::Scalar::f32, eng::Device{});
  auto bytes_of = [&](eng::Scalar s) { return eng::download_bytes(eng::converted(f32, s)); };
  const std::vector<std::uint8_t> half = bytes_of(eng::Scalar::f16);
  const std::vector<std::uint8_t> bf16 = bytes_of(eng::Scalar::bf16);
  const std::vector<std::uint8_t> e4m3 = bytes_of(eng::Scalar::e4m3);
  const std::vector<std::uint8_t> e5m2 = bytes_of(eng::Scalar::e5m2);
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::uint16_t h = 0;
    std::uint16_t b = 0;
    std::memcpy(&h, &half[2 * i], 2);
    std::memcpy(&b, &bf16[2 * i], 2);
    ASSERT_EQ(pp::encode_fp16(x[i]), h) << x[i];
    ASSERT_EQ(pp::encode_bf16(x[i]), b) << x[i];
    if (std::fabs(x[i]) <= 448.0F) {
      ASSERT_EQ(pp::quantise::encode_e4m3(x[i]), e4m3[i]) << x[i];
    }
    if (std::fabs(x[i]) <= 57344.0F) {
      ASSERT_EQ(pp::encode_e5m2(x[i]), e5m2[i]) << x[i];
    }
  }
}

TEST(EngineCpu, TheMatmulPrecisionsMatchTheFloat64Reference) {
  PP_REQUIRE_CPU_TORCH(torch);
  const pp::SmokeOutcome fp32 = smoke(*torch, Mode::fp32);
  const pp::SmokeOutcome fp16 = smoke(*torch, Mode::fp16);
  const pp::SmokeOutcome bf16 = smoke(*torch, Mode::bf16);
  const pp::SmokeOutcome int8 = smoke(*torch, Mode::int8);
  for (const pp::SmokeOutcome* o : {&fp32, &fp16, &bf16, &int8}) {
    ASSERT_TRUE(o->ok) << o->method << ": " << o->error;
  }
  // Random inputs, not zeros: each precision leaves its own rounding, fp32 the least.
  EXPECT_GT(*fp32.rel_error, 0.0);
  EXPECT_LT(*fp32.rel_error, 1e-6);
  EXPECT_GT(*fp16.rel_error, 1e-4);
  EXPECT_LT(*fp16.rel_error, 5e-4);
  EXPECT_GT(*bf16.rel_error, 1e-3);
  EXPECT_LT(*bf16.rel_error, 3e-3);
  EXPECT_EQ(*int8.rel_error, 0.0);  // int32 accumulation of int8 codes: exactly the product
  EXPECT_EQ(int8.k, 640);
  EXPECT_EQ(fp32.method, "aten::mm float32");
  EXPECT_EQ(int8.method, "aten::_int_mm int8");
}

TEST(EngineCpu, FreshSeedsGiveFreshInputsAndASeedItsRunAgain) {
  PP_REQUIRE_CPU_TORCH(torch);
  const pp::SmokeOutcome a = smoke(*torch, Mode::bf16, 100);
  const pp::SmokeOutcome b = smoke(*torch, Mode::bf16, 101);
  const pp::SmokeOutcome again = smoke(*torch, Mode::bf16, 100);
  ASSERT_TRUE(a.ok && b.ok && again.ok);
  EXPECT_NE(*a.rel_error, *b.rel_error);
  EXPECT_DOUBLE_EQ(*a.rel_error, *again.rel_error);
}

// The reference is a sample of the product's rows: the error over them is the whole result's, on
// the device's own numbers.
TEST(EngineCpu, TheSampledRowsErrorIsTheWholeResultsError) {
  PP_REQUIRE_CPU_TORCH(torch);
  const eng::Target cpu = pp::testing::cpu_target(*torch);
  for (Mode mode : {Mode::fp16, Mode::bf16, Mode::fp8_e4m3}) {
    const eng::PreparedSmoke p = prepared_smoke(mode);
    ASSERT_TRUE(p.ready) << p.outcome.error;
    ASSERT_EQ(p.reference.rows.size(), static_cast<std::size_t>(pp::kSampledRows));
    ASSERT_LT(pp::kSampledRows, p.outcome.m);
    const std::vector<double> got = eng::download_values(eng::device_gemm(mode, p.operands, cpu)());
    const double whole =
        pp::relative_error(got, pp::reference_product(p.operands.a_values, p.operands.b_values,
                                                      p.outcome.m, p.outcome.k, p.outcome.n));
    const pp::SmokeOutcome o = eng::execute_smoke(p, cpu);
    ASSERT_TRUE(o.ok) << o.error;
    EXPECT_GT(whole, 1e-4);
    EXPECT_NEAR(*o.rel_error / whole, 1.0, 0.1) << pp::mode_key(mode);
  }
}

// A wrong value in a sampled row fails the test (an element of fp32's A off by 0.5 in the bits the
// device gets, an int8 code off by one); NaN, Inf and values far beyond what their row and column
// can make fail it in any row.
TEST(EngineCpu, AWrongValueInASampledRowOrNaNOrAWildValueInAnyRowFails) {
  PP_REQUIRE_CPU_TORCH(torch);
  const eng::Target cpu = pp::testing::cpu_target(*torch);
  const eng::PreparedSmoke fp32 = prepared_smoke(Mode::fp32);
  ASSERT_TRUE(eng::execute_smoke(fp32, cpu).ok);
  const std::int64_t sampled = fp32.reference.rows.at(9);
  const std::int64_t other = unsampled_row(fp32);
  ASSERT_GE(other, 0);
  const auto a_at = [&](std::int64_t row) {
    return static_cast<float>(
        fp32.operands.a_values.at(static_cast<std::size_t>(row * fp32.outcome.k + 3)));
  };
  auto fails = [&](std::int64_t row, float value, const std::string& why) {
    eng::PreparedSmoke p = fp32;
    set_device_a(p, row, value);
    const pp::SmokeOutcome o = eng::execute_smoke(p, cpu);
    EXPECT_TRUE(o.ran);
    EXPECT_FALSE(o.ok) << "row " << row << ", A " << value;
    EXPECT_EQ(o.error_kind, pp::ErrorKind::wrong_result);
    EXPECT_NE(o.error.find(why), std::string::npos) << o.error;
  };
  fails(sampled, a_at(sampled) + 0.5F, "relative error");
  fails(other, std::numeric_limits<float>::quiet_NaN(), "NaN or Inf");
  fails(other, std::numeric_limits<float>::infinity(), "NaN or Inf");
  fails(other, 1e6F, "exceed twice what their row of A and column of B can make");
  eng::PreparedSmoke int8 = prepared_smoke(Mode::int8);
  ASSERT_TRUE(eng::execute_smoke(int8, cpu).ok);
  const std::int64_t row = int8.reference.rows.at(20);
  const auto code = static_cast<std::int8_t>(
      int8.operands.a_values.at(static_cast<std::size_t>(row * int8.outcome.k + 3)));
  set_device_a(int8, row, static_cast<std::int8_t>(code == 127 ? 126 : code + 1));
  const pp::SmokeOutcome off = eng::execute_smoke(int8, cpu);
  EXPECT_FALSE(off.ok);
  EXPECT_GT(*off.rel_error, 0.0);
  EXPECT_LT(*off.rel_error, 1e-2) << "one code off by one: a small error, still not exact";
}

// LibTorch's CPU _scaled_mm takes fp8 with one scale a tensor: the engine's call of it (its
// optional arguments boxed on the heap) gives the right numbers on every release; row-wise scales
// it refuses on the CPU before 2.15. From 2.12 the CPU has _scaled_mm_v2, which takes both, and
// the engine calls it there.
TEST(EngineCpu, Fp8ThroughTheCpusScaledMmAsEachReleaseHasIt) {
  PP_REQUIRE_CPU_TORCH(torch);
  const bool v2 = at_least(eng::kCpuScaledMmV2);
  const pp::SmokeOutcome e4m3 = smoke(*torch, Mode::fp8_e4m3);
  ASSERT_TRUE(e4m3.ok) << e4m3.error;
  EXPECT_GT(*e4m3.rel_error, 1e-3);
  EXPECT_LT(*e4m3.rel_error, 3e-3);
  EXPECT_EQ(e4m3.method.rfind(v2 ? "aten::_scaled_mm_v2 e4m3 x e4m3 -> bf16"
                                 : "aten::_scaled_mm e4m3 x e4m3 -> bf16 (the recipe from the "
                                   "scales' shapes: " +
                                       pp::testing::release()->version,
                              0),
            0U)
      << e4m3.method;
  const pp::SmokeOutcome rowwise = smoke(*torch, Mode::fp8_rowwise);
  if (v2 || at_least({2, 15})) {
    EXPECT_TRUE(rowwise.ok) << rowwise.error;
  } else {
    EXPECT_FALSE(rowwise.ran);
    EXPECT_EQ(rowwise.error_kind, pp::ErrorKind::not_supported) << rowwise.error;
    EXPECT_NE(rowwise.error.find("only supports per-tensor scaling for CPU"), std::string::npos)
        << rowwise.error;
  }
  if (!v2) return;
  // The same release made to behave as 2.11 takes v1 on the CPU: the same inputs, the same error
  // within what oneDNN's kernel (v1's on CPUs with AMX) may round otherwise.
  pp::Expected<std::unique_ptr<eng::Torch>> old =
      eng::Torch::open(pp::testing::release()->cpu_library(), false);
  ASSERT_TRUE(old) << old.error();
  (*old)->behave_as({2, 11});
  const pp::SmokeOutcome v1 = smoke(**old, Mode::fp8_e4m3);
  ASSERT_TRUE(v1.ok) << v1.error;
  EXPECT_EQ(v1.method.rfind("aten::_scaled_mm e4m3 x e4m3 -> bf16 (the recipe from the scales' "
                            "shapes: 2.11.0 has no CPU kernel for aten::_scaled_mm_v2)",
                            0),
            0U)
      << v1.method;
  EXPECT_NEAR(*v1.rel_error, *e4m3.rel_error, 0.1 * *e4m3.rel_error);
}

namespace {

constexpr std::array<Mode, 5> kEitherScaledMm = {Mode::fp8_e4m3, Mode::fp8_e5m2, Mode::fp8_rowwise,
                                                 Mode::fp8_blockwise, Mode::mxfp8};

}  // namespace

// On GPUs the scaled FP8 modes and MXFP8 go through _scaled_mm_v2 where the release passes lists
// (2.10), through _scaled_mm where it does not (2.9); on the CPU v2 needs 2.12's kernel.
TEST(EngineCpu, TheScaledModesTakeV2WhereTheReleaseHasItAndV1WhereNot) {
  PP_REQUIRE_CPU_TORCH(torch);
  const eng::Device gpu{true, 0};
  const eng::Device cpu{};
  for (Mode mode : kEitherScaledMm) {
    EXPECT_EQ(eng::kernel_op(mode, *torch, gpu),
              at_least({2, 10}) ? eng::Op::scaled_mm_v2 : eng::Op::scaled_mm)
        << pp::mode_key(mode);
    EXPECT_EQ(eng::kernel_op(mode, *torch, cpu),
              at_least(eng::kCpuScaledMmV2) ? eng::Op::scaled_mm_v2 : eng::Op::scaled_mm)
        << pp::mode_key(mode);
  }
  EXPECT_EQ(eng::kernel_op(Mode::nvfp4, *torch, gpu), eng::Op::scaled_mm_v2);
  EXPECT_EQ(eng::kernel_op(Mode::bf16, *torch, gpu), eng::Op::mm);
  EXPECT_EQ(eng::kernel_op(Mode::int8, *torch, gpu), eng::Op::int_mm);
  // The same release made to behave as 2.9: v1 everywhere, the method saying why.
  pp::Expected<std::unique_ptr<eng::Torch>> old =
      eng::Torch::open(pp::testing::release()->cpu_library(), false);
  ASSERT_TRUE(old) << old.error();
  (*old)->behave_as({2, 9});
  for (Mode mode : kEitherScaledMm) {
    EXPECT_EQ(eng::kernel_op(mode, **old, gpu), eng::Op::scaled_mm) << pp::mode_key(mode);
  }
  EXPECT_EQ(eng::kernel_method(Mode::fp8_rowwise, "aten::_scaled_mm_v2 fp8_rowwise", **old, gpu),
            "aten::_scaled_mm fp8_rowwise (the recipe from the scales' shapes: " +
                (*old)->release_text() + " passes no lists)");
  EXPECT_EQ(eng::kernel_problem(Mode::fp8_e4m3, **old, gpu), "");
  if (at_least({2, 10})) {
    EXPECT_EQ(eng::kernel_method(Mode::fp8_rowwise, "aten::_scaled_mm_v2 fp8_rowwise", *torch, gpu),
              "aten::_scaled_mm_v2 fp8_rowwise");
  }
}

// PyTorch's maintainers mean to remove _scaled_mm (v1). A release without it keeps every check
// that _scaled_mm_v2 can run: on GPUs all of them from 2.10, on the CPU from 2.12 (per-tensor and
// row-wise, the same numbers as v1's on the same inputs); where v2 cannot run either, the check is
// not tested and says both why.
TEST(EngineCpu, AReleaseWithoutScaledMmV1KeepsItsChecksThroughV2) {
  PP_REQUIRE_CPU_TORCH(torch);
  pp::Expected<std::unique_ptr<eng::Torch>> without =
      pp::testing::torch_without(pp::testing::release()->cpu_library(), false, "_scaled_mm");
  ASSERT_TRUE(without) << without.error();
  const std::unique_ptr<eng::Torch>& no_v1 = *without;
  ASSERT_EQ(no_v1->release_text(), torch->release_text());
  ASSERT_NE(eng::op_problem(*no_v1, eng::Op::scaled_mm).find("has no aten::_scaled_mm "),
            std::string::npos)
      << eng::op_problem(*no_v1, eng::Op::scaled_mm);
  const eng::Device gpu{true, 0};
  for (Mode mode : kEitherScaledMm) {
    EXPECT_EQ(eng::kernel_op(mode, *no_v1, gpu), eng::Op::scaled_mm_v2) << pp::mode_key(mode);
    const std::string problem = eng::kernel_problem(mode, *no_v1, gpu);
    if (at_least(mode == Mode::mxfp8 ? pp::Version{2, 11} : pp::Version{2, 10})) {
      EXPECT_EQ(problem, "") << pp::mode_key(mode);
    } else {
      EXPECT_NE(problem, "") << pp::mode_key(mode);
    }
  }
  const eng::Target cpu = pp::testing::cpu_target(*no_v1);
  for (Mode mode : {Mode::fp8_e4m3, Mode::fp8_e5m2, Mode::fp8_rowwise}) {
    const pp::SmokeOutcome o = eng::execute_smoke(prepared_smoke(mode), cpu);
    if (at_least(eng::kCpuScaledMmV2)) {
      ASSERT_TRUE(o.ok) << pp::mode_key(mode) << ": " << o.error;
      EXPECT_EQ(o.method.rfind("aten::_scaled_mm_v2 ", 0), 0U) << o.method;
    } else {
      EXPECT_FALSE(o.ran) << pp::mode_key(mode);
      EXPECT_EQ(o.error_kind, pp::ErrorKind::not_run) << o.error;
      EXPECT_NE(o.error.find("native_functions.yaml has no aten::_scaled_mm "), std::string::npos)
          << o.error;
      EXPECT_NE(o.error.find(at_least({2, 10}) ? "no CPU kernel for aten::_scaled_mm_v2 (it came "
                                                 "in 2.12)"
                                               : "no list arguments for aten::_scaled_mm_v2"),
                std::string::npos)
          << o.error;
    }
  }
}

// What a release's C ABI cannot pass, or its CPU has no kernel for, is not tested, the reason
// naming the release and what it lacks; where the call is made, a CPU refuses it.
TEST(EngineCpu, ABlockScaledRecipeBefore2_11IsNotTestedNamingWhatTheReleaseLacks) {
  PP_REQUIRE_CPU_TORCH(torch);
  for (Mode mode : {Mode::mxfp8, Mode::nvfp4, Mode::mxfp4}) {
    const pp::SmokeOutcome o = smoke(*torch, mode);
    EXPECT_FALSE(o.ok) << pp::mode_key(mode);
    // From 2.12 the CPU has a kernel for _scaled_mm_v2; mxfp8 calls v1 where it has none.
    if (at_least({2, 12}) || (at_least({2, 11}) && mode == Mode::mxfp8)) {
      EXPECT_TRUE(o.error_kind == pp::ErrorKind::not_supported ||
                  o.error_kind == pp::ErrorKind::runtime)
          << pp::mode_key(mode) << ": " << o.error;
    } else if (at_least({2, 11})) {
      EXPECT_EQ(o.error_kind, pp::ErrorKind::not_run) << pp::mode_key(mode) << ": " << o.error;
      EXPECT_NE(o.error.find("has no CPU kernel for aten::_scaled_mm_v2 (it came in 2.12)"),
                std::string::npos)
          << o.error;
    } else {
      EXPECT_EQ(o.error_kind, pp::ErrorKind::not_run) << pp::mode_key(mode) << ": " << o.error;
      EXPECT_NE(o.error.find("this LibTorch (" + pp::testing::release()->version + ")"),
                std::string::npos)
          << o.error;
      EXPECT_NE(o.error.find("came in 2.11"), std::string::npos) << o.error;
    }
  }
}

namespace {

// Both AMP modes trained like fp32: the loss went down, the final loss within the mode's
// tolerance of fp32's, fp16 with GradScaler's rule (LibTorch's own unscale from 2.10, written out
// per tensor on 2.9).
void expect_both_modes_train(const pp::PerMode<pp::AmpOutcome>& runs) {
  ASSERT_EQ(runs.size(), 2U);
  for (const auto& [mode, o] : runs) {
    ASSERT_TRUE(o.ok) << pp::mode_key(mode) << ": " << o.error;
    EXPECT_GT(*o.loss_start, 5.0);
    EXPECT_LT(*o.loss_end, 0.5 * *o.loss_start);
    EXPECT_LE(*o.loss_rel_diff, pp::amp_loss_tolerance(mode));
    EXPECT_EQ(o.softmax_dtype, pp::DType::fp32);
    EXPECT_EQ(o.loss_dtype, pp::DType::fp32);
    EXPECT_NE(o.method.find("explicit casts"), std::string::npos) << o.method;
  }
  const pp::AmpOutcome& fp16 = runs.at(Mode::amp_fp16);
  EXPECT_EQ(fp16.matmul_dtype, pp::DType::fp16);
  EXPECT_TRUE(fp16.overflow_handled);
  EXPECT_GE(fp16.skipped_steps, 1);
  EXPECT_EQ(*fp16.initial_scale, 65536.0);
  const bool lists = at_least({2, 10});
  EXPECT_EQ(fp16.method.find("_amp_foreach_non_finite_check_and_unscale_") != std::string::npos,
            lists)
      << fp16.method;
  EXPECT_EQ(fp16.method.find("written out per tensor") != std::string::npos, !lists) << fp16.method;
}

}  // namespace

// The training runs, on every release: bf16 without loss scaling, fp16 with GradScaler's rule,
// LibTorch's own unscale kernel from 2.10, written out per tensor on 2.9; at the batch of one
// usable CPU (smaller: there the run's time is its CPU time) as at the batch of more.
TEST(EngineCpu, BothTrainingModesTrainLikeFp32OnEveryRelease) {
  PP_REQUIRE_CPU_TORCH(torch);
  EXPECT_LT(eng::amp_batch(false, 1), eng::amp_batch(false, 2));
  EXPECT_EQ(eng::amp_batch(false, 2), eng::amp_batch(false, 64));
  EXPECT_GT(eng::amp_batch(true, 1), eng::amp_batch(false, 2));
  for (const unsigned cpus : {1U, 2U}) {
    SCOPED_TRACE(fmt::format("the batch of {} usable CPU(s)", cpus));
    const eng::AmpSetup setup = eng::prepare_amp(eng::amp_batch(false, cpus), 7);
    ASSERT_EQ(setup.x.size(), static_cast<std::size_t>(setup.batch) * 256U);
    const auto runs = eng::run_amp({Mode::amp_fp16, Mode::amp_bf16}, setup,
                                   pp::testing::cpu_target(*torch), engine_way());
    expect_both_modes_train(runs);
    for (const auto& [mode, o] : runs) {  // the report says the batch it ran
      EXPECT_NE(o.method.find(fmt::format("at a batch of {}", setup.batch)), std::string::npos)
          << o.method;
    }
  }
}

// A newer release made to behave as 2.9 (PRECISION_PROBE_ENGINE_AS_RELEASE's knob) runs 2.9's
// paths: the written-out unscale trains as LibTorch's own kernel does.
TEST(EngineCpu, The2_9PathsRunOnANewerReleaseMadeToBehaveAsIt) {
  PP_REQUIRE_CPU_TORCH(torch);
  std::string why;
  pp::Expected<std::unique_ptr<eng::Torch>> old =
      eng::Torch::open(pp::testing::release()->cpu_library(), false);
  ASSERT_TRUE(old) << old.error();
  (*old)->behave_as({2, 9});
  EXPECT_FALSE((*old)->features().lists);
  const eng::AmpSetup setup = eng::prepare_amp(eng::amp_batch(false, 2), 7);
  const auto runs =
      eng::run_amp({Mode::amp_fp16}, setup, pp::testing::cpu_target(**old), engine_way());
  const pp::AmpOutcome& run = runs.at(Mode::amp_fp16);
  ASSERT_TRUE(run.ok) << run.error;
  EXPECT_NE(run.method.find("written out per tensor"), std::string::npos);
  const auto native =
      eng::run_amp({Mode::amp_fp16}, setup, pp::testing::cpu_target(*torch), engine_way());
  // The same steps on the same data: the same final loss scale, the same losses within rounding.
  EXPECT_EQ(*run.final_scale, *native.at(Mode::amp_fp16).final_scale);
  EXPECT_NEAR(*run.loss_end, *native.at(Mode::amp_fp16).loss_end, 1e-4);
}

TEST(EngineCpu, BenchMeasuresAPositiveThroughput) {
  PP_REQUIRE_CPU_TORCH(torch);
  const eng::Target cpu = pp::testing::cpu_target(*torch);
  pp::BenchOutcome o = eng::run_bench(Mode::fp32, cpu, 128);
  ASSERT_TRUE(o.ok) << o.error;
  eng::measure_sustained(Mode::fp32, cpu, o);
  EXPECT_FALSE(o.sustained_tflops.has_value());  // a GPU figure only
  EXPECT_GE(o.reps, 3);
  EXPECT_EQ(o.timer, "steady clock");
  // The throughput is what the time says: 2 n^3 FLOP per GEMM.
  EXPECT_NEAR(*o.tflops, 2.0 * 128 * 128 * 128 / (*o.ms * 1e-3) / 1e12, 1e-9);
}

// The soak's inputs depend on its seed alone: two preparations give the same golden checksum, and
// another seed another.
TEST(EngineCpu, TheSoaksGoldenResultDependsOnItsSeedAlone) {
  PP_REQUIRE_CPU_TORCH(torch);
  const eng::Target cpu = pp::testing::cpu_target(*torch);
  auto checksum = [&](std::uint64_t seed) {
    const eng::Gemm gemm = eng::seeded_gemm(Mode::bf16, cpu, 256, seed);
    return eng::download_bytes(gemm());
  };
  EXPECT_EQ(checksum(3), checksum(3));
  EXPECT_NE(checksum(3), checksum(4));
}

// The engine's own count of what a training step holds: every storage once, at its peak.
TEST(EngineCpu, TheMemoryLedgerCountsEachStorageOnceAtItsPeak) {
  PP_REQUIRE_CPU_TORCH(torch);
  const eng::MemoryLedger ledger;
  {
    const eng::Tensor a = eng::empty(*torch, {256, 256}, eng::Scalar::f32, eng::Device{});
    const eng::Tensor view = a.t();  // the same storage
    const eng::Tensor b = eng::empty(*torch, {256}, eng::Scalar::f32, eng::Device{});
  }
  const eng::Tensor c = eng::empty(*torch, {128}, eng::Scalar::f32, eng::Device{});
  EXPECT_EQ(ledger.peak_bytes(), 256 * 256 * 4 + 256 * 4);
}

// The TF32 GEMM the engine asks of cuBLAS (engine/torch/cublas.hpp), against a stand-in of cuBLAS
// on host memory (fake_cublas.cpp, column-major as cuBLAS): on this release's CPU tensors it gives
// LibTorch's own row-major product of non-square operands, asks for CUBLAS_COMPUTE_32F_FAST_TF32
// (the stand-in refuses anything else), names the library's version, says which function an
// image lacks, refuses operands that are not row-major fp32, and passes a failed call's status on.
TEST(Cublas, TheTf32GemmIsLibTorchsRowMajorProduct) {
  PP_REQUIRE_CPU_TORCH(torch);
  void* lib = ::dlopen(PP_FAKE_CUBLAS, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << ::dlerror();
  const eng::Cublas::SymbolFinder find = [lib](const char* name) { return ::dlsym(lib, name); };
  pp::Expected<std::unique_ptr<eng::Cublas>> cublas = eng::Cublas::open(find, nullptr);
  ASSERT_TRUE(cublas) << cublas.error();
  EXPECT_EQ((*cublas)->name(), "cuBLAS 13.1.0");
  pp::HostRandom random(7);
  auto operand = [&](std::int64_t rows, std::int64_t cols) {
    std::vector<float> v(static_cast<std::size_t>(rows * cols));
    for (float& x : v) x = static_cast<float>(random.normal());
    return eng::upload(*torch, v, {rows, cols}, eng::Scalar::f32, eng::Device{});
  };
  const eng::Tensor a = operand(3, 5);
  const eng::Tensor b = operand(5, 7);
  const eng::Tensor c = eng::empty(*torch, {3, 7}, eng::Scalar::f32, eng::Device{});
  (*cublas)->gemm_tf32(a, b, c);
  const std::vector<std::uint8_t> got = eng::download_bytes(c);
  const std::vector<std::uint8_t> want = eng::download_bytes(eng::mm(a, b));
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); i += 4) {
    float g = 0;
    float w = 0;
    std::memcpy(&g, &got[i], 4);
    std::memcpy(&w, &want[i], 4);
    EXPECT_NEAR(g, w, 1e-5 * (1.0 + std::fabs(w))) << "element " << i / 4;
  }
  EXPECT_THROW((*cublas)->gemm_tf32(a, b.t(), c), std::logic_error);              // B seen as 7x5
  EXPECT_THROW((*cublas)->gemm_tf32(a, operand(7, 5).t(), c), std::logic_error);  // not row-major
  ::setenv("FAKE_CUBLAS_FAIL", "1", 1);
  try {
    (*cublas)->gemm_tf32(a, b, c);
    ADD_FAILURE() << "a failed GEMM was not said";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("CUBLAS_STATUS_EXECUTION_FAILED"), std::string::npos)
        << e.what();
  }
  ::unsetenv("FAKE_CUBLAS_FAIL");
  const pp::Expected<std::unique_ptr<eng::Cublas>> lacking = eng::Cublas::open(
      [&find](const char* name) {
        return std::string(name) == "cublasGemmEx" ? nullptr : find(name);
      },
      nullptr);
  ASSERT_FALSE(lacking);
  EXPECT_NE(lacking.error().find("cublasGemmEx"), std::string::npos) << lacking.error();
  cublas->reset();
  ::dlclose(lib);
}

// How a session loads its checks' kernels: as PRECISION_PROBE_ENGINE_PRELOAD says, and where it
// says nothing, each check its own on one usable CPU (no preload threads to take turns) and all at
// once, each starting as its own are loaded, on more.
TEST(EngineCpu, OnOneCpuEachCheckLoadsItsOwnKernels) {
  using W = eng::PreloadWay;
  EXPECT_EQ(eng::preload_way(std::nullopt, 1), W::none);
  EXPECT_EQ(eng::preload_way(std::nullopt, 2), W::overlap);
  EXPECT_EQ(eng::preload_way(std::nullopt, 64), W::overlap);
  EXPECT_EQ(eng::preload_way(std::string("overlap"), 1), W::overlap);
  EXPECT_EQ(eng::preload_way(std::string("first"), 1), W::first);
  EXPECT_EQ(eng::preload_way(std::string("none"), 16), W::none);
}

// How the CPU's training runs go: in turn where one CPU is usable, at once where more are, unless
// PRECISION_PROBE_ENGINE_CPU_TRAINING says ("in-turn", "at-once"; another value is unset).
TEST(EngineCpu, OnOneCpuTheTrainingRunsGoInTurn) {
  using R = eng::CpuRuns;
  EXPECT_EQ(eng::cpu_training_way(std::nullopt, 1), R::in_turn);
  EXPECT_EQ(eng::cpu_training_way(std::nullopt, 2), R::at_once);
  EXPECT_EQ(eng::cpu_training_way(std::string("in-turn"), 16), R::in_turn);
  EXPECT_EQ(eng::cpu_training_way(std::string("at-once"), 1), R::at_once);
  EXPECT_EQ(eng::cpu_training_way(std::string("sometimes"), 1), R::in_turn);
  EXPECT_EQ(eng::cpu_training_way(std::string("sometimes"), 4), R::at_once);
}

// The probe accepts each value of wire/engine_settings.hpp's table and refuses the rest: each of
// those the engine reads where its default depends on the CPUs must be one it tells apart, the same
// on one CPU and on 64 (a value the engine does not know falls to a default that differs by the
// CPUs, or to one another value gives).
TEST(EngineCpu, EveryValueTheProbeAcceptsIsOneTheEngineReads) {
  const auto values_of = [](std::string_view variable) {
    for (const pp::EngineSetting& setting : pp::kEngineSettings) {
      if (setting.variable == variable) return pp::split(setting.values, ' ');
    }
    return std::vector<std::string>{};
  };
  const auto check = [&](std::string_view variable, const auto& read) {
    const std::vector<std::string> values = values_of(variable);
    ASSERT_GE(values.size(), 2U) << variable;
    std::vector<int> seen;
    for (const std::string& v : values) {
      EXPECT_EQ(static_cast<int>(read(v, 1)), static_cast<int>(read(v, 64)))
          << variable << '=' << v;
      seen.push_back(static_cast<int>(read(v, 1)));
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end())
        << variable << ": two values read alike";
  };
  check("PRECISION_PROBE_ENGINE_PRELOAD",
        [](const std::string& v, unsigned cpus) { return eng::preload_way(v, cpus); });
  check("PRECISION_PROBE_ENGINE_CPU_TRAINING",
        [](const std::string& v, unsigned cpus) { return eng::cpu_training_way(v, cpus); });
  check("PRECISION_PROBE_ENGINE_CPU_CHECKS",
        [](const std::string& v, unsigned cpus) { return eng::cpu_checks_after_gpus(v, cpus); });
}

// Whether the CPU's checks in a GPU session wait for the GPUs' plans: where one CPU is usable they
// do (beside them they would only take the GPUs' turns), where more are they run beside them,
// unless PRECISION_PROBE_ENGINE_CPU_CHECKS says ("after-gpus", "beside"; another value is unset).
TEST(EngineCpu, OnOneCpuTheCpusChecksWaitForTheGpus) {
  EXPECT_TRUE(eng::cpu_checks_after_gpus(std::nullopt, 1));
  EXPECT_FALSE(eng::cpu_checks_after_gpus(std::nullopt, 2));
  EXPECT_FALSE(eng::cpu_checks_after_gpus(std::string("beside"), 1));
  EXPECT_TRUE(eng::cpu_checks_after_gpus(std::string("after-gpus"), 16));
  EXPECT_TRUE(eng::cpu_checks_after_gpus(std::string("sometimes"), 1));
  EXPECT_FALSE(eng::cpu_checks_after_gpus(std::string("sometimes"), 8));
}

// The CPU's checks that wait for the GPUs' go once a GPU plan has come and none is under way (the
// CPU's plan comes first: none yet is not none to wait for), or once none can come (stdin ended,
// the driver did not start), and at once where a plan measures (they would run inside its
// measurements otherwise).
TEST(EngineCpu, TheCpusChecksWaitForAGpuPlanToComeAndEnd) {
  using Seen = eng::GpuPlansSeen;
  EXPECT_FALSE(eng::cpu_checks_may_go(Seen{}, false));
  EXPECT_FALSE(eng::cpu_checks_may_go(Seen{1, 1, false}, false));
  EXPECT_FALSE(eng::cpu_checks_may_go(Seen{2, 1, false}, false));
  EXPECT_TRUE(eng::cpu_checks_may_go(Seen{2, 0, false}, false));
  EXPECT_TRUE(eng::cpu_checks_may_go(Seen{0, 0, false}, true));
  EXPECT_FALSE(eng::cpu_checks_may_go(Seen{1, 1, false}, true)) << "stdin ended, one under way";
  EXPECT_TRUE(eng::cpu_checks_may_go(Seen{0, 0, true}, false)) << "the CPU's own plan measures";
  EXPECT_TRUE(eng::cpu_checks_may_go(Seen{1, 1, true}, false)) << "a GPU's plan measures";
}
