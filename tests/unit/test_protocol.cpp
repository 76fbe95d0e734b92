#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fakes.hpp"
#include "common/protocol.hpp"

namespace pp = precision_probe;
using pp::Mode;

TEST(Protocol, PlanRoundTrips) {
  pp::WorkerPlan plan;
  plan.kind = pp::DeviceKind::cuda;
  plan.index = 3;
  plan.smoke = {Mode::fp32, Mode::fp8_e5m2};
  plan.seed = 123456789;
  plan.describe = true;
  plan.cuda_visible_devices = "GPU-8f3a0c1e-1234-5678-9abc-def012345678";
  pp::WorkerPlan back;
  std::string error;
  ASSERT_TRUE(pp::decode_plan(pp::encode_plan(plan), back, error)) << error;
  EXPECT_EQ(back.kind, pp::DeviceKind::cuda);
  EXPECT_EQ(back.index, 3);
  EXPECT_EQ(back.smoke, plan.smoke);
  EXPECT_EQ(back.cuda_visible_devices, plan.cuda_visible_devices);
  EXPECT_EQ(back.seed, 123456789U);
  EXPECT_TRUE(back.describe);
}

TEST(Protocol, BadPlansAreRefusedWithAReason) {
  pp::WorkerPlan plan;
  std::string error;
  EXPECT_FALSE(pp::decode_plan("{", plan, error));
  EXPECT_NE(error.find("malformed"), std::string::npos);
  EXPECT_FALSE(pp::decode_plan(R"({"protocol":99,"kind":"cpu"})", plan, error));
  EXPECT_NE(error.find("protocol"), std::string::npos);
  EXPECT_FALSE(pp::decode_plan(R"({"protocol":2,"kind":"tpu"})", plan, error));
  EXPECT_FALSE(pp::decode_plan(R"({"protocol":2,"kind":"cpu","smoke":["fp7"]})", plan, error));
}

TEST(Protocol, ResultLinesRebuildTheWorkerResult) {
  pp::WorkerResult r;
  std::string error;
  ASSERT_TRUE(pp::apply_result_line(pp::encode_hello(pp::testing::cuda_stack()), r, error))
      << error;
  ASSERT_TRUE(r.stack.has_value());
  EXPECT_EQ(r.stack->arch_list, pp::testing::cuda_stack().arch_list);
  const std::string uuid = "GPU-8f3a0c1e-1234-5678-9abc-def012345678";
  ASSERT_TRUE(pp::apply_result_line(pp::encode_device("NVIDIA H200", uuid), r, error));
  EXPECT_EQ(r.device_name, "NVIDIA H200");
  EXPECT_EQ(r.device_uuid, uuid);
  ASSERT_TRUE(
      pp::apply_result_line(pp::encode_smoke(Mode::bf16, pp::testing::passed(2e-3)), r, error));
  ASSERT_EQ(r.smoke.count(Mode::bf16), 1U);
  EXPECT_TRUE(r.smoke[Mode::bf16].ok);
  EXPECT_DOUBLE_EQ(*r.smoke[Mode::bf16].rel_error, 2e-3);
  EXPECT_FALSE(r.finished);
  const pp::WorkerResult before = r;
  ASSERT_TRUE(pp::apply_result_line(pp::encode_progress("bench fp16"), r, error)) << error;
  EXPECT_EQ(r.smoke.size(), before.smoke.size());  // a progress line records nothing
  EXPECT_TRUE(r.bench.empty());
  EXPECT_FALSE(r.finished);
  ASSERT_TRUE(pp::apply_result_line(pp::encode_done(), r, error));
  EXPECT_TRUE(r.finished);
}

TEST(Protocol, NaNTravelsAsNullAndIsNeverOk) {
  pp::SmokeOutcome nan = pp::testing::passed(std::numeric_limits<double>::quiet_NaN());
  const std::string line = pp::encode_smoke(Mode::fp16, nan);
  EXPECT_NE(line.find("\"rel_error\":null"), std::string::npos);
  pp::WorkerResult r;
  std::string error;
  ASSERT_TRUE(pp::apply_result_line(line, r, error));
  EXPECT_FALSE(r.smoke[Mode::fp16].ok);  // "ok" without a finite error is not believed
  EXPECT_EQ(r.smoke[Mode::fp16].error_kind, pp::ErrorKind::wrong_result);
}

TEST(Protocol, MalformedLinesAreRejected) {
  pp::WorkerResult r;
  std::string error;
  EXPECT_FALSE(pp::apply_result_line("not json", r, error));
  EXPECT_FALSE(
      pp::apply_result_line(R"({"type":"smoke","mode":"fp7","ran":true,"ok":true})", r, error));
  EXPECT_FALSE(pp::apply_result_line(R"({"type":"what"})", r, error));
  EXPECT_FALSE(pp::apply_result_line(R"({"type":"hello","protocol":1,"stack":{}})", r, error));
  EXPECT_NE(error.find("protocol"), std::string::npos);
  EXPECT_FALSE(pp::apply_result_line(R"({"type":"smoke","mode":"fp16"})", r, error));
}

TEST(Protocol, ErrorsAreClassified) {
  EXPECT_EQ(pp::classify_error("\"addmm_impl_cpu_\" not implemented for 'Half'"),
            pp::ErrorKind::not_supported);
  EXPECT_EQ(pp::classify_error("torch._scaled_mm is only supported on CUDA devices with compute "
                               "capability >= 9.0 or 8.9"),
            pp::ErrorKind::not_supported);
  EXPECT_EQ(
      pp::classify_error("CUDA error: no kernel image is available for execution on the device"),
      pp::ErrorKind::environment);
  EXPECT_EQ(pp::classify_error("CUDA error: an illegal memory access was encountered"),
            pp::ErrorKind::runtime);
}

namespace {

// The outcome a result line leaves, as the probe reads it.
pp::WorkerResult applied(const std::string& line) {
  pp::WorkerResult r;
  std::string error;
  EXPECT_TRUE(pp::apply_result_line(line, r, error)) << error;
  return r;
}

}  // namespace

TEST(Protocol, TheProbesToleranceNotTheWorkersDecides) {
  // The worker claims a tolerance of 0.5 and calls 0.3 ok; the probe's tolerance for bf16 is 1e-2.
  const auto r = applied(
      R"({"type":"smoke","mode":"bf16","ran":true,"ok":true,"rel_error":0.3,"tolerance":0.5,)"
      R"("ms":0.1,"m":256,"n":256,"k":256,"method":"at::mm","error_kind":"none","error":""})");
  const pp::SmokeOutcome& o = r.smoke.at(Mode::bf16);
  EXPECT_FALSE(o.ok);
  EXPECT_DOUBLE_EQ(o.tolerance, pp::smoke_tolerance(Mode::bf16));
  EXPECT_NE(o.error.find("relative error 0.3 exceeds the tolerance 0.01"), std::string::npos)
      << o.error;
}

TEST(Protocol, ImpossibleValuesAreFailedWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type":"smoke","mode":"fp32","ran":true,"ok":true,"rel_error":-1e-7,"ms":0.1,)"
       R"("m":256,"n":256,"k":256,"error_kind":"none"})",
       "rel_error -1e-07"},
      {R"({"type":"smoke","mode":"fp32","ran":true,"ok":true,"rel_error":1e-7,"ms":1e12,)"
       R"("m":256,"n":256,"k":256,"error_kind":"none"})",
       "ms 1000000000000"},
      {R"({"type":"smoke","mode":"fp32","ran":true,"ok":true,"rel_error":1e-7,"ms":0.1,)"
       R"("m":0,"n":256,"k":256,"error_kind":"none"})",
       "a matrix size of 0"},
      {R"({"type":"amp","mode":"amp_bf16","ran":true,"ok":true,"error_kind":"none","steps":24,)"
       R"("loss_start":2.3,"loss_end":0.5,"fp32_loss_end":0.6,"loss_rel_diff":0.001})",
       "loss_rel_diff 0.001 where the losses give"},
      {R"({"type":"amp","mode":"amp_fp16","ran":true,"ok":true,"error_kind":"none","steps":24,)"
       R"("skipped_steps":30,"loss_start":2.3,"loss_end":0.5,"fp32_loss_end":0.5,"loss_rel_diff":0})",
       "30 skipped steps of 24"},
      {R"({"type":"bench","mode":"bf16","ran":true,"ok":true,"error_kind":"none","size":8192,)"
       R"("reps":20,"ms":1.4,"tflops":7000})",
       "7000 TFLOP/s where its size and time give"},
      {R"({"type":"bench","mode":"bf16","ran":true,"ok":true,"error_kind":"none","size":8192,)"
       R"("reps":20,"ms":1e-9,"tflops":1.1e12})",
       "1100000000000 TFLOP/s"},
  };
  for (const auto& [line, expected] : cases) {
    const auto r = applied(line);
    std::string error;
    bool ok = true;
    for (const auto& [m, o] : r.smoke) ok = ok && o.ok, error += o.error;
    for (const auto& [m, o] : r.amp) ok = ok && o.ok, error += o.error;
    for (const auto& [m, o] : r.bench) ok = ok && o.ok, error += o.error;
    EXPECT_FALSE(ok) << line;
    EXPECT_NE(error.find("impossible value: " + expected), std::string::npos) << line << "\n"
                                                                              << error;
  }
  // A collective whose bus bandwidth its own figures do not give.
  const auto c = applied(
      R"({"type":"collective","dtype":"bf16","ran":true,"ok":true,"error_kind":"none","ranks":4,)"
      R"("bytes":268435456,"time_ms":1.5,"algbw_gbps":178.96,"busbw_gbps":999})");
  EXPECT_FALSE(c.collectives.at(0).ok);
  EXPECT_NE(c.collectives.at(0).error.find("a bus bandwidth"), std::string::npos);
  // And what is consistent passes.
  const auto good = applied(
      R"({"type":"bench","mode":"bf16","ran":true,"ok":true,"error_kind":"none","size":8192,)"
      R"("reps":20,"ms":1.385,"tflops":793.8})");
  EXPECT_TRUE(good.bench.at(Mode::bf16).ok) << good.bench.at(Mode::bf16).error;
}
