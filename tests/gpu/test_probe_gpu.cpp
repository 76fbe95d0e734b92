// The whole binary on a real GPU, with the real driver and engine. Label "gpu".

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "binary.hpp"
#include "wire/protocol.hpp"
#include "process/process.hpp"

namespace pp = precision_probe;
using nlohmann::json;

namespace {

// The image's PyTorch these tests mean: the release ctest names (PP_TEST_TORCH, a site-packages
// holding torch/; ./dev gpu-test names python3's), "" where it names none.
std::string test_site() {
  const char* site = std::getenv("PP_TEST_TORCH");  // NOLINT(concurrency-mt-unsafe)
  return site != nullptr ? site : "";
}

// Skips the test (GTEST_SKIP returns from it) where no LibTorch release is named.
#define PP_REQUIRE_TEST_TORCH()                                                                    \
  do {                                                                                             \
    if (test_site().empty())                                                                       \
      GTEST_SKIP() << "no LibTorch release named (PP_TEST_TORCH; ./dev gpu-test names python3's)"; \
  } while (false)

std::vector<std::string> real_env(std::vector<std::string> more = {}) {
  std::vector<std::string> env = {"PRECISION_PROBE_ENGINE=" PP_REAL_ENGINE,
                                  "PRECISION_PROBE_TORCH=" + test_site() + "/torch",
                                  "PRECISION_PROBE_LIBCUDA", "PRECISION_PROBE_LIBNVML"};
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

json probe_json(const std::vector<std::string>& args, int& exit_code,
                std::vector<std::string> env = {}) {
  std::vector<std::string> all = {"--format", "json"};
  all.insert(all.end(), args.begin(), args.end());
  const auto r = pp::testing::run_probe_binary(all, real_env(std::move(env)), 120);
  exit_code = r.exit_code;
  return json::parse(r.out);
}

int major_of(const std::string& cc) { return std::stoi(cc.substr(0, cc.find('.'))); }

// How many of the engine's "plan N done" trace lines `trace` holds (the probe's own say "(GPU i)").
int engine_plans_done(const std::string& trace) {
  int done = 0;
  std::istringstream lines(trace);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t plan = line.find("  plan ");
    if (line.find("precision-probe-engine") != std::string::npos && plan != std::string::npos &&
        line.size() >= 5 && line.compare(line.size() - 5, 5, " done") == 0) {
      ++done;
    }
  }
  return done;
}

}  // namespace

TEST(ProbeGpu, EveryVisibleGpuIsProbedForReal) {
  PP_REQUIRE_TEST_TORCH();
  int code = 0;
  const json j = probe_json({}, code);
  if (j.at("driver").at("status") != "ok")
    GTEST_SKIP() << "no GPU: " << j.at("driver").at("message");
  EXPECT_EQ(code, 0) << j.dump(2);
  for (const json& d : j.at("devices")) {
    if (d.at("kind") != "cuda") continue;
    const std::string cc = d.at("gpu").at("compute_capability");
    const json& p = d.at("precisions");
    EXPECT_EQ(p.at("fp32").at("status"), "native") << cc;
    EXPECT_TRUE(p.at("fp32").at("smoke").at("ran").get<bool>());
    if (major_of(cc) >= 8) {
      EXPECT_EQ(p.at("bf16").at("status"), "native") << p.at("bf16").dump();
      EXPECT_EQ(p.at("tf32").at("status"), "native") << p.at("tf32").dump();
    }
    EXPECT_EQ(d.at("kernels").at("covered"), true) << d.at("kernels").dump();
  }
  EXPECT_TRUE(j.at("stack").at("cuda_built").get<bool>());
  EXPECT_EQ(j.at("stack").at("library"), test_site() + "/torch/lib/libtorch_cuda.so");
  EXPECT_EQ(j.at("stack").at("load_error"), "");
}

TEST(ProbeGpu, Bf16GateOnARealGpu) {
  PP_REQUIRE_TEST_TORCH();
  int code = 0;
  const json j = probe_json({"--require", "bf16"}, code);
  if (j.at("driver").at("status") != "ok")
    GTEST_SKIP() << "no GPU: " << j.at("driver").at("message");
  const std::string cc = j.at("devices").at(0).at("gpu").at("compute_capability");
  EXPECT_EQ(code, major_of(cc) >= 8 ? 0 : 1);
}

TEST(ProbeGpu, HidingEveryDeviceIsAnEnvironmentProblem) {
  PP_REQUIRE_TEST_TORCH();
  int probe_code = 0;
  const json all = probe_json({"--quick"}, probe_code);
  if (all.at("driver").at("status") != "ok") GTEST_SKIP() << "no GPU";
  int code = 0;
  const json j = probe_json({"--require", "bf16"}, code, {"CUDA_VISIBLE_DEVICES="});
  EXPECT_EQ(code, 3);
  EXPECT_EQ(j.at("driver").at("status"), "no_devices");
}

TEST(ProbeGpu, AnIsolatedSessionRunsOnTheGpuItsPlanNames) {
  // A plan run again in isolation gets a session of its own, started with its GPU alone visible
  // (CUDA_VISIBLE_DEVICES, the plan's UUID) and numbering it 0: a UUID naming no existing GPU
  // must leave it without one, and the real first GPU's must run there (the UUID it reports).
  PP_REQUIRE_TEST_TORCH();
  int probe_code = 0;
  const json facts = probe_json({"--quick"}, probe_code);
  if (facts.at("driver").at("status") != "ok") GTEST_SKIP() << "no GPU";
  const std::string uuid = facts.at("devices").at(0).at("gpu").at("uuid");
  auto run_worker = [](const std::string& visible) {
    pp::WorkerPlan plan;
    plan.kind = pp::DeviceKind::cuda;
    plan.index = 0;
    plan.cuda_visible_devices = visible;
    plan.ordinals = {0};
    plan.smoke = {pp::Mode::fp32};
    plan.seed = 1;
    return pp::run_process({PP_REAL_ENGINE, "--worker", "gpu", "--libtorch",
                            test_site() + "/torch/lib/libtorch_cuda.so"},
                           pp::environment_with({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
                                                 "CUDA_VISIBLE_DEVICES=" + visible}),
                           pp::encode_plan(plan) + "\n", std::chrono::seconds(120));
  };
  const pp::ProcessOutput bogus = run_worker("GPU-00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(bogus.out.find(R"("type":"device")"), std::string::npos) << bogus.out;
  EXPECT_NE(bogus.out.find(R"("ok":false)"), std::string::npos) << bogus.out;
  const pp::ProcessOutput real = run_worker(uuid);
  EXPECT_NE(real.out.find(R"("uuid":")" + uuid + "\""), std::string::npos) << real.out << real.err;
  EXPECT_NE(real.out.find(R"("ok":true)"), std::string::npos) << real.out;
}

// On the real driver, a GPU session's cuInit answer is the driver agent's to the byte (the same
// function reads both, under the same CUDA_VISIBLE_DEVICES), and a full run asks no agent for it.
TEST(ProbeGpu, TheGpuSessionsCuInitAnswerIsTheDriverAgents) {
  PP_REQUIRE_TEST_TORCH();
  const std::vector<std::string> env =
      pp::environment_with({"PRECISION_PROBE_LIBCUDA", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"});
  const pp::ProcessOutput agent =
      pp::run_process({PP_BINARY, "--driver-agent", "cuda"}, env, "", std::chrono::seconds(60));
  ASSERT_EQ(agent.exit_code, 0) << agent.err;
  const pp::Expected<pp::CudaSnapshot> from_agent = pp::decode_cuda_snapshot(agent.out);
  ASSERT_TRUE(from_agent) << agent.out;
  if (from_agent->init_result != 0 || from_agent->devices.empty()) {
    GTEST_SKIP() << "no GPU: cuInit answered " << from_agent->init_error_name;
  }
  // No plan: the session starts its driver, answers, loads LibTorch and ends with its stdin.
  const pp::ProcessOutput session =
      pp::run_process({PP_REAL_ENGINE, "--worker", "gpu", "--libtorch",
                       test_site() + "/torch/lib/libtorch_cuda.so"},
                      env, "", std::chrono::seconds(120));
  const std::size_t nl = session.out.find('\n');
  ASSERT_NE(nl, std::string::npos) << session.out << session.err;
  pp::SessionFacts said;
  const auto applied = pp::apply_engine_line(
      session.out.substr(0, nl), [](int) -> pp::WorkerResult* { return nullptr; }, said);
  ASSERT_TRUE(applied) << applied.error();
  ASSERT_TRUE(said.cuda.has_value()) << session.out;
  EXPECT_EQ(pp::encode_cuda_snapshot(*said.cuda), pp::encode_cuda_snapshot(*from_agent));
  const auto run = pp::testing::run_probe_binary({"--format", "json"},
                                                 real_env({"PRECISION_PROBE_TRACE=1"}), 120);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("cuInit answered by the engine's GPU session"), std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("the driver's agent"), std::string::npos) << run.err;
}

// Every way a GPU worker may start (docs/engine.md: the order of cuInit and LibTorch's dlopen, the
// preloading of kernels) gives the same verdicts on GPU 0, every check run and passed.
TEST(ProbeGpu, EveryStartWayGivesTheSameVerdicts) {
  PP_REQUIRE_TEST_TORCH();
  int code = 0;
  const json facts = probe_json({"--quick"}, code);
  if (facts.at("driver").at("status") != "ok") GTEST_SKIP() << "no GPU";
  const std::vector<std::vector<std::string>> ways = {
      {"PRECISION_PROBE_ENGINE_PRELOAD=overlap"},
      {"PRECISION_PROBE_ENGINE_PRELOAD=first"},
      {"PRECISION_PROBE_ENGINE_PRELOAD=none"},
      {"PRECISION_PROBE_ENGINE_START=overlap", "PRECISION_PROBE_ENGINE_DLOPEN=now"},
      {"PRECISION_PROBE_ENGINE_START=cuinit-beside"}};
  json first;
  for (const std::vector<std::string>& way : ways) {
    const json j = probe_json({"--device", "0", "--seed", "3"}, code, way);
    const std::string name = way.front();
    ASSERT_EQ(code, 0) << name << ": " << j.at("exit_reason");
    const json& gpu0 = j.at("devices").at(0);
    json verdicts;
    for (const auto& [mode, p] : gpu0.at("precisions").items()) {
      verdicts[mode] = p.at("status");
      if (p.at("status") == "native") {
        EXPECT_TRUE(p.at("smoke").at("ok").get<bool>()) << name << " " << mode << p.dump();
      }
    }
    for (const auto& [mode, a] : gpu0.at("amp").items()) {
      verdicts[mode] = a.at("status");
      EXPECT_TRUE(a.at("ok").get<bool>()) << name << " " << mode << a.dump();
    }
    if (first.is_null()) first = verdicts;
    EXPECT_EQ(verdicts, first) << name;
  }
}

// The CPU's checks after the GPUs' (the way where one CPU is usable) or beside them: the same
// verdicts on GPU 0 and on the CPU, and the trace says the CPU's checks waited.
TEST(ProbeGpu, TheCpusChecksAfterTheGpusGiveTheSameVerdicts) {
  PP_REQUIRE_TEST_TORCH();
  int code = 0;
  const json facts = probe_json({"--quick"}, code);
  if (facts.at("driver").at("status") != "ok") GTEST_SKIP() << "no GPU";
  json first;
  for (const std::string way : {"beside", "after-gpus"}) {
    const auto r = pp::testing::run_probe_binary(
        {"--format", "json", "--device", "0", "--seed", "3"},
        real_env({"PRECISION_PROBE_ENGINE_CPU_CHECKS=" + way, "PRECISION_PROBE_TRACE=1"}), 120);
    ASSERT_EQ(r.exit_code, 0) << way << ": " << r.err;
    const std::size_t waited = r.err.find("the CPU's checks waited");
    EXPECT_EQ(waited != std::string::npos, way == "after-gpus") << way << ": " << r.err;
    if (waited != std::string::npos) {  // the CPU's inputs after the wait
      EXPECT_NE(r.err.find("inputs and references prepared", waited), std::string::npos) << r.err;
    }
    // Where GPU 0's plan ended within the wait's 2 s (on a GPU machine's CPUs it does, unless the
    // machine is busy or cold: then "waited their most"), the wait came after its end.
    if (r.err.find("the CPU's checks waited for 1 GPU plan(s)") != std::string::npos) {
      EXPECT_GE(engine_plans_done(r.err.substr(0, waited)), 1) << r.err;
    }
    json verdicts;
    // Named: a range-for over a member of a temporary dangles (before C++23).
    const json report = json::parse(r.out);
    for (const json& device : report.at("devices")) {
      // Another GPU of the machine is not checked; the CPU is, selected or not.
      if (device.at("kind") == "cuda" && !device.value("selected", true)) continue;
      const std::string name = device.at("kind").get<std::string>() + device.value("name", "");
      for (const auto& [mode, p] : device.at("precisions").items()) {
        verdicts[name][mode] = p.at("status");
      }
      const json amp = device.value("amp", json::object());  // named, as the report above
      for (const auto& [mode, a] : amp.items()) {
        verdicts[name][mode] = a.at("status");
        EXPECT_TRUE(a.at("ok").get<bool>()) << way << " " << name << " " << mode << a.dump();
      }
    }
    ASSERT_EQ(verdicts.size(), 2U) << way << ": the GPU and the CPU";
    if (first.is_null()) first = verdicts;
    EXPECT_EQ(verdicts, first) << way;
  }
}

// --soak on GPU 0: every mode native there soaked, every result bit-identical to its golden one,
// except the one a fault was injected into, which is caught at that result (exit 4).
TEST(ProbeGpu, ASoakOfEveryNativeModeIsBitwiseAndCatchesAnInjectedFault) {
  PP_REQUIRE_TEST_TORCH();
  int probe_code = 0;
  const json facts = probe_json({"--quick"}, probe_code);
  if (facts.at("driver").at("status") != "ok") GTEST_SKIP() << "no GPU";
  int code = 0;
  const json j = probe_json({"--device", "0", "--no-amp", "--soak", "12"}, code,
                            {"PRECISION_PROBE_INJECT_FAULT=bf16:40:0"});
  EXPECT_EQ(code, 4) << j.dump(2);
  const json& gpu = j.at("devices").at(0);
  const json& modes = gpu.at("soak").at("modes");
  EXPECT_GE(modes.size(), 2U);
  for (const auto& [key, o] : modes.items()) {
    SCOPED_TRACE(key + ": " + o.dump());
    EXPECT_TRUE(o.at("ran").get<bool>());
    EXPECT_GT(o.at("iterations").get<int>(), key == "bf16" ? 40 : 2);
    EXPECT_GT(o.at("tflops").get<double>(), 1.0);
    EXPECT_EQ(o.at("mismatches").get<int>(), key == "bf16" ? 1 : 0);
    EXPECT_EQ(o.at("size").get<int>(), 16384);  // GPUs' soak size (docs/soak.md)
  }
  EXPECT_EQ(modes.at("bf16").at("first_mismatch").at("iteration"), 40);
  EXPECT_EQ(modes.at("bf16").at("first_mismatch").at("elements"), 1);
  EXPECT_EQ(gpu.at("precisions").at("bf16").at("status"), "failed");
  EXPECT_EQ(gpu.at("precisions").at("fp16").at("status"), "native");
}
