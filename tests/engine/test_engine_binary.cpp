// The real engine executable as the probe runs it, on a machine without a GPU: the early CUDA
// context made against the fake driver (tests/cli/fake_driver.cpp), kept or given up.

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

#include "probe/platform/process.hpp"

namespace pp = precision_probe;

namespace {

const char* kH200 = "NVIDIA H200:9.0:132:141";
const char* kFakeUuid = "GPU-00000fa0-1111-2222-3333-444400000000";  // the fake's GPU 0
const std::string kMadeOnFakeGpu = std::string("early context: context ready on ") + kFakeUuid;

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

pp::ProcessOutput run_worker(const std::vector<std::string>& args, const std::string& plan,
                             const std::string& gpus) {
  std::vector<std::string> argv = {PP_REAL_ENGINE};
  argv.insert(argv.end(), args.begin(), args.end());
  return pp::run_process(
      argv,
      pp::environment_with({"PRECISION_PROBE_TRACE=1", "PRECISION_PROBE_LIBCUDA=" PP_FAKE_DRIVER,
                            "FAKE_NVIDIA_GPUS=" + gpus, "CUDA_INJECTION64_PATH"}),
      plan, std::chrono::seconds(120));
}

const std::string kCpuPlan =
    R"({"protocol":2,"kind":"cpu","index":-1,"smoke":["fp32"],"amp":[],"seed":1})";

}  // namespace

TEST(EngineBinary, AWorkerWhoseEarlyContextIsNotItsPlansStartsAfreshAndRuns) {
  // The context was made on the one (fake) GPU; the plan is the CPU's: the worker starts itself
  // again without it, and the fresh worker runs the plan from start to end.
  const pp::ProcessOutput r = run_worker({"--worker", "--early-context"}, kCpuPlan, kH200);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(kMadeOnFakeGpu), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("restarting without it"), std::string::npos) << r.err;
  EXPECT_EQ(count(r.err, " main\n"), 2) << r.err;
  EXPECT_NE(r.out.find(R"("mode":"fp32")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("ok":true)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"({"type":"done"})"), std::string::npos) << r.out;
}

TEST(EngineBinary, AnEarlyContextOnSeveralGpusIsNotMadeAndTheWorkerStartsAfresh) {
  const pp::ProcessOutput r =
      run_worker({"--worker", "--early-context"}, kCpuPlan, std::string(kH200) + ";" + kH200);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("early context: none (2 devices visible, not one)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("restarting without it"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find(R"({"type":"done"})"), std::string::npos) << r.out;
}

TEST(EngineBinary, APlanForTheEarlyContextsGpuKeepsIt) {
  const std::string plan = std::string(R"({"protocol":2,"kind":"cuda","index":0,)") +
                           R"("cuda_visible_devices":")" + kFakeUuid +
                           R"(","smoke":[],"amp":[],"seed":1})";
  const pp::ProcessOutput r = run_worker({"--worker", "--early-context"}, plan, kH200);
  EXPECT_NE(r.err.find(kMadeOnFakeGpu), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("restarting"), std::string::npos) << r.err;
  EXPECT_EQ(count(r.err, " main\n"), 1) << r.err;
  EXPECT_NE(r.out.find(R"({"type":"done"})"), std::string::npos) << r.out;
}

TEST(EngineBinary, WithoutTheFlagNoContextIsBegun) {
  const pp::ProcessOutput r = run_worker({"--worker"}, kCpuPlan, kH200);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("early context"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find(R"({"type":"done"})"), std::string::npos) << r.out;
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
  const std::string plan =
      R"({"protocol":2,"kind":"cpu","index":-1,"smoke":[],"amp":["amp_fp16","amp_bf16"],"seed":1})";
  const pp::ProcessOutput r = run_worker({"--worker"}, plan, "");
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
