// The scaled recipes' operands as the engine makes them (kernels.cpp), read back on the CPU with
// LibTorch's own types: codes and scales in the layouts the calls take stand for the values the
// reference uses. And int8, which runs on CPUs: exact, or refused naming what LibTorch lacks.

#include <gtest/gtest.h>

#include "common/quantise.hpp"
#include "engine/checks/kernels.hpp"
#include "engine/engine.hpp"

namespace pp = precision_probe;
namespace eng = precision_probe::engine;
using pp::Mode;

namespace {

const eng::Target kCpu{};

#if PP_TORCH_AT_LEAST(2, 10)
eng::QuantisedOperands operands_of(Mode mode) {
  const eng::Shape s = eng::smoke_shape(mode, kCpu);
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  at::manual_seed(3);
  return eng::quantise_operands(mode, at::randn({s.m, s.k}, f64), at::randn({s.k, s.n}, f64));
}
#endif

}  // namespace

TEST(EngineQuantised, Int8IsExactOnTheCpuOrSaysWhatThisLibTorchLacks) {
  const auto o = eng::run_smoke(Mode::int8, kCpu, 6);
#if PP_TORCH_AT_LEAST(2, 4)
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(*o.rel_error, 0.0);  // int32 accumulation of int8 codes: exactly the int64 product
  EXPECT_EQ(o.m, 192);
  EXPECT_EQ(o.k, 640);
  EXPECT_EQ(o.method, "at::_int_mm int8");
#else
  EXPECT_FALSE(o.ran);
  EXPECT_EQ(o.error_kind, pp::ErrorKind::not_supported);
  EXPECT_NE(o.error.find("lacks at::_int_mm as the int8 check calls it: upgrade to LibTorch "
                         "(PyTorch) 2.4 or later"),
            std::string::npos)
      << o.error;
#endif
}

// What the device will read (codes seen as their dtype, times the scales, in the layout the call
// takes) is what the reference multiplies.
TEST(EngineQuantised, Fp8RecipesOperandsStandForTheReferencesValues) {
#if !PP_TORCH_AT_LEAST(2, 10)
  GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no float8 types for the scaled recipes";
#else
  const at::Device cpu(at::kCPU);
  {
    const eng::QuantisedOperands o = operands_of(Mode::fp8_rowwise);
    const at::Tensor a = o.a.on(cpu).to(at::kDouble) * o.scales_a[0].on(cpu).to(at::kDouble);
    const at::Tensor b = o.b.on(cpu).to(at::kDouble) * o.scales_b[0].on(cpu).to(at::kDouble);
    EXPECT_EQ(o.scales_a[0].on(cpu).sizes(), (std::vector<std::int64_t>{192, 1}));
    EXPECT_EQ(o.scales_b[0].on(cpu).sizes(), (std::vector<std::int64_t>{1, 320}));
    EXPECT_TRUE(at::allclose(a, o.a_values, 1e-6, 0.0));
    EXPECT_TRUE(at::allclose(b, o.b_values, 1e-6, 0.0));
  }
  {
    const eng::QuantisedOperands o = operands_of(Mode::fp8_blockwise);
    const at::Tensor sa = o.scales_a[0].on(cpu);  // (M, K/128), strides (1, M)
    const at::Tensor sb = o.scales_b[0].on(cpu);  // (round_up(K/128, 4), N/128), strides (1, that)
    EXPECT_EQ(sa.sizes(), (std::vector<std::int64_t>{192, 5}));
    EXPECT_EQ(sa.strides(), (std::vector<std::int64_t>{1, 192}));
    EXPECT_EQ(sb.sizes(), (std::vector<std::int64_t>{8, 3}));
    EXPECT_EQ(sb.strides(), (std::vector<std::int64_t>{1, 8}));
    EXPECT_EQ(sb.slice(0, 5).abs().sum().item<double>(), 0.0);  // the padding is zeros
    const at::Tensor a_scale = sa.to(at::kDouble).repeat_interleave(128, 1);
    const at::Tensor b_scale =
        sb.slice(0, 0, 5).to(at::kDouble).repeat_interleave(128, 0).repeat_interleave(128, 1);
    const at::Tensor b = o.b.on(cpu);  // (K, N), column-major
    EXPECT_EQ(b.strides(), (std::vector<std::int64_t>{1, 640}));
    EXPECT_TRUE(at::allclose(o.a.on(cpu).to(at::kDouble) * a_scale, o.a_values, 1e-6, 0.0));
    EXPECT_TRUE(at::allclose(b.to(at::kDouble) * b_scale.slice(1, 0, 320), o.b_values, 1e-6, 0.0));
  }
#endif
}

// LibTorch's own e4m3 conversion agrees with the quantiser's, bit for bit, within the range.
TEST(EngineQuantised, TheE4m3EncodingIsLibTorchs) {
#if !PP_TORCH_AT_LEAST(2, 5)
  GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no float8 types";
#else
  at::manual_seed(5);
  const at::Tensor x =
      at::cat({at::randn({4096}, at::kFloat) * 50.0F, at::randn({4096}, at::kFloat) * 0.01F,
               at::tensor({448.0F, -448.0F, 0.0F, 1.0625F, 1.1875F})})
          .clamp(-448.0, 448.0);
  const at::Tensor bytes = x.to(at::kFloat8_e4m3fn).view(at::kByte);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(pp::quantise::encode_e4m3(x[i].item<float>()), bytes[i].item<std::uint8_t>())
        << x[i].item<float>();
  }
#endif
}
