#include <gtest/gtest.h>

#include "fakes.hpp"
#include "probe/verdicts/verdict.hpp"

namespace pp = precision_probe;
using pp::ErrorKind;
using pp::Hardware;
using pp::Status;

namespace {

pp::SmokeOutcome failed_with(ErrorKind kind, const std::string& error, bool ran = false) {
  pp::SmokeOutcome o;
  o.ran = ran;
  o.error_kind = kind;
  o.error = error;
  return o;
}

}  // namespace

TEST(Verdict, CorrectRunOnNativeHardwareIsNative) {
  const auto r = pp::combine_verdict({Hardware::native, ""}, pp::testing::passed(1e-4), "");
  EXPECT_EQ(r.status, Status::native);
  EXPECT_TRUE(r.reason.empty());
}

TEST(Verdict, CorrectRunWithoutHardwareSupportIsEmulated) {
  // bf16 on a T4: it runs, correctly, but the hardware has no BF16 tensor cores.
  const auto r = pp::combine_verdict({Hardware::emulated, "cc 7.5: no BF16 tensor cores"},
                                     pp::testing::passed(2e-3), "");
  EXPECT_EQ(r.status, Status::emulated);
  EXPECT_EQ(r.reason, "cc 7.5: no BF16 tensor cores");
  const auto surprise =
      pp::combine_verdict({Hardware::unsupported, "no FP8"}, pp::testing::passed(1e-3), "");
  EXPECT_EQ(surprise.status, Status::emulated);
  EXPECT_NE(surprise.reason.find("no FP8"), std::string::npos);
}

TEST(Verdict, RefusedOperationIsUnsupportedWithLibTorchsMessage) {
  const auto r = pp::combine_verdict(
      {Hardware::emulated, "no FP16 ISA"},
      failed_with(ErrorKind::not_supported, "\"addmm_impl_cpu_\" not implemented for 'Half'"), "");
  EXPECT_EQ(r.status, Status::unsupported);
  EXPECT_EQ(r.reason, "\"addmm_impl_cpu_\" not implemented for 'Half'");
}

TEST(Verdict, WrongNumbersNaNAndErrorsAreFailed) {
  pp::SmokeOutcome wrong = pp::testing::passed(0.5);
  wrong.ok = false;
  wrong.error.clear();
  const auto r1 = pp::combine_verdict({Hardware::native, ""}, wrong, "");
  EXPECT_EQ(r1.status, Status::failed);
  EXPECT_EQ(r1.failure, ErrorKind::wrong_result);
  EXPECT_NE(r1.reason.find("relative error 0.5"), std::string::npos);

  pp::SmokeOutcome nan = wrong;
  nan.rel_error.reset();
  const auto r2 = pp::combine_verdict({Hardware::native, ""}, nan, "");
  EXPECT_EQ(r2.status, Status::failed);
  EXPECT_NE(r2.reason.find("NaN"), std::string::npos);

  const auto r3 =
      pp::combine_verdict({Hardware::native, ""},
                          failed_with(ErrorKind::runtime, "CUBLAS_STATUS_EXECUTION_FAILED"), "");
  EXPECT_EQ(r3.status, Status::failed);
  EXPECT_EQ(r3.failure, ErrorKind::runtime);

  const auto r4 = pp::combine_verdict({Hardware::native, ""},
                                      failed_with(ErrorKind::timed_out, "timed out"), "");
  EXPECT_EQ(r4.status, Status::failed);
  EXPECT_EQ(r4.failure, ErrorKind::timed_out);
}

// Only what the device did is failed: a stack that cannot run, a setting that refuses the work,
// the run's deadline and a signal each have their own status and failure, whether the check had
// started or not.
TEST(Verdict, WhatCutACheckOffIsNamedNotFailed) {
  const std::vector<std::pair<ErrorKind, Status>> cases = {
      {ErrorKind::environment, Status::cannot_run},  {ErrorKind::refused, Status::refused},
      {ErrorKind::out_of_time, Status::out_of_time}, {ErrorKind::interrupted, Status::interrupted},
      {ErrorKind::crashed, Status::failed},          {ErrorKind::timed_out, Status::failed}};
  for (const auto& [kind, status] : cases) {
    for (bool ran : {false, true}) {
      const auto r = pp::combine_verdict({Hardware::native, ""}, failed_with(kind, "why", ran), "");
      EXPECT_EQ(r.status, status) << pp::to_string(kind) << " ran=" << ran;
      EXPECT_EQ(r.failure, kind) << pp::to_string(kind);
      EXPECT_EQ(r.reason, "why");
    }
  }
  // CUDA's answer where the compute mode refuses a context.
  EXPECT_EQ(pp::classify_error("CUDA error: CUDA-capable device(s) is/are busy or unavailable"),
            ErrorKind::refused);
  EXPECT_EQ(pp::classify_error("CUDA_ERROR_DEVICE_UNAVAILABLE: devices unavailable"),
            ErrorKind::refused);
}

TEST(Verdict, NothingRunIsNotTestedOrUnsupportedByHardware) {
  const auto quick =
      pp::combine_verdict({Hardware::native, ""}, std::nullopt, "--quick: no kernels run");
  EXPECT_EQ(quick.status, Status::not_tested);
  EXPECT_EQ(quick.reason, "--quick: no kernels run");
  const auto fp8 =
      pp::combine_verdict({Hardware::unsupported, "FP8 needs cc 8.9"}, std::nullopt, "x");
  EXPECT_EQ(fp8.status, Status::unsupported);
  EXPECT_EQ(fp8.reason, "FP8 needs cc 8.9");
  const auto old_torch = pp::combine_verdict(
      {Hardware::native, ""},
      failed_with(ErrorKind::not_run, "this LibTorch has no FP8 _scaled_mm"), "");
  EXPECT_EQ(old_torch.status, Status::not_tested);
  EXPECT_EQ(old_torch.reason, "this LibTorch has no FP8 _scaled_mm");
}

namespace {

pp::DeviceReport gpu_with(pp::ComputeCapability cc, Status fp16, Status bf16) {
  pp::DeviceReport d;
  d.kind = pp::DeviceKind::cuda;
  d.index = 0;
  pp::GpuInfo g;
  g.cc = cc;
  d.gpu = g;
  pp::PrecisionResult p16;
  p16.status = fp16;
  p16.hardware = Hardware::native;
  pp::PrecisionResult pb16;
  pb16.status = bf16;
  pb16.hardware = bf16 == Status::native ? Hardware::native : Hardware::emulated;
  d.precisions = {{pp::Mode::fp16, p16}, {pp::Mode::bf16, pb16}};
  return d;
}

}  // namespace

TEST(Verdict, RecommendationFollowsUsualPractice) {
  const auto h200 = pp::recommend(gpu_with({9, 0}, Status::native, Status::native));
  EXPECT_EQ(h200.dtype, pp::DType::bf16);
  EXPECT_FALSE(h200.loss_scaling);
  EXPECT_NE(h200.reason.find("cc 9.0 (Hopper)"), std::string::npos);

  const auto v100 = pp::recommend(gpu_with({7, 0}, Status::native, Status::emulated));
  EXPECT_EQ(v100.dtype, pp::DType::fp16);
  EXPECT_TRUE(v100.loss_scaling);

  const auto p100 = pp::recommend(gpu_with({6, 0}, Status::emulated, Status::emulated));
  EXPECT_EQ(p100.dtype, pp::DType::fp32);
  EXPECT_FALSE(p100.loss_scaling);

  // A failed bf16 on an Ampere GPU is not recommended, whatever the architecture says.
  const auto broken = pp::recommend(gpu_with({8, 0}, Status::native, Status::failed));
  EXPECT_EQ(broken.dtype, pp::DType::fp16);
}

TEST(Verdict, TheRecommendationNeverClaimsTheHardwareLacksWhatItHas) {
  // Both native in hardware, neither passed here (interrupted, say): fp32, and why, naming bf16.
  auto d = gpu_with({9, 0}, Status::failed, Status::failed);
  d.precisions[pp::Mode::bf16].hardware = Hardware::native;
  d.precisions[pp::Mode::bf16].reason = "interrupted by SIGTERM";
  const auto r = pp::recommend(d);
  EXPECT_EQ(r.dtype, pp::DType::fp32);
  EXPECT_EQ(r.reason.find("no native BF16"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("has bf16 in hardware, but here it is failed (interrupted by SIGTERM)"),
            std::string::npos)
      << r.reason;
  // Kept from running by the machine (a LibTorch without CUDA): not recommended either.
  auto cpu_only = gpu_with({9, 0}, Status::not_tested, Status::not_tested);
  for (auto [mode, p] : cpu_only.precisions) {
    p.hardware = Hardware::native;
    p.failure = pp::ErrorKind::unavailable;
    p.reason = "this LibTorch (1.13.0) was built without CUDA";
  }
  EXPECT_EQ(pp::recommend(cpu_only).dtype, pp::DType::fp32);
  EXPECT_NE(pp::recommend(cpu_only).reason.find("built without CUDA"), std::string::npos);
}

TEST(Verdict, UnderQuickTheRecommendationSaysItRestsOnTheHardwareAlone) {
  auto d = gpu_with({9, 0}, Status::not_tested, Status::not_tested);
  d.precisions[pp::Mode::bf16].hardware = Hardware::native;
  const auto r = pp::recommend(d);
  EXPECT_EQ(r.dtype, pp::DType::bf16);
  EXPECT_NE(r.reason.find("rests on the hardware alone"), std::string::npos) << r.reason;
  EXPECT_EQ(
      pp::recommend(gpu_with({9, 0}, Status::native, Status::native)).reason.find("hardware alone"),
      std::string::npos);
}

TEST(Verdict, OutOfMemoryInAnyLibraryIsTheMachinesState) {
  // As LibTorch, cuBLAS and the runtime say it on an H200 whose memory another process holds.
  for (const char* message :
       {"CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a total capacity of 139.80 GiB",
        "CUDA error: out of memory",
        "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "cudaErrorMemoryAllocation: out of memory"}) {
    EXPECT_EQ(pp::classify_error(message), pp::ErrorKind::unavailable) << message;
  }
  EXPECT_EQ(pp::classify_error("CUDA error: an illegal memory access was encountered"),
            pp::ErrorKind::runtime);
}

// The hardware has it, the stack lacks it: unsupported with the layer, whatever a worker says,
// unless the numbers were wrong (a failure always shows).
TEST(Verdict, WhatTheStackLacksIsUnsupportedWithTheLayer) {
  const pp::HardwareVerdict lacks{Hardware::native, "",
                                  "this LibTorch (2.9) lacks at::_scaled_mm_v2"};
  const auto skipped = pp::combine_verdict(lacks, std::nullopt, "--quick: no kernels run");
  EXPECT_EQ(skipped.status, Status::unsupported);
  EXPECT_EQ(skipped.reason, "this LibTorch (2.9) lacks at::_scaled_mm_v2");
  EXPECT_EQ(skipped.hardware, Hardware::native);
  EXPECT_EQ(pp::combine_verdict(lacks, pp::testing::passed(1e-3), "").status, Status::unsupported);
  pp::SmokeOutcome wrong = failed_with(ErrorKind::wrong_result, "wrong result", true);
  EXPECT_EQ(pp::combine_verdict(lacks, wrong, "").status, Status::failed);
  // The architecture's word comes first.
  const pp::HardwareVerdict neither{Hardware::unsupported, "cc 9.0: no MX", "older LibTorch"};
  EXPECT_EQ(pp::combine_verdict(neither, std::nullopt, "").reason, "cc 9.0: no MX");
}
