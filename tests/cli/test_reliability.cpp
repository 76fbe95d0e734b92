// The probe under faults: hung checks, signals, hostile arguments and environment. A CI gate must
// always end with a valid report and a documented exit code, never a crash.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "binary.hpp"
#include "fakes.hpp"

namespace pp = precision_probe;
using nlohmann::json;
using pp::testing::run_probe_binary;

TEST(Reliability, AHungCheckIsStoppedByThePerCheckWatchdog) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_probe_binary({"--device", "cpu", "--check-timeout", "1", "--format", "json"},
                                  {"FAKE_ENGINE=stall:bf16"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  EXPECT_EQ(r.exit_code, 5);
  const json p = json::parse(r.out).at("devices").back().at("precisions");
  EXPECT_EQ(p.at("fp32").at("status"), "native");  // finished before the hang: kept
  EXPECT_EQ(p.at("bf16").at("status"), "failed");
  EXPECT_EQ(p.at("bf16").at("failure"), "timed_out");
  EXPECT_NE(p.at("bf16").at("reason").get<std::string>().find(
                "did not finish within 1 s (--check-timeout)"),
            std::string::npos);
}

TEST(Reliability, SigtermEndsTheRunWithAValidPartialReport) {
  pp::ChildProcess child;
  const std::vector<std::string> env = pp::testing::probe_environment(
      {"PRECISION_PROBE_LIBCUDA=libcuda-missing.so.1",
       "PRECISION_PROBE_LIBNVML=libnvidia-ml-missing.so.1", "FAKE_ENGINE=hang"});
  const auto started = child.start({PP_BINARY, "--device", "cpu", "--format", "json"}, env, "");
  ASSERT_TRUE(started) << started.error();
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_EQ(::kill(child.pid(), SIGTERM), 0);
  std::string out;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(child.stdout_fd(), buffer, sizeof buffer)) > 0)
    out.append(buffer, static_cast<std::size_t>(n));
  const int status = child.wait();
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal instead of exiting";
  EXPECT_EQ(WEXITSTATUS(status), 5);
  const json j = json::parse(out);
  EXPECT_EQ(j.at("exit_code"), 5);
  EXPECT_NE(j.at("exit_reason").get<std::string>().find("interrupted by SIGTERM"),
            std::string::npos)
      << j.at("exit_reason");
  // Cut off by the signal: interrupted, not a failed check (schema 4).
  const json& fp32 = j.at("devices").back().at("precisions").at("fp32");
  EXPECT_EQ(fp32.at("status"), "interrupted");
  EXPECT_EQ(fp32.at("failure"), "interrupted");
  EXPECT_EQ(fp32.at("reason"), "interrupted by SIGTERM");
  EXPECT_EQ(j.at("run").at("interrupted"), "SIGTERM");
  EXPECT_EQ(pp::testing::gated_again(out), 5);  // read back, the interrupt is in the report
}

TEST(Reliability, HostileArgumentsGetOneLineAndExitTwo) {
  const std::string huge(100000, 'x');  // under Linux's 128 KiB limit on one argument
  const std::vector<std::vector<std::string>> cases = {
      {"--require", huge},
      {"--device", huge},
      {"--device", "0,0,0,-0"},
      {"--device", "١"},  // an Arabic-Indic digit is not a device index
      {"--require", "bf16\x1b[2J"},
      {"--timeout", "nan"},
      {"--timeout", "inf"},
      {"--timeout", "1e400"},
      {"--check-timeout", "0"},
      {"--seed", "18446744073709551616"},
      {"--bench-size", "-16"},
      {"--format", ""},
      {"--format", "json", "--format", "json"},
      {"-o", "/proc/version"},
      {"--output-as", ":"},
      {"arch", ""},
      {"arch", "9.0", "extra"},
      {""},
      {"--", "extra"},
  };
  for (const auto& args : cases) {
    const auto r = run_probe_binary(args);
    const std::string shown = args[0] + (args.size() > 1 ? " " + args[1].substr(0, 20) : "");
    EXPECT_EQ(r.exit_code, 2) << shown << "\n" << r.err;
    EXPECT_EQ(r.term_signal, 0) << shown;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1)
        << shown << ": " << r.err.substr(0, 300);
    EXPECT_LT(r.err.size(), 600U) << shown;
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "control characters echoed: " << shown;
  }
}

TEST(Reliability, DuplicateDeviceIndicesAreOne) {
  // Named twice, a device is checked once: one worker, one entry, one requirement.
  const std::string log = pp::testing::make_temp_dir() + "/workers.log";
  const auto r = run_probe_binary({"--device", "cpu,cpu", "--require", "fp32", "--format", "json"},
                                  {"FAKE_ENGINE_LOG=" + log});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("run").at("devices"), "cpu");
  EXPECT_EQ(j.at("devices").size(), 1U);
  EXPECT_EQ(j.at("requirements").size(), 1U);
  const std::string cpu_workers = pp::testing::read_all(log);
  EXPECT_EQ(std::count(cpu_workers.begin(), cpu_workers.end(), '\n'), 1) << cpu_workers;
  EXPECT_EQ(cpu_workers.rfind("cpu --worker cpu ", 0), 0U) << cpu_workers;
  std::vector<std::string> gpu_env = pp::testing::fake_driver_env(pp::testing::kFakeH200);
  gpu_env.push_back("FAKE_ENGINE_LOG=" + log + ".gpu");
  const auto gpus = run_probe_binary({"--device", "0,0,cpu,0", "--format", "json"}, gpu_env);
  EXPECT_EQ(gpus.exit_code, 0) << gpus.err;
  const nlohmann::json k = nlohmann::json::parse(gpus.out);
  EXPECT_EQ(k.at("run").at("devices"), "cpu,0");
  EXPECT_EQ(k.at("devices").size(), 2U);  // GPU 0 and the CPU
  const std::string workers = pp::testing::read_all(log + ".gpu");
  // One plan each (the GPU's tf32 in its plan).
  EXPECT_EQ(std::count(workers.begin(), workers.end(), '\n'), 2) << workers;
  EXPECT_EQ(std::count(workers.begin(), workers.end(), '='), 2) << workers;
  EXPECT_NE(workers.find("cuda --worker gpu --libtorch " PP_FAKE_STACKS
                         "/cuda/torch/lib/libtorch_cuda.so tf32=-"),
            std::string::npos)
      << workers;
}

TEST(Reliability, HostileEnvironmentIsReadDefensively) {
  const std::string junk(100000, ',');
  const std::vector<std::vector<std::string>> envs = {
      {"CUDA_VISIBLE_DEVICES=" + junk},
      {"CUDA_VISIBLE_DEVICES=GPU-\xff\xfe,\x01"},
      {"CUDA_VISIBLE_DEVICES=99999999999999999999"},
      {"NVIDIA_VISIBLE_DEVICES=\xff"},
      {"NO_COLOR=\x1b[31m", "TERM=" + std::string(5000, 'x')},
      {"PRECISION_PROBE_ENGINE=/etc/hostname"},  // exists, not an engine
      {"PRECISION_PROBE_ENGINE="},
      {"PRECISION_PROBE_LIBCUDA=/etc/hostname", "PRECISION_PROBE_LIBNVML=/dev/null"},
  };
  for (const auto& env : envs) {
    const auto r = run_probe_binary({"--format", "json"}, env);
    EXPECT_EQ(r.term_signal, 0) << env[0].substr(0, 40);
    EXPECT_TRUE(r.exit_code >= 0 && r.exit_code <= 5) << env[0].substr(0, 40);
    EXPECT_NO_THROW(json::parse(r.out)) << env[0].substr(0, 40) << "\n" << r.out.substr(0, 300);
  }
}
