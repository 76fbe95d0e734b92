#include <gtest/gtest.h>

#include "fakes.hpp"
#include "probe/verdicts/peaks.hpp"
#include "probe/verdicts/verdict.hpp"

namespace pp = precision_probe;
using pp::Mode;

TEST(Peaks, DatasheetValuesByProductName) {
  const auto h200 =
      pp::dense_peak("NVIDIA H200", pp::ComputeCapability{9, 0}, 132, 1.98, Mode::bf16);
  ASSERT_TRUE(h200);
  EXPECT_DOUBLE_EQ(h200->tflops, 989.4);
  EXPECT_EQ(h200->source, "datasheet: NVIDIA H200");
  EXPECT_DOUBLE_EQ(
      pp::dense_peak("NVIDIA H100 PCIe", std::nullopt, std::nullopt, std::nullopt, Mode::fp8_e4m3)
          ->tflops,
      1513.0);
  EXPECT_DOUBLE_EQ(
      pp::dense_peak("NVIDIA A100-SXM4-80GB", std::nullopt, std::nullopt, std::nullopt, Mode::tf32)
          ->tflops,
      156.0);
  EXPECT_DOUBLE_EQ(
      pp::dense_peak("Tesla T4", std::nullopt, std::nullopt, std::nullopt, Mode::fp16)->tflops,
      65.0);
  EXPECT_DOUBLE_EQ(pp::dense_peak("NVIDIA GeForce RTX 4090", std::nullopt, std::nullopt,
                                  std::nullopt, Mode::fp32)
                       ->tflops,
                   82.6);
  EXPECT_DOUBLE_EQ(
      pp::dense_peak("NVIDIA B200", std::nullopt, std::nullopt, std::nullopt, Mode::nvfp4)->tflops,
      9000.0);
}

// int8 in TOPS; a product the datasheet table lacks a figure for gets the formula; B300's tensor
// cores have no int8, so it has no int8 peak.
TEST(Peaks, Int8PeaksAreInTopsAndFollowTheHardware) {
  EXPECT_DOUBLE_EQ(
      pp::dense_peak("NVIDIA H200", std::nullopt, std::nullopt, std::nullopt, Mode::int8)->tflops,
      1978.9);
  const auto rtx = pp::dense_peak("NVIDIA GeForce RTX 5090", pp::ComputeCapability{12, 0}, 170,
                                  2.407, Mode::int8);
  ASSERT_TRUE(rtx.has_value());
  EXPECT_NEAR(rtx->tflops, 170 * 2.407 * 2048 / 1000.0, 1e-9);
  EXPECT_NE(rtx->source.find("formula"), std::string::npos);
  EXPECT_FALSE(pp::dense_peak("NVIDIA B300", pp::ComputeCapability{10, 3}, 148, 2.0, Mode::int8));
  EXPECT_TRUE(pp::dense_peak("NVIDIA B300", pp::ComputeCapability{10, 3}, 148, 2.0, Mode::mxfp8));
  // The scaled fp8 recipes are held to the fp8 column, the FP4 ones to the fp4 column.
  EXPECT_DOUBLE_EQ(
      pp::dense_peak("NVIDIA B200", std::nullopt, std::nullopt, std::nullopt, Mode::mxfp4)->tflops,
      9000.0);
  EXPECT_DOUBLE_EQ(
      pp::dense_peak("NVIDIA H200", std::nullopt, std::nullopt, std::nullopt, Mode::fp8_rowwise)
          ->tflops,
      1978.9);
}

TEST(Peaks, NamesMatchAsWholeWords) {
  // "A10" must not match the A100 or the A10G; "L4" must not match the L40S.
  EXPECT_DOUBLE_EQ(
      pp::dense_peak("NVIDIA A100 80GB PCIe", std::nullopt, std::nullopt, std::nullopt, Mode::fp32)
          ->tflops,
      19.5);
  EXPECT_DOUBLE_EQ(
      pp::dense_peak("NVIDIA A10", std::nullopt, std::nullopt, std::nullopt, Mode::fp32)->tflops,
      31.2);
  EXPECT_FALSE(pp::dense_peak("NVIDIA A10G", std::nullopt, std::nullopt, std::nullopt, Mode::fp32));
  EXPECT_DOUBLE_EQ(
      pp::dense_peak("NVIDIA L40S", std::nullopt, std::nullopt, std::nullopt, Mode::fp32)->tflops,
      91.6);
  EXPECT_DOUBLE_EQ(
      pp::dense_peak("NVIDIA L4", std::nullopt, std::nullopt, std::nullopt, Mode::fp32)->tflops,
      30.3);
  EXPECT_DOUBLE_EQ(
      pp::dense_peak("NVIDIA H200 NVL", std::nullopt, std::nullopt, std::nullopt, Mode::bf16)
          ->tflops,
      835.5);
}

TEST(Peaks, ProductsWithoutAPrecisionHaveNoPeakForIt) {
  EXPECT_FALSE(pp::dense_peak("Tesla T4", pp::ComputeCapability{7, 5}, 40, 1.59, Mode::bf16));
  EXPECT_FALSE(pp::dense_peak("NVIDIA H100", pp::ComputeCapability{9, 0}, 132, 1.98, Mode::nvfp4));
}

TEST(Peaks, FormulaForProductsNotInTheTable) {
  // An unknown Hopper part: 114 SMs at 1.755 GHz, 4096 dense fp16 FLOP/clk/SM.
  const auto p =
      pp::dense_peak("NVIDIA Mystery Hopper", pp::ComputeCapability{9, 0}, 114, 1.755, Mode::bf16);
  ASSERT_TRUE(p);
  EXPECT_NEAR(p->tflops, 114 * 1.755 * 4096 / 1000.0, 1e-9);
  EXPECT_NE(p->source.find("formula: 114 SMs"), std::string::npos);
  // The formula reproduces the A100's datasheet figure from its SMs and boost clock.
  EXPECT_NEAR(108 * 1.41 * pp::flops_per_clock_per_sm({8, 0}, Mode::fp16) / 1000.0, 312.0, 3.0);
  EXPECT_NEAR(132 * 1.98 * pp::flops_per_clock_per_sm({9, 0}, Mode::fp32) / 1000.0, 67.0, 0.5);
  EXPECT_DOUBLE_EQ(pp::flops_per_clock_per_sm({7, 5}, Mode::fp8_e4m3), 0.0);
  // Without SMs or clock, no peak.
  EXPECT_FALSE(
      pp::dense_peak("NVIDIA Mystery", pp::ComputeCapability{9, 0}, std::nullopt, 1.9, Mode::bf16));
}

namespace {

pp::DeviceReport gpu(const std::string& name, pp::ComputeCapability cc) {
  pp::DeviceReport d;
  d.kind = pp::DeviceKind::cuda;
  d.index = 0;
  d.name = name;
  pp::GpuInfo g;
  g.cc = cc;
  g.sm_count = 132;
  g.clock_ghz = 1.98;
  d.gpu = g;
  for (Mode m : {Mode::fp32, Mode::fp16, Mode::bf16}) {
    pp::PrecisionResult p;
    p.hardware = pp::Hardware::native;
    p.status = pp::Status::native;
    d.precisions.set(m, p);
  }
  return d;
}

pp::BenchOutcome measured(double tflops) {
  pp::BenchOutcome o;
  o.ran = o.ok = true;
  o.tflops = tflops;
  o.size = 8192;
  o.ms = 1.0;
  return o;
}

}  // namespace

TEST(BenchVerdict, RatiosAndShareOfPeak) {
  auto d = gpu("NVIDIA H200", {9, 0});
  pp::apply_bench(d, {{Mode::fp32, measured(51.0)}, {Mode::bf16, measured(765.0)}});
  const auto& bf16 = *d.find(Mode::bf16)->bench;
  EXPECT_DOUBLE_EQ(*bf16.ratio_to_fp32, 15.0);
  EXPECT_NEAR(*bf16.percent_of_peak, 100.0 * 765.0 / 989.4, 1e-9);
  EXPECT_EQ(d.find(Mode::bf16)->status, pp::Status::native);
  EXPECT_FALSE(d.find(Mode::fp16)->bench.has_value());  // not measured
}

TEST(BenchVerdict, AHalfPrecisionNoFasterThanFp32IsNotNative) {
  // The table says native, the measurement says otherwise: the measurement wins.
  auto d = gpu("NVIDIA Odd GPU", {8, 0});
  pp::apply_bench(
      d,
      {{Mode::fp32, measured(20.0)}, {Mode::bf16, measured(19.0)}, {Mode::fp16, measured(300.0)}});
  const auto* bf16 = d.find(Mode::bf16);
  EXPECT_EQ(bf16->status, pp::Status::emulated);
  EXPECT_NE(bf16->reason.find("no faster than fp32's 20 TFLOP/s (0.95x)"), std::string::npos)
      << bf16->reason;
  EXPECT_EQ(d.find(Mode::fp16)->status, pp::Status::native);
  EXPECT_EQ(d.recommendation.dtype, pp::DType::fp16);  // bf16 lost its place
}

TEST(BenchVerdict, WithoutAnFp32MeasurementNothingIsJudged) {
  auto d = gpu("NVIDIA H200", {9, 0});
  pp::apply_bench(d, {{Mode::bf16, measured(1.0)}});
  EXPECT_EQ(d.find(Mode::bf16)->status, pp::Status::native);
  EXPECT_FALSE(d.find(Mode::bf16)->bench->ratio_to_fp32.has_value());
}
