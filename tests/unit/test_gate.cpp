#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <iterator>

#include "strings/strings.hpp"
#include "probe/verdicts/exit_codes.hpp"
#include "probe/verdicts/gate.hpp"

namespace pp = precision_probe;
using pp::ErrorKind;
using pp::Hardware;
using pp::Mode;
using pp::Status;

namespace {

pp::PrecisionResult result(Status status, Hardware hardware = Hardware::native,
                           ErrorKind failure = ErrorKind::none) {
  pp::PrecisionResult p;
  p.status = status;
  p.hardware = hardware;
  p.failure = failure;
  p.reason = status == Status::native ? "" : "because";
  return p;
}

pp::DeviceReport gpu(int index, Status bf16, Status fp16 = Status::native, bool selected = true) {
  pp::DeviceReport d;
  d.kind = pp::DeviceKind::cuda;
  d.index = index;
  d.selected = selected;
  d.precisions = {
      {Mode::fp32, result(Status::native)},
      {Mode::fp16, result(fp16)},
      {Mode::bf16, result(bf16, bf16 == Status::native ? Hardware::native : Hardware::emulated)}};
  return d;
}

pp::DeviceReport cpu(Status bf16, bool selected = false) {
  pp::DeviceReport d;
  d.kind = pp::DeviceKind::cpu;
  d.selected = selected;
  d.precisions = {{Mode::fp32, result(Status::native)},
                  {Mode::bf16, result(bf16, Hardware::emulated)}};
  return d;
}

pp::Report report_with(std::vector<pp::DeviceReport> devices, std::vector<Mode> required,
                       bool quick = false) {
  pp::Report r;
  r.driver.status = pp::DriverStatus::ok;
  r.devices = std::move(devices);
  r.requirements = pp::evaluate_requirements(r, required, quick);
  return r;
}

}  // namespace

TEST(Gate, AllNativeIsZero) {
  const auto r = report_with({gpu(0, Status::native), gpu(1, Status::native)}, {Mode::bf16});
  ASSERT_EQ(r.requirements.size(), 2U);
  EXPECT_TRUE(r.requirements[0].met);
  EXPECT_EQ(r.requirements[1].device, "GPU 1");
  EXPECT_EQ(pp::decide_exit(r).code, pp::exit_code::kOk);
}

TEST(Gate, NoRequirementAndNothingFailedIsZero) {
  EXPECT_EQ(pp::decide_exit(report_with({gpu(0, Status::emulated)}, {})).code, pp::exit_code::kOk);
}

TEST(Gate, EmulatedOrUnsupportedRequirementIsOne) {
  // A T4: bf16 runs, emulated. --require bf16 must fail the gate.
  const auto r = report_with({gpu(0, Status::emulated)}, {Mode::bf16});
  EXPECT_FALSE(r.requirements[0].met);
  const auto exit = pp::decide_exit(r);
  EXPECT_EQ(exit.code, pp::exit_code::kRequirementNotMet);
  EXPECT_NE(exit.reason.find("bf16 on GPU 0 is emulated"), std::string::npos);
  EXPECT_EQ(pp::decide_exit(report_with({gpu(0, Status::unsupported)}, {Mode::bf16})).code,
            pp::exit_code::kRequirementNotMet);
}

TEST(Gate, OneBadGpuOfTwoFailsTheGate) {
  const auto r = report_with({gpu(0, Status::native), gpu(1, Status::emulated)}, {Mode::bf16});
  EXPECT_TRUE(r.requirements[0].met);
  EXPECT_FALSE(r.requirements[1].met);
  EXPECT_EQ(pp::decide_exit(r).code, pp::exit_code::kRequirementNotMet);
}

TEST(Gate, NoGpuWhereOneIsRequiredIsThree) {
  pp::Report r;
  r.driver.status = pp::DriverStatus::not_found;
  r.driver.message = "no NVIDIA driver library found";
  r.devices = {cpu(Status::emulated)};
  r.requirements = pp::evaluate_requirements(r, {Mode::bf16}, false);
  ASSERT_EQ(r.requirements.size(), 1U);
  EXPECT_EQ(r.requirements[0].device, "");  // nothing selected ("none" in the report)
  const auto exit = pp::decide_exit(r);
  EXPECT_EQ(exit.code, pp::exit_code::kEnvironment);
  EXPECT_NE(exit.reason.find("no usable GPU"), std::string::npos);
  // The CPU is there to be gated instead.
  EXPECT_NE(exit.reason.find("; to gate the CPU, add --device cpu"), std::string::npos)
      << exit.reason;
  r.devices.clear();
  r.requirements = pp::evaluate_requirements(r, {Mode::bf16}, false);
  EXPECT_EQ(pp::decide_exit(r).reason.find("--device cpu"), std::string::npos);
}

TEST(Gate, FailedCheckIsFourEvenWithoutRequirements) {
  const auto r = report_with({gpu(0, Status::native, Status::failed)}, {});
  const auto exit = pp::decide_exit(r);
  EXPECT_EQ(exit.code, pp::exit_code::kCheckFailed);
  EXPECT_NE(exit.reason.find("GPU 0 fp16 failed"), std::string::npos);
  // A failure outranks an unmet requirement.
  EXPECT_EQ(
      pp::decide_exit(report_with({gpu(0, Status::emulated, Status::failed)}, {Mode::bf16})).code,
      pp::exit_code::kCheckFailed);
}

TEST(Gate, UnselectedDevicesAreNotGated) {
  // The CPU is reported, not gated: its emulated bf16 and even a failure do not count.
  auto bad_cpu = cpu(Status::failed);
  const auto r = report_with({gpu(0, Status::native), bad_cpu}, {Mode::bf16});
  EXPECT_EQ(r.requirements.size(), 1U);
  EXPECT_EQ(pp::decide_exit(r).code, pp::exit_code::kOk);
  // Selected, it is gated.
  const auto r2 = report_with({cpu(Status::emulated, true)}, {Mode::bf16});
  EXPECT_EQ(r2.requirements[0].device, "CPU");
  EXPECT_EQ(pp::decide_exit(r2).code, pp::exit_code::kRequirementNotMet);
}

TEST(Gate, EnvironmentFailureIsThreeAndTimeoutIsFive) {
  auto d = gpu(0, Status::native);
  d.precisions[Mode::fp32] = result(Status::cannot_run, Hardware::native, ErrorKind::environment);
  EXPECT_EQ(pp::decide_exit(report_with({d}, {Mode::bf16})).code, pp::exit_code::kEnvironment);
  auto t = gpu(0, Status::native);
  t.precisions[Mode::fp16] = result(Status::failed, Hardware::native, ErrorKind::timed_out);
  EXPECT_EQ(pp::decide_exit(report_with({t, d}, {Mode::bf16})).code, pp::exit_code::kTimedOut);
}

// Schema 4: what a setting, the run's deadline or a signal cut off is no failed check, and each
// keeps its exit code: refused 3, out_of_time and interrupted 5; none of them is 4.
TEST(Gate, RefusedIsThreeAndWhatWasCutOffIsFiveNeverFour) {
  auto refused = gpu(0, Status::native);
  refused.precisions[Mode::bf16] = result(Status::refused, Hardware::native, ErrorKind::refused);
  const pp::ExitDecision by_setting = pp::decide_exit(report_with({refused}, {}));
  EXPECT_EQ(by_setting.code, pp::exit_code::kEnvironment);
  EXPECT_NE(by_setting.reason.find("GPU 0 refused the checks"), std::string::npos)
      << by_setting.reason;
  for (auto [status, kind] : {std::pair{Status::out_of_time, ErrorKind::out_of_time},
                              std::pair{Status::interrupted, ErrorKind::interrupted}}) {
    auto cut = gpu(0, Status::native);
    cut.precisions[Mode::bf16] = result(status, Hardware::native, kind);
    EXPECT_EQ(pp::decide_exit(report_with({cut}, {})).code, pp::exit_code::kTimedOut)
        << pp::to_string(status);
  }
}

TEST(Gate, QuickCountsNativeHardwareAsMet) {
  auto d = gpu(0, Status::native);
  d.precisions[Mode::bf16] = result(Status::not_tested, Hardware::native);
  const auto quick = report_with({d}, {Mode::bf16}, true);
  EXPECT_TRUE(quick.requirements[0].met);
  EXPECT_NE(quick.requirements[0].reason.find("--quick"), std::string::npos);
  const auto full = report_with({d}, {Mode::bf16}, false);
  EXPECT_FALSE(full.requirements[0].met);
}

TEST(Gate, UnavailableSelectionIsThreeAndUsageErrorIsTwo) {
  pp::Report r;
  r.run.unavailable_selection = "--device 0: no GPU is visible";
  EXPECT_EQ(pp::decide_exit(r).code, pp::exit_code::kEnvironment);
  pp::Report u;
  u.error = pp::RunFailure{pp::FailureKind::usage, "bad"};
  EXPECT_EQ(pp::decide_exit(u).code, pp::exit_code::kUsage);
}

// One severity order wherever exit codes meet (the gate, summarize's gate, a failed delivery, a
// stdout that fails at close): the table's, as docs/exit-codes.md and docs/summarize.md say it.
TEST(ExitCodes, OneSeverityOrderAsTheDocsSayIt) {
  namespace ec = pp::exit_code;
  EXPECT_EQ(ec::by_severity(), (std::array<int, 7>{2, 5, 3, 4, 6, 1, 0}));
  EXPECT_EQ(ec::most_severe(ec::kOk, ec::kOutputFailed), ec::kOutputFailed);
  EXPECT_EQ(ec::most_severe(ec::kRequirementNotMet, ec::kOutputFailed), ec::kOutputFailed);
  for (int stands : {ec::kUsage, ec::kEnvironment, ec::kCheckFailed, ec::kTimedOut}) {
    EXPECT_EQ(ec::most_severe(stands, ec::kOutputFailed), stands) << stands;
    EXPECT_EQ(ec::most_severe(ec::kOutputFailed, stands), stands) << stands;
  }
  std::vector<std::string> all, without_interrupt;
  for (int code : ec::by_severity()) {
    all.push_back(std::to_string(code));
    if (code != ec::kTimedOut) without_interrupt.push_back(std::to_string(code));
  }
  auto read = [](const char* path) {
    std::ifstream in(std::string(PP_SOURCE_DIR) + "/" + path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (char& c : text) c = c == '\n' ? ' ' : c;
    return text;
  };
  const std::string order = "**" + pp::join(all, ", ") + "**";
  EXPECT_NE(read("docs/exit-codes.md").find(order), std::string::npos) << order;
  const std::string summarize =
      "**" + pp::join(without_interrupt, ", ") + "**";  // 5: nothing written
  EXPECT_NE(read("docs/summarize.md").find(summarize), std::string::npos) << summarize;
}
