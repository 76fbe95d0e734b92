// --soak's verdicts on reports built by hand: mismatches fail their mode, golden results of like
// GPUs are compared (a majority names the odd one; two are both suspects), stragglers are named;
// and the fault injector's specification.

#include <gtest/gtest.h>

#include "probe/driver/telemetry.hpp"
#include "probe/verdicts/soak.hpp"

namespace pp = precision_probe;
using pp::Mode;
using pp::Status;

namespace {

pp::SoakOutcome soaked(const std::string& checksum, double tflops, std::int64_t mismatches = 0) {
  pp::SoakOutcome o;
  o.ran = true;
  o.ok = mismatches == 0;
  o.size = 8192;
  o.iterations = 1000;
  o.mismatches = mismatches;
  o.golden_checksum = checksum;
  o.tflops = tflops;
  o.seconds = 10.0;
  if (mismatches > 0) {
    pp::SoakMismatch first;
    first.iteration = 12;
    first.seconds = 3.5;
    first.elements = 1;
    first.max_abs_error = 0.25;
    o.first_mismatch = first;
    o.error_kind = pp::ErrorKind::wrong_result;
    o.error = "silent data corruption: result 12";
  }
  return o;
}

pp::DeviceReport gpu(int index, const pp::SoakOutcome& bf16) {
  pp::DeviceReport d;
  d.kind = pp::DeviceKind::cuda;
  d.index = index;
  d.name = "NVIDIA H200";
  d.selected = true;
  pp::GpuInfo info;
  info.cc = pp::ComputeCapability{9, 0};
  info.sm_count = 132;
  d.gpu = info;
  pp::PrecisionResult p;
  p.status = Status::native;
  d.precisions = {{Mode::bf16, p}};
  pp::SoakReport s;
  s.seconds = 10.0;
  s.modes = {{Mode::bf16, bf16}};
  d.soak = s;
  return d;
}

}  // namespace

TEST(Soak, AMismatchFailsItsModeAndDecidesTheExitBeforeAnInterrupt) {
  pp::Report r;
  r.devices = {gpu(0, soaked("00000000000000aa", 650.0, 3))};
  r.run.interrupted = "SIGINT";
  pp::judge_soak(r);
  EXPECT_EQ(r.devices[0].find(Mode::bf16)->status, Status::failed);
  EXPECT_EQ(r.devices[0].find(Mode::bf16)->failure, pp::ErrorKind::wrong_result);
  EXPECT_NE(pp::soak_corruption(r).find("GPU 0 bf16"), std::string::npos);
}

TEST(Soak, TheGpuThatDisagreesWithTheMajorityIsNamed) {
  pp::Report r;
  r.devices = {gpu(0, soaked("00000000000000aa", 650.0)), gpu(1, soaked("00000000000000aa", 655.0)),
               gpu(2, soaked("00000000000000bb", 652.0))};
  pp::judge_soak(r);
  EXPECT_TRUE(r.devices[0].soak->golden_disagreement.empty());
  EXPECT_TRUE(r.devices[1].soak->golden_disagreement.empty());
  EXPECT_NE(r.devices[2].soak->golden_disagreement.find("differs from that of 2 like GPUs (GPU 0, "
                                                        "GPU 1)"),
            std::string::npos)
      << r.devices[2].soak->golden_disagreement;
  EXPECT_EQ(r.devices[2].find(Mode::bf16)->status, Status::failed);
  EXPECT_EQ(r.devices[0].find(Mode::bf16)->status, Status::native);
  EXPECT_NE(pp::soak_corruption(r).find("GPU 2"), std::string::npos);
}

TEST(Soak, TwoGpusThatDisagreeAreBothSuspects) {
  pp::Report r;
  r.devices = {gpu(0, soaked("00000000000000aa", 650.0)),
               gpu(1, soaked("00000000000000bb", 650.0, 2))};
  pp::judge_soak(r);
  for (const pp::DeviceReport& d : r.devices) {
    EXPECT_NE(d.soak->golden_disagreement.find("each is a suspect"), std::string::npos);
    EXPECT_EQ(d.find(Mode::bf16)->status, Status::failed);
  }
  EXPECT_NE(r.devices[1].soak->golden_disagreement.find("GPU 1 also differed from its own golden"),
            std::string::npos);
  // Another model, or a MIG slice (other SM count), is not compared.
  r.devices[1] = gpu(1, soaked("00000000000000bb", 650.0));
  r.devices[1].gpu->sm_count = 66;
  r.devices[0] = gpu(0, soaked("00000000000000aa", 650.0));
  pp::judge_soak(r);
  EXPECT_TRUE(r.devices[0].soak->golden_disagreement.empty());
  EXPECT_EQ(pp::soak_corruption(r), "");
}

TEST(Soak, AGpuTenPercentBelowItsLikeIsAStraggler) {
  pp::Report r;
  r.devices = {gpu(0, soaked("00000000000000aa", 650.0)), gpu(1, soaked("00000000000000aa", 640.0)),
               gpu(2, soaked("00000000000000aa", 560.0))};
  pp::judge_soak(r);
  EXPECT_TRUE(r.devices[0].soak->straggler.empty());
  EXPECT_TRUE(r.devices[1].soak->straggler.empty());
  EXPECT_NE(r.devices[2].soak->straggler.find("560 TFLOP/s under load, 13 % below the median 645"),
            std::string::npos)
      << r.devices[2].soak->straggler;
  EXPECT_EQ(r.devices[2].find(Mode::bf16)->status, Status::native);  // slow is not wrong
  EXPECT_EQ(pp::soak_corruption(r), "");
}

TEST(Soak, TheFaultInjectorsSpecification) {
  const auto every = pp::parse_fault_injection("bf16:100");
  ASSERT_TRUE(every) << every.error();
  EXPECT_EQ(every->mode, Mode::bf16);
  EXPECT_EQ(every->iteration, 100);
  EXPECT_TRUE(every->applies_to(pp::DeviceKind::cuda, 3));
  EXPECT_TRUE(every->applies_to(pp::DeviceKind::cpu, -1));
  const auto cpu = pp::parse_fault_injection("FP32:5:cpu");
  ASSERT_TRUE(cpu);
  EXPECT_TRUE(cpu->applies_to(pp::DeviceKind::cpu, -1));
  EXPECT_FALSE(cpu->applies_to(pp::DeviceKind::cuda, 0));
  const auto gpu1 = pp::parse_fault_injection("int8:7:01");
  ASSERT_TRUE(gpu1);
  EXPECT_TRUE(gpu1->applies_to(pp::DeviceKind::cuda, 1));
  EXPECT_FALSE(gpu1->applies_to(pp::DeviceKind::cuda, 0));
  for (const char* bad :
       {"", "bf16", "bf16:0", "bf16:x", "amp_bf16:3", "fp7:3", "bf16:3:gpu", "bf16:3:0:1"}) {
    const auto r = pp::parse_fault_injection(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find("PRECISION_PROBE_INJECT_FAULT"), std::string::npos);
  }
}

// NVML's samples of a GPU summed up: extremes, the slowdowns seen, counters' growth, Xids; the
// temperature at a mismatch from the nearest sample; samples survive their wire form.
TEST(SoakTelemetry, SamplesAreSummedUpPerGpu) {
  auto sample = [](double t, int temp, int mhz, std::uint64_t reasons, std::int64_t unc) {
    pp::TelemetrySample s;
    s.boot_s = t;
    pp::GpuSample g;
    g.uuid = "GPU-a";
    g.temperature_c = temp;
    g.sm_mhz = mhz;
    g.power_w = 600.0 + temp;
    g.clock_reasons = reasons;
    g.ecc_uncorrected = unc;
    s.gpus = {g};
    pp::GpuSample other = g;
    other.uuid = "GPU-b";
    other.temperature_c = 99;
    s.gpus.push_back(other);
    return s;
  };
  std::vector<pp::TelemetrySample> samples = {sample(100.0, 61, 1980, 0x0, 4),
                                              sample(101.0, 78, 1410, 0x4 | 0x40, 4),
                                              sample(102.0, 83, 1290, 0x4, 6)};
  samples[1].xids.push_back({"GPU-a", 79});
  const std::string wire = pp::encode_sample(samples[1]);
  const auto back = pp::decode_sample(wire);
  ASSERT_TRUE(back.has_value()) << wire;
  EXPECT_EQ(pp::encode_sample(*back), wire);
  EXPECT_FALSE(pp::decode_sample("{\"gpus\":[]}").has_value());

  const pp::SoakTelemetry t = pp::summarise(samples, "GPU-a");
  EXPECT_EQ(t.samples, 3);
  EXPECT_EQ(t.max_temperature_c, 83);
  EXPECT_EQ(t.min_sm_mhz, 1290);
  EXPECT_EQ(t.max_sm_mhz, 1980);
  EXPECT_EQ(t.clock_events, (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_EQ(t.ecc_uncorrected_delta, 2);
  EXPECT_FALSE(t.ecc_corrected_delta.has_value());  // NVML never said
  EXPECT_EQ(t.xids, std::vector<int>{79});
  EXPECT_EQ(pp::temperature_at(samples, "GPU-a", 101.3), 78);
  EXPECT_FALSE(pp::temperature_at(samples, "GPU-a", 200.0).has_value());  // none within 5 s
  EXPECT_EQ(pp::summarise(samples, "GPU-z").samples, 0);
}
