// A sick driver and misbehaving workers, for real: the fake driver's nvmlInit or cuInit hangs or
// segfaults, the fake engine hangs, lingers or floods. The probe must end within its deadlines
// with a complete report and the documented exit code, whatever the driver does.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "binary.hpp"

namespace pp = precision_probe;
using nlohmann::json;
using pp::testing::fake_driver_env;
using pp::testing::kFakeH200;
using pp::testing::run_probe_binary;
using pp::testing::with;

namespace {

bool has_diagnostic(const json& report, const std::string& code) {
  for (const auto& d : report.at("diagnostics")) {
    if (d.at("code") == code) return true;
  }
  return false;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

// A --check-timeout long enough to tell a hang: 3 s for the one GPU (a driver starting a GPU takes
// up to 3 s where persistence mode is off).
TEST(DriverFaults, AHungNvmlIsContainedAndReportedAsHung) {
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--quick"}, std::vector<std::string>{}}) {
    std::vector<std::string> args = {"--format", "json", "--check-timeout", "3"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto start = std::chrono::steady_clock::now();
    const auto r =
        run_probe_binary(args, with(fake_driver_env(kFakeH200), {"FAKE_NVML_FAULT=hang"}));
    EXPECT_LT(seconds_since(start), 10.0) << "the hang was not bounded";
    EXPECT_EQ(r.exit_code, 5) << r.err;  // a driver that hangs is a hung GPU
    const json j = json::parse(r.out);
    EXPECT_EQ(j.at("driver").at("status"), "hung");
    EXPECT_NE(j.at("driver").at("message").get<std::string>().find("did not answer within 3 s"),
              std::string::npos);
    EXPECT_TRUE(has_diagnostic(j, "driver-hung"));
    EXPECT_NE(j.at("exit_reason").get<std::string>().find("the NVIDIA driver hangs"),
              std::string::npos);
  }
}

TEST(DriverFaults, ASegfaultingDriverLibraryDoesNotKillTheProbe) {
  for (const char* fault : {"FAKE_NVML_FAULT=segv", "FAKE_CUINIT_FAULT=segv"}) {
    const auto r =
        run_probe_binary({"--format", "json", "--require", "bf16"},
                         with(fake_driver_env(kFakeH200), {fault, "FAKE_NVML_INIT_RESULT=999"}));
    EXPECT_EQ(r.term_signal, 0) << fault;
    EXPECT_EQ(r.exit_code, 3) << fault << ": " << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j.at("driver").at("status"), "crashed") << fault;
    // SIGSEGV; under AddressSanitizer, which takes the signal, an abort or an exit code.
    const std::string message = j.at("driver").at("message");
    EXPECT_TRUE(message.find("crashed the process that called it (SIG") != std::string::npos ||
                message.find("exited with code") != std::string::npos)
        << message;
    EXPECT_TRUE(has_diagnostic(j, "driver-crashed"));
  }
}

// NVML answers; cuInit never does, in the engine's GPU session (whose GPU plans wait for it, and
// are ended as hung) nor in the driver's agent, asked once the session has not answered for
// kEngineCudaGrace (2 s). The run is bounded, the driver is said to hang (a hang proved by the
// agent's own limit, not the run's time cut short), NVML's facts stay and the CPU's verdicts stand.
TEST(DriverFaults, AHungCuInitBoundsTheFullRunAndIsSaidAsAHang) {
  // With --timeout 8 the agent must be asked long before the GPU's plan is ended as hung (at 5 s):
  // asked then, it would have less than its 5 s left, and run out of the run's time.
  for (const std::vector<std::string>& limits :
       {std::vector<std::string>{"--check-timeout", "3"},
        std::vector<std::string>{"--check-timeout", "5", "--timeout", "8"}}) {
    std::vector<std::string> args = {"--format", "json"};
    args.insert(args.end(), limits.begin(), limits.end());
    const auto start = std::chrono::steady_clock::now();
    const auto r =
        run_probe_binary(args, with(fake_driver_env(kFakeH200), {"FAKE_CUINIT_FAULT=hang"}));
    EXPECT_LT(seconds_since(start), 12.0) << limits.back();
    EXPECT_EQ(r.exit_code, 5) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j.at("driver").at("status"), "hung") << j.at("driver").dump();
    EXPECT_TRUE(has_diagnostic(j, "driver-hung")) << limits.back();
    EXPECT_FALSE(has_diagnostic(j, "driver-out-of-time")) << limits.back();
    EXPECT_EQ(j.at("devices").at(0).at("name"), "NVIDIA H200");  // NVML's facts stay
    EXPECT_EQ(j.at("devices").back().at("precisions").at("fp32").at("status"), "native");
  }
  // Where the run's time is shorter than the agent's limit, it is out of time, not hung.
  const auto start = std::chrono::steady_clock::now();
  const auto short_run =
      run_probe_binary({"--format", "json", "--check-timeout", "3", "--timeout", "3"},
                       with(fake_driver_env(kFakeH200), {"FAKE_CUINIT_FAULT=hang"}));
  EXPECT_LT(seconds_since(start), 6.0);
  const json k = json::parse(short_run.out);
  EXPECT_EQ(k.at("driver").at("status"), "out_of_time") << k.at("driver").dump();
  EXPECT_TRUE(has_diagnostic(k, "driver-out-of-time"));
}

TEST(DriverFaults, OnlyTheCpuSelectedAHungDriverIsSaidButDoesNotFailTheRun) {
  const auto r = run_probe_binary({"--device", "cpu", "--format", "json", "--check-timeout", "3"},
                                  with(fake_driver_env(kFakeH200), {"FAKE_NVML_FAULT=hang"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("driver").at("status"), "hung");
  EXPECT_TRUE(has_diagnostic(j, "driver-hung"));
  EXPECT_EQ(j.at("devices").back().at("precisions").at("fp32").at("status"), "native");
}

TEST(DriverFaults, TheCpusChecksDoNotWaitForAHungDriver) {
  // The CPU's checks start before the driver is asked: with --timeout no longer than the driver
  // query's limit, its verdict still stands. The driver ran out of the run's time: said as that,
  // not as a hang.
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_probe_binary(
      {"--device", "cpu", "--format", "json", "--timeout", "3", "--check-timeout", "3"},
      with(fake_driver_env(kFakeH200), {"FAKE_NVML_FAULT=hang"}));
  EXPECT_LT(seconds_since(start), 8.0);
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("devices").back().at("precisions").at("fp32").at("status"), "native") << r.out;
  EXPECT_EQ(j.at("driver").at("status"), "hung");
  const auto shorter = run_probe_binary(
      {"--device", "cpu", "--format", "json", "--timeout", "2", "--check-timeout", "3"},
      with(fake_driver_env(kFakeH200), {"FAKE_NVML_FAULT=hang"}));
  const json k = json::parse(shorter.out);
  EXPECT_EQ(k.at("devices").back().at("precisions").at("fp32").at("status"), "native");
  EXPECT_TRUE(has_diagnostic(k, "driver-out-of-time")) << shorter.out;
  EXPECT_FALSE(has_diagnostic(k, "driver-hung"));
  EXPECT_NE(k.at("driver").at("message").get<std::string>().find("(2 s, --timeout)"),
            std::string::npos);
  EXPECT_EQ(k.at("driver").at("status"), "out_of_time");
}

// A driver query cut short by --timeout tells one story in every field: out of time, not hung.
TEST(DriverFaults, AQueryCutShortByTheRunsTimeIsOutOfTimeEverywhere) {
  for (const char* timeout : {"0.0001", "1"}) {
    std::vector<std::string> env = fake_driver_env(kFakeH200);
    env.emplace_back("PRECISION_PROBE_TORCH=none");  // no image to read: the driver runs out
    if (std::string(timeout) == "1") env.emplace_back("FAKE_NVML_FAULT=hang");
    const auto r = run_probe_binary({"--quick", "--format", "json", "--timeout", timeout}, env);
    EXPECT_EQ(r.exit_code, 5) << timeout << ": " << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j.at("driver").at("status"), "out_of_time") << timeout;
    const std::string reason = j.at("exit_reason").get<std::string>();
    EXPECT_EQ(reason.rfind("the NVIDIA driver did not answer in the time this run gave it: ", 0),
              0U)
        << reason;
    EXPECT_NE(reason.find("when the run's time ran out"), std::string::npos) << reason;
    EXPECT_EQ(reason.find("hang"), std::string::npos) << reason;
    EXPECT_EQ(r.err.find("hang"), std::string::npos) << r.err;
    EXPECT_TRUE(has_diagnostic(j, "driver-out-of-time"));
    EXPECT_FALSE(has_diagnostic(j, "driver-hung"));
    const std::string message = j.at("driver").at("message").get<std::string>();
    EXPECT_EQ(message.find("(0 s"), std::string::npos) << message;
    EXPECT_NE(message.find(std::string(timeout) == "1" ? "(1 s, --timeout)" : "(under 1 ms"),
              std::string::npos)
        << message;
  }
  const auto text =
      run_probe_binary({"--quick", "--timeout", "0.0001"},
                       with(fake_driver_env(kFakeH200), {"PRECISION_PROBE_TORCH=none"}));
  EXPECT_NE(text.out.find("driver: out_of_time · "), std::string::npos) << text.out;
}

// A --check-timeout shorter than a driver may take to start the GPUs (3 s each) cuts a driver query
// off before it could tell a slow driver from a hung one: the setting is blamed, never the driver
// (--check-timeout 0.001 once said "the NVIDIA driver hangs"). Still exit 5: the GPUs are untested.
TEST(DriverFaults, ACheckTimeoutTooShortForTheDriverIsBlamedNotTheDriver) {
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--quick"}, std::vector<std::string>{"--device", "0"}}) {
    std::vector<std::string> args = {"--format", "json", "--check-timeout", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r =
        run_probe_binary(args, with(fake_driver_env(kFakeH200), {"FAKE_NVML_FAULT=hang"}));
    EXPECT_EQ(r.exit_code, 5) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j.at("driver").at("status"), "out_of_time");
    const std::string message = j.at("driver").at("message");
    EXPECT_NE(message.find("did not answer within 1 s (--check-timeout), less than the 3 s a "
                           "driver may take to start this machine's GPUs"),
              std::string::npos)
        << message;
    const std::string reason = j.at("exit_reason");
    EXPECT_EQ(reason.find("the NVIDIA driver hangs"), std::string::npos) << reason;
    EXPECT_NE(reason.find("(--check-timeout)"), std::string::npos) << reason;
    EXPECT_EQ(r.err.find("driver hangs"), std::string::npos) << r.err;
    EXPECT_TRUE(has_diagnostic(j, "driver-out-of-time"));
    EXPECT_FALSE(has_diagnostic(j, "driver-hung"));
  }
  // Below what any check can meet, it is refused before anything runs.
  const auto refused = run_probe_binary({"--check-timeout", "0.001"}, fake_driver_env(kFakeH200));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.err,
            "precision-probe: error: --check-timeout: '0.001' is shorter than any check can finish "
            "in: give 1 s or more (a worker's start alone, loading LibTorch, takes about half a "
            "second)\n");
}

TEST(DriverFaults, ADriverThatFloodsStdoutIsEndedNotCollected) {
  // A driver library that writes without end: the query is ended at 4 MiB, a crashed driver.
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_probe_binary({"--quick", "--format", "json", "--check-timeout", "20"},
                                  with(fake_driver_env(kFakeH200), {"FAKE_NVML_FAULT=flood"}));
  EXPECT_LT(seconds_since(start), 10.0);
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("driver").at("status"), "crashed") << r.out;
  EXPECT_NE(j.at("driver").at("message").get<std::string>().find("more than 4 MiB"),
            std::string::npos);
}

TEST(DriverFaults, SigtermWhileTheDriverHangsEndsTheRunAtOnceWithAReport) {
  pp::ChildProcess child;
  auto env = with(fake_driver_env(kFakeH200), {"FAKE_NVML_FAULT=hang"});
  env.insert(env.end(), {"PRECISION_PROBE_ENGINE=" PP_FAKE_ENGINE, "CUDA_VISIBLE_DEVICES"});
  const auto started = child.start({PP_BINARY, "--quick", "--format", "json"},
                                   pp::testing::probe_environment(env), "");
  ASSERT_TRUE(started) << started.error();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(child.pid(), SIGTERM), 0);
  std::string out;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(child.stdout_fd(), buffer, sizeof buffer)) > 0) {
    out.append(buffer, static_cast<std::size_t>(n));
  }
  const int status = child.wait();
  EXPECT_LT(seconds_since(start), 2.0) << "SIGTERM was not honoured while the driver hung";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 5);
  EXPECT_EQ(json::parse(out).at("driver").at("status"), "hung");
}

// arch reads the image's files and starts nothing: an engine that would hang is never asked.
TEST(DriverFaults, ArchStartsNoEngine) {
  const std::string log = pp::testing::make_temp_dir() + "/workers.log";
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_probe_binary({"arch", "9.0", "--timeout", "1", "--format", "json"},
                                  {"FAKE_ENGINE=hang", "FAKE_ENGINE_LOG=" + log});
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("stack").at("libtorch_version"), "2.11.0+cu130");
  EXPECT_FALSE(std::ifstream(log).good()) << pp::testing::read_all(log);
}

TEST(DriverFaults, TheGpusOfAHungDriverAreReportedFromTheirDeviceNodes) {
  // In a private /dev with one GPU node: NVML hangs, so nothing names the GPU but its node.
  std::vector<std::string> env = with(fake_driver_env(kFakeH200), {"FAKE_NVML_FAULT=hang"});
  env.insert(env.end(), {"PRECISION_PROBE_ENGINE=" PP_FAKE_ENGINE, "CUDA_VISIBLE_DEVICES"});
  const pp::ProcessOutput probe = pp::run_process(
      {"/bin/sh", "-c",
       "unshare -m sh -c 'mount -t tmpfs tmpfs /dev && mknod -m 666 /dev/null c 1 3 && "
       "mknod -m 666 /dev/nvidia0 c 195 0 && mknod -m 666 /dev/nvidiactl c 195 255 || exit 90; "
       "exec \"$0\" --format json --check-timeout 1' \"$0\"",
       PP_BINARY},
      pp::testing::probe_environment(env), "", std::chrono::seconds(30));
  if (probe.exit_code == 90 || probe.out.empty()) {
    GTEST_SKIP() << "needs root for unshare -m and mknod: " << probe.err;
  }
  EXPECT_EQ(probe.exit_code, 5) << probe.err;
  const json gpu = json::parse(probe.out).at("devices").at(0);
  EXPECT_EQ(gpu.at("name"), "GPU behind /dev/nvidia0");
  EXPECT_EQ(gpu.at("precisions").at("bf16").at("status"), "not_tested");
  EXPECT_NE(gpu.at("precisions").at("bf16").at("reason").get<std::string>().find("did not answer"),
            std::string::npos);
}

using pp::testing::alive;
using pp::testing::outliving;
using pp::testing::pids_in;

TEST(Workers, AnExitIsSeenEvenWhenAnOrphanHoldsTheWorkersStdout) {
  const std::string pids = pp::testing::make_temp_dir() + "/pids";
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_probe_binary({"--device", "cpu", "--format", "json"},
                                  {"FAKE_ENGINE=orphan", "FAKE_ENGINE_PIDS=" + pids});
  EXPECT_LT(seconds_since(start), 10.0) << "the exit was not noticed: it waited for the pipes";
  EXPECT_EQ(r.exit_code, 4);
  const json fp32 = json::parse(r.out).at("devices").back().at("precisions").at("fp32");
  EXPECT_NE(fp32.at("reason").get<std::string>().find("exited with code 1 before finishing"),
            std::string::npos)
      << fp32.dump();
  // And what it left behind was ended with it: the session's orphan, and that of the isolated
  // session its plan ran again in (where it exited again: so the failure is its own).
  ASSERT_EQ(pids_in(pids).size(), 4U);
  EXPECT_EQ(outliving(pids), std::vector<std::string>{});
}

TEST(Workers, AWorkerThatSaysDoneAndLingersIsEnded) {
  const std::string pids = pp::testing::make_temp_dir() + "/pids";
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_probe_binary({"--device", "cpu", "--format", "json"},
                                  {"FAKE_ENGINE=linger", "FAKE_ENGINE_PIDS=" + pids});
  EXPECT_LT(seconds_since(start), 10.0);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(outliving(pids), std::vector<std::string>{}) << "lingering";
}

TEST(Workers, AnEndlessLineIsAProtocolViolationAndTheRestOfTheReportStands) {
  const auto r = run_probe_binary({"--device", "cpu", "--format", "json"}, {"FAKE_ENGINE=flood"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  const json j = json::parse(r.out);
  const json cpu = j.at("devices").back();
  EXPECT_NE(cpu.at("precisions")
                .at("fp32")
                .at("reason")
                .get<std::string>()
                .find("a line longer than 1 MiB"),
            std::string::npos);
  EXPECT_EQ(cpu.at("kind"), "cpu");  // the report has its devices (it once had none: bad_alloc)
}

TEST(Workers, NoWorkerOutlivesAProbeEndedBySighupOrSigquit) {
  for (int sig : {SIGHUP, SIGQUIT}) {
    const std::string pids = pp::testing::make_temp_dir() + "/pids";
    pp::ChildProcess child;
    const auto started =
        child.start({PP_BINARY, "--device", "cpu", "-q"},
                    pp::testing::probe_environment(
                        {"PRECISION_PROBE_LIBCUDA=nope.so", "PRECISION_PROBE_LIBNVML=nope.so",
                         "FAKE_ENGINE=hang", "FAKE_ENGINE_PIDS=" + pids}),
                    "");
    ASSERT_TRUE(started) << started.error();
    for (int i = 0; i < 100 && pids_in(pids).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_FALSE(pids_in(pids).empty());
    ASSERT_EQ(::kill(child.pid(), sig), 0);
    const int status = child.wait();
    ASSERT_TRUE(WIFEXITED(status)) << sig;
    EXPECT_EQ(WEXITSTATUS(status), 5);
    EXPECT_EQ(outliving(pids), std::vector<std::string>{}) << "signal " << sig;
  }
}
