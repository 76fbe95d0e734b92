// What fleets read unattended (metrics, node labels) never says `failed` for a healthy node: a
// stack that cannot run (exit 3), a setting that refuses the work (exit 3), the run's deadline
// (exit 5) and a signal (exit 5) each have their own status in every format; a run ended by a
// signal leaves the node-facing files the last run wrote as they were (issue 38, schema 4).

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "binary.hpp"

namespace pp = precision_probe;
using namespace std::chrono_literals;
using nlohmann::json;
using pp::testing::fake_driver_env;
using pp::testing::kFakeH200;
using pp::testing::read_all;
using pp::testing::run_probe_binary;
using pp::testing::with;

namespace {

// The files of one run, one per format.
struct Files {
  std::string dir = pp::testing::make_temp_dir();
  std::string json = dir + "/r.json";
  std::string prom = dir + "/p.prom";
  std::string nfd = dir + "/labels";
  std::string markdown = dir + "/r.md";
  std::string text = dir + "/r.txt";
  std::vector<std::string> args() const {
    return {"-q", "--json",     json,     "--prom", prom, "--nfd",
            nfd,  "--markdown", markdown, "--text", text};
  }
};

// The node labels of an NFD file, by name without the domain.
std::map<std::string, std::string> labels_of(const std::string& file) {
  std::map<std::string, std::string> labels;
  std::size_t at = 0;
  while (at < file.size()) {
    const std::size_t end = file.find('\n', at);
    const std::string line = file.substr(at, end - at);
    at = end == std::string::npos ? file.size() : end + 1;
    const std::size_t slash = line.find('/');
    const std::size_t eq = line.find('=');
    if (line.empty() || line[0] == '#' || slash == std::string::npos || eq == std::string::npos) {
      continue;
    }
    labels[line.substr(slash + 1, eq - slash - 1)] = line.substr(eq + 1);
  }
  return labels;
}

// Every format of one run says `status` for bf16 on GPU 0, and none says failed anywhere.
void expect_every_format_says(const Files& f, const std::string& status) {
  const json j = json::parse(read_all(f.json));
  const json& precisions = j.at("devices").at(0).at("precisions");
  EXPECT_EQ(precisions.at("bf16").at("status"), status) << precisions.at("bf16");
  EXPECT_EQ(precisions.at("bf16").at("failure"), status == "cannot_run" ? "environment" : status);
  for (const auto& [mode, p] : precisions.items()) EXPECT_NE(p.at("status"), "failed") << mode;

  const std::string prom = read_all(f.prom);
  const std::string bf16_line = R"(mode="bf16",status=")" + status + "\"} 1";
  EXPECT_NE(prom.find(bf16_line), std::string::npos) << prom;
  EXPECT_EQ(prom.find(R"(status="failed"} 1)"), std::string::npos) << prom;
  EXPECT_NE(prom.find(R"(status="failed"} 0)"), std::string::npos) << "the state set lost failed";

  const auto labels = labels_of(read_all(f.nfd));
  ASSERT_EQ(labels.count("gpu.bf16"), 1U) << read_all(f.nfd);
  EXPECT_EQ(labels.at("gpu.bf16"), status);
  for (const auto& [name, value] : labels) EXPECT_NE(value, "failed") << name;

  const std::string text = read_all(f.text);
  EXPECT_NE(text.find(status), std::string::npos) << text;
  const std::string markdown = read_all(f.markdown);
  EXPECT_NE(markdown.find(status), std::string::npos) << markdown;
}

// Waits until a GPU's worker has its plan (the fake engine logs "cuda ..."): the driver has
// answered and the GPU's checks run. A worker started ahead (the CPU's) is not enough.
bool wait_for_gpu_worker(const std::string& log) {
  for (int i = 0; i < 500; ++i) {
    const std::string lines = "\n" + read_all(log);
    if (lines.find("\ncuda ") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Starts a run that hangs in its GPU's checks, SIGTERMs it once the GPU's worker runs, and returns
// its exit status and stderr.
std::pair<int, std::string> terminated_run(const Files& f, const std::string& engine = "hang",
                                           const std::vector<std::string>& more = {},
                                           std::chrono::milliseconds after = {}) {
  const std::string pids = f.dir + "/pids";
  const std::string log = f.dir + "/log";
  pp::ChildProcess child;
  std::vector<std::string> argv = {PP_BINARY};
  for (const std::string& a : f.args()) argv.push_back(a);
  for (const std::string& a : more) argv.push_back(a);
  const auto started = child.start(
      argv,
      pp::testing::probe_environment(
          with(fake_driver_env(kFakeH200),
               {"FAKE_ENGINE=" + engine, "FAKE_ENGINE_PIDS=" + pids, "FAKE_ENGINE_LOG=" + log})),
      "");
  if (!started) return {-1, started.error()};
  if (!wait_for_gpu_worker(log)) {
    ::kill(child.pid(), SIGKILL);
    child.wait();
    return {-1, "no worker started"};
  }
  std::this_thread::sleep_for(after);
  ::kill(child.pid(), SIGTERM);
  std::string err;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(child.stderr_fd(), buffer, sizeof buffer)) > 0) {
    err.append(buffer, static_cast<std::size_t>(n));
  }
  const int status = child.wait();
  EXPECT_EQ(pp::testing::outliving(pids), std::vector<std::string>{});
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, err};
}

}  // namespace

// Exit 3: LibTorch has no kernel image for the GPU. The stack cannot run here; the GPU computed
// nothing wrong.
TEST(NodeFacing, AStackThatCannotRunIsCannotRunInEveryFormat) {
  const Files f;
  const auto r =
      run_probe_binary(f.args(), with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=noimage"}));
  ASSERT_EQ(r.exit_code, 3) << r.err;
  expect_every_format_says(f, "cannot_run");
}

// Exit 3: the GPU's compute mode refuses contexts. A setting of the node's, not wrong numbers.
TEST(NodeFacing, ASettingThatRefusesTheWorkIsRefusedInEveryFormat) {
  const Files f;
  const auto r = run_probe_binary(f.args(), with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=busy"}));
  ASSERT_EQ(r.exit_code, 3) << r.err;
  expect_every_format_says(f, "refused");
  const json j = json::parse(read_all(f.json));
  EXPECT_NE(j.at("exit_reason").get<std::string>().find("GPU 0 refused the checks"),
            std::string::npos)
      << j.at("exit_reason");
}

// Exit 5: the run's --timeout ran out while a check hung. Out of time, not failed; the files are
// written (no signal ended the run).
TEST(NodeFacing, TheRunsDeadlineIsOutOfTimeInEveryFormat) {
  const Files f;
  const auto r = run_probe_binary(with(f.args(), {"--timeout", "3"}),
                                  with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=hang"}));
  ASSERT_EQ(r.exit_code, 5) << r.err;
  expect_every_format_says(f, "out_of_time");
}

// Exit 5: SIGTERM on the first run, when no earlier file is there: every file is written, with the
// honest statuses.
TEST(NodeFacing, ASignalOnTheFirstRunWritesInterruptedInEveryFormat) {
  const Files f;
  const auto [code, err] = terminated_run(f);
  ASSERT_EQ(code, 5) << err;
  expect_every_format_says(f, "interrupted");
}

// Exit 5 by a signal where a good run wrote the node's files before: the metrics and labels stand
// as that run wrote them (the shipped alerts and the scheduler keep reading its proof); the other
// formats are replaced by the partial report, and stderr says what was kept.
TEST(NodeFacing, ASignalLeavesTheLastGoodMetricsAndLabelsAsTheyWere) {
  const Files f;
  const auto good = run_probe_binary(f.args(), fake_driver_env(kFakeH200));
  ASSERT_EQ(good.exit_code, 0) << good.err;
  const std::string prom = read_all(f.prom);
  const std::string labels = read_all(f.nfd);
  const std::string report = read_all(f.json);
  ASSERT_FALSE(prom.empty());
  ASSERT_FALSE(labels.empty());

  const auto [code, err] = terminated_run(f);
  ASSERT_EQ(code, 5) << err;
  EXPECT_EQ(read_all(f.prom), prom);
  EXPECT_EQ(read_all(f.nfd), labels);
  EXPECT_NE(err.find("--prom " + f.prom + ": left as the last run wrote it"), std::string::npos)
      << err;
  EXPECT_NE(err.find("--nfd " + f.nfd + ": left as the last run wrote it"), std::string::npos)
      << err;
  // The JSON report is the run's own: partial, interrupted.
  EXPECT_NE(read_all(f.json), report);
  EXPECT_EQ(json::parse(read_all(f.json)).at("run").at("interrupted"), "SIGTERM");
}

// A soak cut off by SIGTERM on the first run, its results so far all matching: not `passed` (the
// soak did not last its time), `interrupted`.
TEST(NodeFacing, ASoakCutOffBySignalIsInterruptedNotPassed) {
  const Files f;
  // The fake soaks 1 s, says its results, then never says done.
  const auto [code, err] =
      terminated_run(f, "soakhang", {"--soak", "1", "--soak-modes", "bf16"}, 2500ms);
  ASSERT_EQ(code, 5) << err;
  EXPECT_EQ(labels_of(read_all(f.nfd)).at("gpu.soak"), "interrupted") << read_all(f.nfd);
  const json r = json::parse(read_all(f.json));
  const json& bf16 = r.at("devices").at(0).at("soak").at("modes").at("bf16");
  EXPECT_NE(bf16.dump().find("interrupted"), std::string::npos) << bf16.dump();
}

// --soak whose modes this GPU does not run soaks nothing: the node's soak label is not `passed`.
TEST(NodeFacing, ASoakThatSoakedNothingIsNotLabelledPassed) {
  const auto nothing = run_probe_binary({"--format", "nfd", "--soak", "1", "--soak-modes", "mxfp8"},
                                        fake_driver_env(kFakeH200));
  EXPECT_EQ(labels_of(nothing.out).at("gpu.soak"), "not_tested") << nothing.out;
  const auto soaked = run_probe_binary({"--format", "nfd", "--soak", "1", "--soak-modes", "bf16"},
                                       fake_driver_env(kFakeH200));
  EXPECT_EQ(soaked.exit_code, 0) << soaked.err;
  EXPECT_EQ(labels_of(soaked.out).at("gpu.soak"), "passed") << soaked.out;
}
