// One LibTorch per run (issue 39): every device's plan in one engine session, the GPUs' tf32 in a
// second; a GPU whose checks crash or hang costs only its own verdicts, the others' arrive, and no
// process outlives the probe. Against the fake driver (eight H200s) and the fake engine, which
// runs a session's plans at once as the real one does (a hang is its plan's thread, a crash its
// whole process).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "binary.hpp"
#include "strings/strings.hpp"
#include "wire/engine_settings.hpp"

namespace pp = precision_probe;
using nlohmann::json;
using pp::testing::fake_driver_env;
using pp::testing::kFakeH200;
using pp::testing::read_all;
using pp::testing::run_probe_binary;
using pp::testing::with;

namespace {

std::string gpus(int count) {
  std::vector<std::string> each(static_cast<std::size_t>(count), kFakeH200);
  return pp::join(each, ";");
}

std::vector<std::string> lines_of(const std::string& file) {
  std::vector<std::string> lines = pp::split(read_all(file), '\n');
  lines.erase(std::remove(lines.begin(), lines.end(), ""), lines.end());
  return lines;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Each GPU's statuses, by status.
std::map<std::string, int> statuses_of(const json& device) {
  std::map<std::string, int> by;
  for (const auto& [mode, p] : device.at("precisions").items()) ++by[p.at("status")];
  return by;
}

}  // namespace

// Eight GPUs: one session of LibTorch's CUDA library, as for one GPU (the trace says each load);
// every GPU plan, tf32 included, in it. (The CPU's plan starts before the GPUs are known: on a
// machine whose /dev has no NVIDIA device node, in a session of LibTorch's CPU library; where the
// nodes show GPUs, in the GPU session: the unit test ProcessEngine.EveryPlanOfARunInOneSession
// holds that.)
TEST(Sessions, EightGpusLoadLibTorchsCudaLibraryOnceAsOneGpuDoes) {
  const std::string dir = pp::testing::make_temp_dir();
  const auto r = run_probe_binary(
      {"--format", "json"}, with(fake_driver_env(gpus(8)),
                                 {"FAKE_ENGINE_SESSIONS=" + dir + "/sessions",
                                  "FAKE_ENGINE_LOG=" + dir + "/plans", "PRECISION_PROBE_TRACE=1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string sessions = read_all(dir + "/sessions");
  EXPECT_EQ(count_of(sessions, "cuda --worker gpu --libtorch"), 1U) << sessions;
  EXPECT_EQ(count_of(sessions, "--worker"), count_of(r.err, "engine session started")) << r.err;
  const std::string plans = read_all(dir + "/plans");
  EXPECT_EQ(count_of(plans, "cuda --worker gpu"), 8U) << plans;  // 8 GPUs' checks
  EXPECT_EQ(count_of(plans, "tf32=1"), 0U) << plans;
  const std::string one_dir = pp::testing::make_temp_dir();
  const auto one = run_probe_binary(
      {"-q"}, with(fake_driver_env(kFakeH200), {"FAKE_ENGINE_SESSIONS=" + one_dir + "/sessions"}));
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(count_of(read_all(one_dir + "/sessions"), "--worker"), count_of(sessions, "--worker"));
  const json j = json::parse(r.out);
  for (const json& d : j.at("devices")) {
    EXPECT_EQ(d.at("precisions").at("fp32").at("status"), "native") << d.at("name");
  }
  // The CPU alone: one session, of LibTorch's CPU library.
  const std::string cpu_dir = pp::testing::make_temp_dir();
  const auto cpu = run_probe_binary({"--device", "cpu", "-q"},
                                    {"FAKE_ENGINE_SESSIONS=" + cpu_dir + "/sessions"});
  EXPECT_EQ(cpu.exit_code, 0) << cpu.err;
  const std::vector<std::string> cpu_sessions = lines_of(cpu_dir + "/sessions");
  ASSERT_EQ(cpu_sessions.size(), 1U);
  EXPECT_NE(cpu_sessions[0].find("cpu --worker cpu --libtorch"), std::string::npos);
}

// The GPU session sends cuInit's answer (protocol 8), so the driver's agent never starts the driver
// a second time: the report's driver and GPUs are the session's answer, and the same as the
// agent's, which is asked where no session answered (here once the GPUs' checks are done). An
// answer that is malformed breaks its session as any malformed line does (the engine is broken: its
// GPU's checks fail and say why), and the agent answers for the driver.
TEST(Sessions, TheGpuSessionAnswersForCuInitSoTheDriverStartsOnceARun) {
  const auto run = [](const std::string& patch) {
    std::vector<std::string> env = with(fake_driver_env(gpus(8)), {"PRECISION_PROBE_TRACE=1"});
    if (!patch.empty()) env.push_back("FAKE_ENGINE_PATCH=" + patch);
    return run_probe_binary({"--format", "json"}, env);
  };
  // What the report says of the driver and the GPUs, without the timings.
  const auto facts = [](const json& j) {
    json f = {{"driver", j.at("driver")}, {"gpus", json::array()}};
    for (const json& d : j.at("devices")) {
      if (d.at("kind") == "cuda") f["gpus"].push_back(d.at("gpu"));
    }
    return f;
  };
  const auto answered = run("");
  ASSERT_EQ(answered.exit_code, 0) << answered.err;
  EXPECT_EQ(count_of(answered.err, "cuInit answered by the engine's GPU session"), 1U)
      << answered.err;
  EXPECT_EQ(count_of(answered.err, "the driver's agent"), 0U) << answered.err;
  const json a = json::parse(answered.out);
  EXPECT_TRUE(a.at("driver").at("cuda_queried").get<bool>());
  const json seen = facts(a);  // kept: a loop over a temporary's member would outlive it
  ASSERT_EQ(seen.at("gpus").size(), 8U);
  for (const json& g : seen.at("gpus")) EXPECT_EQ(g.at("source"), "cuda+nvml") << g;

  const auto silent = run(R"({"cuda":null})");
  ASSERT_EQ(silent.exit_code, 0) << silent.err;
  EXPECT_EQ(count_of(silent.err, "the engine's GPU session did not answer for cuInit"), 1U)
      << silent.err;
  EXPECT_EQ(count_of(silent.err, "cuInit done (the driver's agent)"), 1U) << silent.err;
  EXPECT_EQ(facts(json::parse(silent.out)), facts(a));

  const auto garbage = run(R"({"cuda":{"snapshot":{"devices":"x"}}})");
  EXPECT_EQ(garbage.exit_code, 4) << garbage.err;
  const json g = json::parse(garbage.out);
  EXPECT_EQ(facts(g).at("driver"), facts(a).at("driver"));
  const json& gpu0 = g.at("devices").at(0);
  EXPECT_EQ(gpu0.at("precisions").at("fp32").at("status"), "failed");
  const std::string why = gpu0.at("precisions").at("fp32").at("reason");
  EXPECT_NE(why.find("malformed"), std::string::npos) << why;
  EXPECT_NE(why.find("snapshot"), std::string::npos) << why;
}

// Only the shared session's answer is the probe's: an isolated session sees its plan's GPU alone
// (CUDA_VISIBLE_DEVICES). Here the shared session sends none and crashes with GPU 1's checks,
// and the isolated sessions that run its plans again each send theirs, of one GPU: the report
// still has both GPUs from CUDA, from the driver's agent.
TEST(Sessions, AnIsolatedSessionsCuInitAnswerIsNotTheRuns) {
  const auto r = run_probe_binary(
      {"--format", "json"},
      with(fake_driver_env(gpus(2)),
           {"FAKE_ENGINE=crash", "FAKE_ENGINE_ON=gpu:1", "FAKE_ENGINE_CUDA=isolated",
            "CUDA_VISIBLE_DEVICES", "PRECISION_PROBE_TRACE=1"}));
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("engine session started (GPU, isolated)"), std::string::npos) << r.err;
  EXPECT_EQ(count_of(r.err, "cuInit done (the driver's agent)"), 1U) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("driver").at("message"), "2 GPU(s) visible to CUDA") << j.at("driver");
  int gpus_seen = 0;
  for (const json& d : j.at("devices")) {
    if (d.at("kind") != "cuda") continue;
    ++gpus_seen;
    EXPECT_EQ(d.at("gpu").at("source"), "cuda+nvml") << d.at("gpu");
  }
  EXPECT_EQ(gpus_seen, 2);
}

// The run's diagnostics of `code`.
std::vector<json> diagnostics_of(const json& report, const std::string& code) {
  std::vector<json> found;
  for (const json& d : report.at("diagnostics")) {
    if (d.at("code") == code) found.push_back(d);
  }
  return found;
}

// GPU 3's checks crash their process: the session's other plans run again in isolated sessions
// and pass; GPU 3's, run again alone, crash again, so the crash is its own (exit 4).
TEST(Sessions, AGpuWhoseChecksCrashCostsOnlyItsOwnVerdicts) {
  const std::string dir = pp::testing::make_temp_dir();
  const auto r = run_probe_binary(
      {"--format", "json"},
      with(fake_driver_env(gpus(8)),
           {"FAKE_ENGINE=crash", "FAKE_ENGINE_ON=gpu:3", "FAKE_ENGINE_PIDS=" + dir + "/pids"}));
  EXPECT_EQ(r.exit_code, 4) << r.err;
  const json j = json::parse(r.out);
  for (const json& d : j.at("devices")) {
    if (d.at("kind") != "cuda") continue;
    const auto by = statuses_of(d);
    if (d.at("index") == 3) {
      // It answers a check, then crashes: each check it answered stands, the next one's crash
      // is said, in isolation.
      EXPECT_GE(by.count("failed") ? by.at("failed") : 0, 1) << d;
      const json& bf16 = d.at("precisions").at("bf16");
      EXPECT_EQ(bf16.at("status"), "failed");
      EXPECT_NE(bf16.at("reason").get<std::string>().find("crashed (SIGSEGV)"), std::string::npos)
          << bf16;
    } else {
      EXPECT_EQ(by.count("failed"), 0U) << d.at("name") << " " << d.at("index");
      EXPECT_EQ(d.at("precisions").at("bf16").at("status"), "native");
    }
  }
  // The loss is said, as GPU 3's own: it crashed again alone (info: its failure is the error).
  const std::vector<json> lost = diagnostics_of(j, "engine-session-lost");
  ASSERT_EQ(lost.size(), 1U) << j.at("diagnostics");
  EXPECT_EQ(lost[0].at("severity"), "info");
  const std::string message = lost[0].at("message");
  EXPECT_NE(message.find("crashed (SIGSEGV)"), std::string::npos) << message;
  EXPECT_NE(message.find("GPU 3 crashed again alone"), std::string::npos) << message;
  EXPECT_EQ(pp::testing::outliving(dir + "/pids"), std::vector<std::string>{});
}

// The shared session SIGKILLed from outside (as the kernel's OOM killer ends a process) while
// GPU 1's checks run, a fault that does not come again: every plan it left runs again in an
// isolated session and passes (exit 0), and the report says so, a warning naming the signal and
// the devices whose verdicts came from there, so that an engine killed for memory is not unsaid
// (whether the OOM killer did it: ProcessEngine.AKilledSessionSaysWhetherTheOomKillerDidIt).
TEST(Sessions, ASessionKilledFromOutsideRunsAgainAndIsSaid) {
  const std::string dir = pp::testing::make_temp_dir();
  const auto r = run_probe_binary(
      {"--format", "json"},
      with(fake_driver_env(gpus(2)),
           {"FAKE_ENGINE=killed", "FAKE_ENGINE_ON=gpu:1", "FAKE_ENGINE_ONCE=" + dir + "/once",
            "FAKE_ENGINE_PIDS=" + dir + "/pids", "FAKE_ENGINE_SESSIONS=" + dir + "/sessions"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/once")) << "the session was never killed";
  const json j = json::parse(r.out);
  std::vector<std::string> rerun;
  json oom = nullptr;
  for (const json& d : j.at("devices")) {
    EXPECT_EQ(statuses_of(d).count("failed"), 0U) << d;
    if (d.at("kind") == "cuda") {
      EXPECT_EQ(d.at("precisions").at("bf16").at("status"), "native");
    }
    if (!d.contains("engine_rerun")) continue;
    const json& e = d.at("engine_rerun");
    EXPECT_EQ(e.at("signal"), "SIGKILL") << e;
    // Whether the OOM killer did it, as this machine's cgroup says (v1, v2 or none: whatever it
    // says, the why says the same; ProcessEngine.AKilledSessionSaysWhetherTheOomKillerDidIt
    // holds each answer on a cgroup of its own).
    const std::string why = e.at("why");
    oom = e.at("oom_killer");
    const std::string said = oom.is_null() ? "the engine worker was killed (SIGKILL)"
                             : oom == true
                                 ? "the engine worker was killed (SIGKILL) by the kernel's "
                                   "OOM killer ("
                                 : "the engine worker was killed (SIGKILL), not by the "
                                   "OOM killer (";
    EXPECT_EQ(why.substr(0, said.size()), said) << why;
    EXPECT_EQ(e.at("hung_device"), "") << e;
    rerun.push_back(d.at("kind") == "cuda" ? "GPU " + std::to_string(d.at("index").get<int>())
                                           : std::string("CPU"));
  }
  ASSERT_NE(std::find(rerun.begin(), rerun.end(), "GPU 1"), rerun.end()) << r.out;
  // Isolated sessions ran them: more sessions than the shared ones.
  EXPECT_GT(lines_of(dir + "/sessions").size(), 1U);
  const std::vector<json> lost = diagnostics_of(j, "engine-session-lost");
  ASSERT_EQ(lost.size(), 1U) << j.at("diagnostics");
  EXPECT_EQ(lost[0].at("severity"), "warning");
  const std::string message = lost[0].at("message");
  EXPECT_NE(message.find("the checks of " + pp::join(rerun, ", ") + " was lost"), std::string::npos)
      << message;
  const std::string hint = lost[0].at("hint");
  const std::string expected = oom.is_null() ? "OOM killer most often"
                               : oom == true ? "more memory than its cgroup's limit"
                                             : "outside the probe sent SIGKILL";
  EXPECT_NE(hint.find(expected), std::string::npos) << hint;
  bool validator = false;
  const std::string invalid = pp::testing::validate_against_schema(r.out, validator);
  if (validator) {
    EXPECT_EQ(invalid, "") << "engine_rerun against docs/report.schema.json";
  }
  EXPECT_EQ(pp::testing::outliving(dir + "/pids"), std::vector<std::string>{});
}

// GPU 3's first check hangs: past --check-timeout its session is ended, GPU 3's checks are
// failed (timed out) and every other GPU's verdicts arrive, from isolated sessions where the
// shared one could not finish them (exit 5: a hang).
TEST(Sessions, AGpuWhoseCheckHangsCostsOnlyItsOwnVerdicts) {
  const std::string dir = pp::testing::make_temp_dir();
  const auto r = run_probe_binary(
      {"--format", "json", "--check-timeout", "2"},
      with(fake_driver_env(gpus(8)), {"FAKE_ENGINE=stall:fp32", "FAKE_ENGINE_ON=gpu:3",
                                      "FAKE_ENGINE_PIDS=" + dir + "/pids"}));
  EXPECT_EQ(r.exit_code, 5) << r.err;
  const json j = json::parse(r.out);
  for (const json& d : j.at("devices")) {
    if (d.at("kind") != "cuda") continue;
    if (d.at("index") == 3) {
      const json& fp32 = d.at("precisions").at("fp32");
      EXPECT_EQ(fp32.at("status"), "failed");
      EXPECT_EQ(fp32.at("failure"), "timed_out");
    } else {
      EXPECT_EQ(statuses_of(d).count("failed"), 0U) << d.at("index");
      EXPECT_EQ(d.at("precisions").at("bf16").at("status"), "native") << d.at("index");
    }
  }
  EXPECT_EQ(pp::testing::outliving(dir + "/pids"), std::vector<std::string>{});
}

// The bench's switch: GPU 0 planned and reported as N GPUs (each copy's checks in a context of
// their own in the real engine), in the same one CUDA session, so that the cost of N devices is
// measured on one GPU; a count that is not one is refused.
TEST(Sessions, TheBenchPlansGpuZeroAsManyDevices) {
  const std::string dir = pp::testing::make_temp_dir();
  const auto r = run_probe_binary(
      {"--format", "json"},
      with(fake_driver_env(kFakeH200),
           {"PRECISION_PROBE_BENCH_GPU_COPIES=4", "FAKE_ENGINE_SESSIONS=" + dir + "/sessions",
            "FAKE_ENGINE_LOG=" + dir + "/plans"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  std::vector<int> indices;
  for (const json& d : j.at("devices")) {
    if (d.at("kind") != "cuda") continue;
    indices.push_back(d.at("index"));
    EXPECT_EQ(d.at("precisions").at("bf16").at("status"), "native");
  }
  EXPECT_EQ(indices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(count_of(read_all(dir + "/sessions"), "cuda --worker gpu"), 1U);
  EXPECT_EQ(count_of(read_all(dir + "/plans"), "cuda --worker gpu"), 4U);
  for (const char* bad : {"0", "65", "two"}) {
    const auto refused = run_probe_binary(
        {"-q"},
        with(fake_driver_env(kFakeH200), {std::string("PRECISION_PROBE_BENCH_GPU_COPIES=") + bad}));
    EXPECT_EQ(refused.exit_code, 2) << bad;
    EXPECT_NE(refused.err.find("is not a count of copies of GPU 0 from 1 to 64"), std::string::npos)
        << refused.err;
  }
}

// The bench's other switch: the CPU's checks left out (bench/startup.py times the GPUs' checks
// with and without them on a starved CPU). No CPU plan reaches the engine, the CPU is reported
// not_tested with the switch named, the GPUs' verdicts stand; a value but 1, or a run that
// selects the CPU, is refused.
TEST(Sessions, TheBenchCanLeaveTheCpusChecksOut) {
  const std::string dir = pp::testing::make_temp_dir();
  const auto r = run_probe_binary(
      {"--format", "json"},
      with(fake_driver_env(kFakeH200),
           {"PRECISION_PROBE_BENCH_SKIP_CPU=1", "FAKE_ENGINE_LOG=" + dir + "/plans",
            "FAKE_ENGINE_SESSIONS=" + dir + "/sessions"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  bool cpu_seen = false;
  for (const json& d : j.at("devices")) {
    if (d.at("kind") == "cuda") {
      EXPECT_EQ(d.at("precisions").at("bf16").at("status"), "native");
      continue;
    }
    cpu_seen = true;
    for (const json* p : {&d.at("precisions").at("fp32"), &d.at("precisions").at("bf16"),
                          &d.at("amp").at("amp_bf16")}) {
      EXPECT_EQ(p->at("status"), "not_tested") << p->dump();
      EXPECT_NE(p->dump().find("PRECISION_PROBE_BENCH_SKIP_CPU"), std::string::npos) << p->dump();
    }
  }
  EXPECT_TRUE(cpu_seen);
  const std::string plans = read_all(dir + "/plans");
  EXPECT_EQ(count_of(plans, "cuda --worker gpu"), 1U) << plans;
  EXPECT_EQ(count_of(plans, "cpu --worker"), 0U) << plans;
  // Nor is a session of LibTorch's CPU library started ahead for it (this machine's /dev has no
  // NVIDIA node, where the CPU's plan would have one of its own).
  EXPECT_EQ(count_of(read_all(dir + "/sessions"), "--worker cpu"), 0U)
      << read_all(dir + "/sessions");
  // Without the switch the same run plans the CPU: the count above is the switch's doing.
  const std::string dir2 = pp::testing::make_temp_dir();
  const auto with_cpu = run_probe_binary(
      {"-q"}, with(fake_driver_env(kFakeH200), {"FAKE_ENGINE_LOG=" + dir2 + "/plans"}));
  ASSERT_EQ(with_cpu.exit_code, 0) << with_cpu.err;
  EXPECT_EQ(count_of(read_all(dir2 + "/plans"), "cpu --worker"), 1U) << read_all(dir2 + "/plans");
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"-q"}, "yes"},
      {{"-q"}, "0"},
      {{"-q", "--device", "all"}, "1"},
      {{"-q", "--device", "cpu"}, "1"}};
  for (const auto& [args, value] : refused) {
    const auto bad = run_probe_binary(
        args, with(fake_driver_env(kFakeH200), {"PRECISION_PROBE_BENCH_SKIP_CPU=" + value}));
    EXPECT_EQ(bad.exit_code, 2) << value << ' ' << pp::join(args, " ");
    EXPECT_NE(bad.err.find("PRECISION_PROBE_BENCH_SKIP_CPU"), std::string::npos) << bad.err;
  }
}

// The engine's settings for measuring (wire/engine_settings.hpp): every value the table lists runs;
// a value it does not list (a typo the engine would read as its default) is a usage error, exit 2,
// naming the variable and its values, and still one JSON document with --format json.
TEST(Sessions, TheEnginesSettingsTakeOnlyTheirValues) {
  for (const pp::EngineSetting& setting : pp::kEngineSettings) {
    const std::string name(setting.variable);
    for (const std::string& value : pp::split(setting.values, ' ')) {
      const auto r =
          run_probe_binary({"-q"}, with(fake_driver_env(kFakeH200), {name + "=" + value}));
      EXPECT_EQ(r.exit_code, 0) << name << '=' << value << ": " << r.err;
    }
    const auto bad = run_probe_binary(
        {"--format", "json"}, with(fake_driver_env(kFakeH200),
                                   {name + "=" + pp::split(setting.values, ' ').at(0) + "x"}));
    EXPECT_EQ(bad.exit_code, 2) << name;
    const json j = json::parse(bad.out);
    const std::string message = j.at("error").at("message").get<std::string>();
    EXPECT_NE(message.find(name + "='"), std::string::npos) << message;
    EXPECT_NE(message.find(pp::join(pp::split(setting.values, ' '), ", ")), std::string::npos)
        << message;
  }
  // Empty is unset, as the engine reads it.
  const auto empty =
      run_probe_binary({"-q"}, with(fake_driver_env(kFakeH200), {"PRECISION_PROBE_ENGINE_WAIT="}));
  EXPECT_EQ(empty.exit_code, 0) << empty.err;
}
