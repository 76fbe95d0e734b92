// The real engine executable as the probe runs it, on a machine without a GPU (the fake driver,
// tests/cli/fake_driver.cpp, stands in for libcuda).

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/protocol.hpp"
#include "probe/platform/process.hpp"

namespace pp = precision_probe;

namespace {

pp::ProcessOutput run_worker(const std::vector<std::string>& args, const pp::WorkerPlan& plan,
                             const std::string& gpus) {
  std::vector<std::string> argv = {PP_REAL_ENGINE};
  argv.insert(argv.end(), args.begin(), args.end());
  return pp::run_process(
      argv,
      pp::environment_with({"PRECISION_PROBE_TRACE=1", "PRECISION_PROBE_LIBCUDA=" PP_FAKE_DRIVER,
                            "FAKE_NVIDIA_GPUS=" + gpus, "CUDA_INJECTION64_PATH"}),
      pp::encode_plan(plan), std::chrono::seconds(120));
}

pp::WorkerPlan cpu_plan(std::vector<pp::Mode> smoke, std::vector<pp::Mode> amp) {
  pp::WorkerPlan plan;
  plan.smoke = std::move(smoke);
  plan.amp = std::move(amp);
  plan.seed = 1;
  return plan;
}

}  // namespace

// What the real engine sends, the probe reads back whole: every line is one the protocol accepts,
// and every check of the plan is answered, each judged by the probe as the engine judged it.
TEST(EngineBinary, EveryLineTheEngineSendsTheProbeReads) {
  const pp::ProcessOutput r = run_worker(
      {"--worker"}, cpu_plan({pp::Mode::fp32, pp::Mode::bf16}, {pp::Mode::amp_bf16}), "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  pp::WorkerResult result;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    const pp::Expected<void> applied = pp::apply_result_line(line, result);
    EXPECT_TRUE(applied) << line << ": " << applied.error();
  }
  EXPECT_TRUE(result.finished);
  ASSERT_TRUE(result.stack.has_value());
  EXPECT_TRUE(result.stack->available);
  ASSERT_EQ(result.smoke.count(pp::Mode::fp32), 1U);
  EXPECT_TRUE(result.smoke.at(pp::Mode::fp32).ok) << result.smoke.at(pp::Mode::fp32).error;
  EXPECT_EQ(result.smoke.count(pp::Mode::bf16), 1U);
  ASSERT_EQ(result.amp.count(pp::Mode::amp_bf16), 1U);
  const pp::AmpOutcome& amp = result.amp.at(pp::Mode::amp_bf16);
  // LibTorch 1.13's CPU autocast may refuse bf16 layer norm; a run that ran is judged, not taken.
  if (amp.ran) {
    EXPECT_TRUE(amp.ok) << amp.error;
  }
}

TEST(EngineBinary, APlanOfAnotherProtocolIsRefused) {
  const pp::ProcessOutput r = pp::run_process(
      {PP_REAL_ENGINE, "--worker"}, pp::environment_with({}),
      R"({"protocol":2,"kind":"cpu","index":-1,"smoke":["fp32"],"amp":[],"seed":1})",
      std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("protocol version mismatch"), std::string::npos) << r.err;
}

TEST(EngineBinary, AnEngineThatCannotLoadLibTorchIsTheEnvironmentNotACrash) {
  // A memory limit (ulimit -v) leaves room for the probe but not for LibTorch's libraries: the
  // loader fails before main(). The probe says so, and a requirement that needed it exits 3.
  const pp::ProcessOutput out = pp::run_process(
      {"/bin/sh", "-c", "ulimit -v 150000; exec \"$0\" --device cpu --require fp32 --no-amp",
       PP_BINARY},
      pp::environment_with({"PRECISION_PROBE_ENGINE=" PP_REAL_ENGINE,
                            "PRECISION_PROBE_LIBCUDA=libcuda-not-here.so.1",
                            "PRECISION_PROBE_LIBNVML=libnvidia-ml-not-here.so.1"}),
      "", std::chrono::seconds(60));
  EXPECT_EQ(out.exit_code, 3) << out.out << out.err;
  EXPECT_NE(out.out.find("could not load its"), std::string::npos) << out.out;
  EXPECT_EQ(out.out.find("crashed"), std::string::npos) << out.out;
}

TEST(EngineBinary, ATrainingModeLibTorchRefusesCostsNoTrainingRun) {
  // Each AMP mode this LibTorch's CPU autocast refuses (1.13: fp16 at all, bf16 in layer_norm) is
  // answered without its fp32 reference run; a mode it admits gets its runs. Counted in the trace.
  const pp::ProcessOutput r =
      run_worker({"--worker"}, cpu_plan({}, {pp::Mode::amp_fp16, pp::Mode::amp_bf16}), "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int answered = 0;
  int admitted = 0;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.at("type") != "amp") continue;
    ++answered;
    admitted += j.at("ran").get<bool>() ? 1 : 0;
  }
  EXPECT_EQ(answered, 2) << r.out;
  // Every admitted mode runs itself and an fp32 reference (fp16's skips the steps its scaler
  // skipped: "training fp32, skipping like fp16"); a refused one runs neither.
  auto started = [&r](const std::string& run) {
    int n = 0;
    std::istringstream trace(r.err);
    std::string entry;
    while (std::getline(trace, entry)) {
      n += entry.find(run) != std::string::npos && entry.find(": started") != std::string::npos;
    }
    return n;
  };
  EXPECT_EQ(started("training fp32"), admitted) << r.out << r.err;
  EXPECT_EQ(started("training fp16") + started("training bf16"), admitted) << r.err;
}

namespace {

// The children of a process, as /proc shows them.
std::vector<int> children_of(int parent) {
  std::vector<int> children;
  const pp::ProcessOutput ls =
      pp::run_process({"/bin/ls", "/proc"}, pp::environment_with({}), "", std::chrono::seconds(5));
  std::istringstream names(ls.out);
  for (std::string name; std::getline(names, name);) {
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in("/proc/" + name + "/stat");
    const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    std::string state;
    int ppid = 0;
    fields >> state >> ppid;
    if (ppid == parent && state != "Z") children.push_back(std::stoi(name));
  }
  return children;
}

bool alive(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t paren = stat.rfind(')');
  return paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] != 'Z';
}

}  // namespace

TEST(EngineBinary, AWorkerDoesNotOutliveAProbeKilledWithSigkill) {
  // A long CPU benchmark keeps the real worker busy; the probe is then killed outright, and the
  // worker must go with it (PR_SET_PDEATHSIG), not compute on.
  pp::ChildProcess probe;
  std::string error;
  ASSERT_TRUE(probe.start(
      {PP_BINARY, "--device", "cpu", "--bench", "--bench-size", "8192", "--no-amp", "-q"},
      pp::environment_with({"PRECISION_PROBE_ENGINE=" PP_REAL_ENGINE,
                            "PRECISION_PROBE_LIBCUDA=libcuda-not-here.so.1",
                            "PRECISION_PROBE_LIBNVML=libnvidia-ml-not-here.so.1"}),
      "", error))
      << error;
  std::vector<int> workers;
  for (int i = 0; i < 200 && workers.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    workers = children_of(probe.pid());
  }
  ASSERT_FALSE(workers.empty()) << "no worker was started";
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // into its checks
  ASSERT_EQ(::kill(probe.pid(), SIGKILL), 0);
  probe.wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  for (int pid : workers) EXPECT_FALSE(alive(pid)) << "worker " << pid << " outlived the probe";
}

namespace {

// The probe with the real engine, no driver: the CPU's checks only.
pp::ProcessOutput probe_on_the_cpu(const std::vector<std::string>& args,
                                   const std::string& inject) {
  std::vector<std::string> argv = {PP_BINARY, "--device", "cpu", "--no-amp", "--format", "json"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = {"PRECISION_PROBE_ENGINE=" PP_REAL_ENGINE,
                                  "PRECISION_PROBE_LIBCUDA=libcuda-not-here.so.1",
                                  "PRECISION_PROBE_LIBNVML=libnvidia-ml-not-here.so.1"};
  if (!inject.empty()) env.push_back("PRECISION_PROBE_INJECT_FAULT=" + inject);
  return pp::run_process(argv, pp::environment_with(env), "", std::chrono::seconds(120));
}

bool has_code(const nlohmann::json& report, const std::string& code) {
  for (const auto& d : report.at("diagnostics")) {
    if (d.at("code") == code) return true;
  }
  return false;
}

}  // namespace

// --soak through the real binary and the real engine on the CPU: every result bit-identical to
// the golden one; an injected fault caught (exit 4, the mode failed, the diagnostics); a fault
// aimed at another device leaves this one alone.
TEST(EngineBinary, TheSoakComparesEveryResultAndCatchesAnInjectedFault) {
  const pp::ProcessOutput clean = probe_on_the_cpu({"--soak", "1", "--soak-modes", "fp32"}, "");
  ASSERT_EQ(clean.exit_code, 0) << clean.err << clean.out;
  const nlohmann::json c = nlohmann::json::parse(clean.out);
  const nlohmann::json& fp32 = c.at("devices").back().at("soak").at("modes").at("fp32");
  EXPECT_TRUE(fp32.at("ok").get<bool>());
  EXPECT_GT(fp32.at("iterations").get<int>(), 20);
  EXPECT_EQ(fp32.at("mismatches"), 0);
  EXPECT_GE(fp32.at("full_compares").get<int>(), 1);
  EXPECT_EQ(fp32.at("golden_checksum").get<std::string>().size(), 16U);
  EXPECT_FALSE(has_code(c, "silent-data-corruption"));

  const pp::ProcessOutput hit =
      probe_on_the_cpu({"--soak", "1", "--soak-modes", "fp32"}, "fp32:20:cpu");
  ASSERT_EQ(hit.exit_code, 4) << hit.err << hit.out;
  const nlohmann::json h = nlohmann::json::parse(hit.out);
  const nlohmann::json& cpu = h.at("devices").back();
  const nlohmann::json& o = cpu.at("soak").at("modes").at("fp32");
  EXPECT_EQ(o.at("mismatches"), 1);
  EXPECT_EQ(o.at("first_mismatch").at("iteration"), 20);
  EXPECT_EQ(o.at("first_mismatch").at("elements"), 1);
  EXPECT_TRUE(o.at("injected").get<bool>());
  EXPECT_TRUE(cpu.at("soak").at("injected").get<bool>());
  EXPECT_EQ(cpu.at("precisions").at("fp32").at("status"), "failed");
  EXPECT_TRUE(has_code(h, "silent-data-corruption"));
  EXPECT_TRUE(has_code(h, "soak-fault-injected"));

  const pp::ProcessOutput elsewhere =
      probe_on_the_cpu({"--soak", "1", "--soak-modes", "fp32"}, "fp32:20:0");
  EXPECT_EQ(elsewhere.exit_code, 0) << elsewhere.out;
  // A soak shorter than the modes' slices: every mode still gets its share.
  const pp::ProcessOutput short_one = probe_on_the_cpu({"--soak", "0.3"}, "");
  ASSERT_EQ(short_one.exit_code, 0) << short_one.out;
  for (const auto& [key, mode] :
       nlohmann::json::parse(short_one.out).at("devices").back().at("soak").at("modes").items()) {
    if (mode.at("error_kind") == "not_run") continue;  // its smoke test did not pass here
    EXPECT_TRUE(mode.at("ran").get<bool>()) << key << ": " << mode.dump();
    EXPECT_GT(mode.at("iterations").get<int>(), 0) << key;
  }
  const pp::ProcessOutput bad = probe_on_the_cpu({"--soak", "1"}, "fp32");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(nlohmann::json::parse(bad.out).at("error").at("message").get<std::string>().find(
                "PRECISION_PROBE_INJECT_FAULT"),
            std::string::npos)
      << bad.out;
}

// The modes share the soak equally, in rounds of one slice each (docs/soak.md): 2.5 s of two
// modes on the CPU are three rounds of 0.42 s slices, 1.25 s each, not 1.5 s and 1.0 s.
TEST(EngineBinary, EveryModeSoaksAnEqualShareOfTheTime) {
  const pp::ProcessOutput run =
      probe_on_the_cpu({"--soak", "2.5", "--soak-modes", "fp32,bf16"}, "");
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const nlohmann::json modes =
      nlohmann::json::parse(run.out).at("devices").back().at("soak").at("modes");
  ASSERT_EQ(modes.size(), 2U) << modes.dump();
  for (const auto& [key, mode] : modes.items()) {
    ASSERT_TRUE(mode.at("ran").get<bool>()) << key << ": " << mode.dump();
    EXPECT_NEAR(mode.at("seconds").get<double>(), 1.25, 0.15) << key;
  }
}

// SIGINT ends a soak early: a complete report of what ran (exit 5), or exit 4 when a mismatch
// was already found: corruption is never hidden behind an interrupt.
TEST(EngineBinary, AnInterruptedSoakReportsWhatRanAndKeepsACorruptionAtFour) {
  for (const std::string inject : {"", "fp32:10:cpu"}) {
    std::vector<std::string> env = {"PRECISION_PROBE_ENGINE=" PP_REAL_ENGINE,
                                    "PRECISION_PROBE_LIBCUDA=libcuda-not-here.so.1",
                                    "PRECISION_PROBE_LIBNVML=libnvidia-ml-not-here.so.1"};
    if (!inject.empty()) env.push_back("PRECISION_PROBE_INJECT_FAULT=" + inject);
    pp::ChildProcess probe;
    std::string error;
    ASSERT_TRUE(probe.start({PP_BINARY, "--device", "cpu", "--no-amp", "--soak", "30",
                             "--soak-modes", "fp32", "--format", "json"},
                            pp::environment_with(env), "", error))
        << error;
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    ::kill(probe.pid(), SIGINT);
    std::string out;
    for (int i = 0; i < 300 && probe.running(); ++i) {
      pp::drain_available(probe.stdout_fd(), out, std::size_t{1} << 22);
      if (probe.wait_for(std::chrono::milliseconds(50))) break;
    }
    pp::drain_available(probe.stdout_fd(), out, std::size_t{1} << 22);
    ASSERT_FALSE(probe.running()) << "the probe did not end after SIGINT";
    const int code = WIFEXITED(probe.status()) ? WEXITSTATUS(probe.status()) : -1;
    const nlohmann::json j = nlohmann::json::parse(out);
    EXPECT_NE(j.at("exit_reason").get<std::string>().find(inject.empty() ? "SIGINT" : "silent"),
              std::string::npos)
        << j.at("exit_reason");
    const nlohmann::json& fp32 = j.at("devices").back().at("soak").at("modes").at("fp32");
    EXPECT_GT(fp32.at("iterations").get<int>(), 10) << fp32.dump();
    EXPECT_EQ(code, inject.empty() ? 5 : 4) << j.at("exit_reason");
  }
}
