// --termination-log and Kubernetes' termination message (docs/integrations.md): the run's exit
// reason, one line, in a file of the test's own, whatever way the run ends. The kubelet's own
// /dev/termination-log is never written here: run_probe_binary unsets KUBERNETES_SERVICE_HOST,
// and the tests that set it name a file or none (unit/test_termination_log.cpp decides the
// default with a path of its own).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "binary.hpp"

namespace pp = precision_probe;
using nlohmann::json;
using pp::testing::fake_driver_env;
using pp::testing::kFakeH200;
using pp::testing::kFakeT4;
using pp::testing::read_all;
using pp::testing::run_probe_binary;
using pp::testing::with;

namespace {

const std::string kInAPod = "KUBERNETES_SERVICE_HOST=10.96.0.1";

// What the kubelet's own file is now ("" where there is none), to see that a run left it alone.
std::string kubelets_file() {
  struct stat st {};
  if (::stat("/dev/termination-log", &st) != 0) return "";
  return std::to_string(st.st_ino) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + ":" + read_all("/dev/termination-log");
}

}  // namespace

// In a pod with --termination-log FILE: the file holds the exit code, what it means and the
// report's own exit reason, one line, for a met gate and for an unmet one (the earlier line
// replaced).
TEST(KubernetesMessage, TheFileNamedHoldsTheRunsExitReason) {
  const std::string file = pp::testing::make_temp_dir() + "/termination-log";
  const auto met =
      run_probe_binary({"--require", "bf16", "--format", "json", "--termination-log", file},
                       with(fake_driver_env(kFakeH200), {kInAPod}));
  ASSERT_EQ(met.exit_code, 0) << met.err;
  EXPECT_EQ(read_all(file),
            "precision-probe exit 0 (every requirement met natively, nothing failed): " +
                json::parse(met.out).at("exit_reason").get<std::string>() + "\n");
  const auto unmet =
      run_probe_binary({"--require", "bf16", "--format", "json", "--termination-log", file},
                       with(fake_driver_env(kFakeT4), {kInAPod}));
  ASSERT_EQ(unmet.exit_code, 1) << unmet.err;
  const std::string reason = json::parse(unmet.out).at("exit_reason");
  EXPECT_NE(reason.find("bf16 on GPU 0 is emulated"), std::string::npos) << reason;
  EXPECT_EQ(read_all(file),
            "precision-probe exit 1 (a required mode is not natively usable): " + reason + "\n");
  // arch gates offline and says why too.
  const auto arch = run_probe_binary(
      {"arch", "7.5", "--require", "bf16", "--format", "json", "--termination-log", file});
  ASSERT_EQ(arch.exit_code, 1) << arch.err;
  EXPECT_EQ(read_all(file), "precision-probe exit 1 (a required mode is not natively usable): " +
                                json::parse(arch.out).at("exit_reason").get<std::string>() + "\n");
}

// none writes nowhere, in a pod too; outside a pod nothing is written without the flag. The
// kubelet's file, where this machine has one, is left as it was.
TEST(KubernetesMessage, NoneAndNoPodWriteNothing) {
  const std::string before = kubelets_file();
  const std::string dir = pp::testing::make_temp_dir();
  const auto none = run_probe_binary({"-q", "--json", dir + "/r.json", "--termination-log", "none"},
                                     with(fake_driver_env(kFakeH200), {kInAPod}));
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.err, "");
  const auto outside =
      run_probe_binary({"-q", "--json", dir + "/r.json"}, fake_driver_env(kFakeH200));
  EXPECT_EQ(outside.exit_code, 0) << outside.err;
  EXPECT_EQ(outside.err, "");
  struct stat st {};
  EXPECT_NE(::stat((dir + "/none").c_str(), &st), 0) << "none is no file name";
  EXPECT_EQ(kubelets_file(), before);
}

// A value that names no file the log can go to is a usage error before anything runs, said in
// one line, and a JSON document where JSON was asked for.
TEST(KubernetesMessage, ABadValueIsAUsageErrorBeforeTheRun) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string report = dir + "/r.json";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--termination-log", "-"}, "--termination-log: '-' is stdout, which carries the report"},
      {{"--termination-log="}, "--termination-log"},
      {{"--termination-log", dir}, "is a directory"},
      {{"--termination-log", dir + "/no/such/dir/log"}, "No such file or directory"},
      {{"--termination-log", report, "--json", report},
       "--json and --termination-log name the same file"},
      {{"--termination-log"}, "--termination-log: FILE is missing"},
  };
  for (const auto& [args, said] : cases) {
    const auto r =
        run_probe_binary(with({"--format", "json"}, args),
                         with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=hang", kInAPod}));
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(said), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
    EXPECT_EQ(json::parse(r.out).at("exit_code"), 2) << r.out;
  }
  struct stat st {};
  EXPECT_NE(::stat(report.c_str(), &st), 0) << "nothing ran, nothing was written";
}

// A usage error found once the log is known (another output that cannot be written) is its
// reason too: `kubectl describe pod` says why the init container failed.
TEST(KubernetesMessage, AUsageErrorFoundBeforeTheRunIsWrittenThere) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string file = dir + "/termination-log";
  const auto r =
      run_probe_binary({"-q", "--json", dir + "/missing/r.json", "--termination-log", file},
                       with(fake_driver_env(kFakeH200), {kInAPod}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const std::string line = read_all(file);
  EXPECT_EQ(line.rfind("precision-probe exit 2 (usage error): --json: ", 0), 0U) << line;
  EXPECT_NE(line.find("missing/r.json: directory "), std::string::npos) << line;
  EXPECT_NE(line.find("missing: No such file or directory\n"), std::string::npos) << line;
}

// A log that cannot be written after the run is an output that failed: exit 6 where the run
// would have ended 0 or 1, the more severe code standing (3), said on stderr; the report itself
// is delivered.
TEST(KubernetesMessage, ALogThatCannotBeWrittenFailsTheRunAsAnUndeliveredReport) {
  const auto met = run_probe_binary({"--format", "json", "--termination-log", "/dev/full"},
                                    fake_driver_env(kFakeH200));
  EXPECT_EQ(met.exit_code, 6) << met.err;
  EXPECT_EQ(json::parse(met.out).at("exit_code"), 0) << "the report was delivered before";
  EXPECT_NE(met.err.find("precision-probe: error: the exit reason could not be written: "
                         "--termination-log: /dev/full: No space left on device"),
            std::string::npos)
      << met.err;
  const auto unmet = run_probe_binary({"-q", "--require", "bf16", "--termination-log", "/dev/full"},
                                      fake_driver_env(kFakeT4));
  EXPECT_EQ(unmet.exit_code, 6) << unmet.err;
  const auto broken = run_probe_binary({"-q", "--termination-log", "/dev/full"},
                                       with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=noimage"}));
  EXPECT_EQ(broken.exit_code, 3) << broken.err;
  EXPECT_NE(broken.err.find("No space left on device (exit 3: "), std::string::npos) << broken.err;
}

// SIGTERM (the kubelet stopping the pod) ends the run: the log says it was interrupted.
TEST(KubernetesMessage, ATerminatedRunSaysItWasInterrupted) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string file = dir + "/termination-log";
  const std::string log = dir + "/engine.log";
  const std::string pids = dir + "/pids";
  pp::ChildProcess child;
  const auto started = child.start(
      {PP_BINARY, "-q", "--termination-log", file},
      pp::testing::probe_environment(with(
          fake_driver_env(kFakeH200),
          {"FAKE_ENGINE=hang", "FAKE_ENGINE_LOG=" + log, "FAKE_ENGINE_PIDS=" + pids, kInAPod})),
      "");
  ASSERT_TRUE(started) << started.error();
  // Once the GPU's worker has its plan (the fake engine logs "cuda ..."), the checks hang.
  bool running = false;
  for (int i = 0; i < 500 && !running; ++i) {
    running = ("\n" + read_all(log)).find("\ncuda ") != std::string::npos;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(running) << "no worker started";
  ASSERT_EQ(::kill(child.pid(), SIGTERM), 0);
  std::string err;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(child.stderr_fd(), buffer, sizeof buffer)) > 0) {
    err.append(buffer, static_cast<std::size_t>(n));
  }
  const int status = child.wait();
  EXPECT_EQ(pp::testing::outliving(pids), std::vector<std::string>{});
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 5) << err;
  EXPECT_EQ(read_all(file),
            "precision-probe exit 5 (timed out or interrupted): interrupted by SIGTERM; the "
            "report is partial\n");
}
