// The real engine executable as the probe runs it, loading the release ctest names
// (release.hpp), on the CPU: its lines read back by the probe's reader, a library it cannot load,
// its end with the probe, and the whole probe's soak through it.

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/host/cpus.hpp"
#include "strings/strings.hpp"
#include "wire/protocol.hpp"
#include "process/process.hpp"
#include "binary.hpp"
#include "release.hpp"
#include "worker_lines.hpp"

namespace pp = precision_probe;
using pp::testing::cpu_plan;
using pp::testing::read_lines;

namespace {

#define PP_REQUIRE_RELEASE()             \
  if (pp::testing::release() == nullptr) \
  GTEST_SKIP() << "no LibTorch release named (PP_TEST_TORCH): ./dev test fetches them"

pp::ProcessOutput run_worker(const pp::WorkerPlan& plan, const std::string& library,
                             std::vector<std::string> env = {}) {
  // The caller's settings come last: they win over these defaults.
  env.insert(env.begin(), {"PRECISION_PROBE_TRACE=1", "PRECISION_PROBE_LIBCUDA=" PP_FAKE_DRIVER,
                           "FAKE_NVIDIA_GPUS=", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"});
  return pp::run_process({PP_REAL_ENGINE, "--worker", "cpu", "--libtorch", library},
                         pp::environment_with(env), pp::encode_plan(plan) + "\n",
                         std::chrono::seconds(120));
}

// The probe with the real engine and no driver, loading the release: the CPU's checks only.
pp::ProcessOutput probe_on_the_cpu(const std::vector<std::string>& args,
                                   const std::string& inject = "") {
  std::vector<std::string> argv = {PP_BINARY, "--device", "cpu", "--no-amp", "--format", "json"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = {"PRECISION_PROBE_ENGINE=" PP_REAL_ENGINE,
                                  "PRECISION_PROBE_TORCH=" + pp::testing::release()->site,
                                  "PRECISION_PROBE_LIBCUDA=libcuda-not-here.so.1",
                                  "PRECISION_PROBE_LIBNVML=libnvidia-ml-not-here.so.1"};
  if (!inject.empty()) env.push_back("PRECISION_PROBE_INJECT_FAULT=" + inject);
  return pp::run_process(argv, pp::environment_with(env), "", std::chrono::seconds(120));
}

// A cgroup tree of the test's own for PRECISION_PROBE_ENGINE_CGROUP_ROOT: a quota of one CPU, or
// none; v2's file and v1's (a hybrid host keeps the cpu controller in v1).
std::string cgroup_tree(bool one_cpu) {
  const std::string root = pp::testing::make_temp_dir();
  if (::mkdir((root + "/cpu").c_str(), 0755) != 0) {
    ADD_FAILURE() << "mkdir " << root << "/cpu failed";
    return root;
  }
  std::ofstream(root + "/cpu.max") << (one_cpu ? "100000 100000" : "max 100000") << '\n';
  std::ofstream(root + "/cpu/cpu.cfs_quota_us") << (one_cpu ? "100000" : "-1") << '\n';
  std::ofstream(root + "/cpu/cpu.cfs_period_us") << "100000\n";
  return root;
}

bool has_code(const nlohmann::json& report, const std::string& code) {
  for (const auto& d : report.at("diagnostics")) {
    if (d.at("code") == code) return true;
  }
  return false;
}

}  // namespace

// What the real engine sends, the probe reads back whole: every line is one the protocol accepts,
// every check of the plan is answered, and the hello names the library and its release.
TEST(EngineBinary, EveryLineTheEngineSendsTheProbeReads) {
  PP_REQUIRE_RELEASE();
  const pp::testing::Release& r = *pp::testing::release();
  const pp::ProcessOutput out =
      run_worker(cpu_plan({pp::Mode::fp32, pp::Mode::bf16, pp::Mode::int8}, {pp::Mode::amp_bf16}),
                 r.cpu_library());
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const pp::WorkerResult result = read_lines(out.out);
  EXPECT_TRUE(result.finished);
  ASSERT_TRUE(result.stack.has_value());
  EXPECT_TRUE(result.stack->available);
  EXPECT_EQ(result.stack->abi_version, r.version);
  EXPECT_EQ(result.stack->library, r.cpu_library());
  EXPECT_EQ(result.stack->load_error, "");
  for (pp::Mode mode : {pp::Mode::fp32, pp::Mode::bf16, pp::Mode::int8}) {
    ASSERT_TRUE(result.smoke.contains(mode)) << pp::mode_key(mode);
    EXPECT_TRUE(result.smoke.at(mode).ok) << result.smoke.at(mode).error;
  }
  ASSERT_TRUE(result.amp.contains(pp::Mode::amp_bf16));
  EXPECT_TRUE(result.amp.at(pp::Mode::amp_bf16).ok) << result.amp.at(pp::Mode::amp_bf16).error;
}

// Every start-up order and binding (docs/engine.md) gives the same answers.
TEST(EngineBinary, EveryStartOrderAndBindingAnswersAlike) {
  PP_REQUIRE_RELEASE();
  const std::string lib = pp::testing::release()->cpu_library();
  const char* preloads[] = {"first", "none", "overlap"};
  int turn = 0;
  for (const char* order :
       {"overlap", "init-first", "cuinit-beside", "driver-first", "libtorch-first"}) {
    for (const char* binding : {"now", "lazy"}) {
      const char* preload = preloads[turn++ % 3];
      const pp::ProcessOutput out =
          run_worker(cpu_plan({pp::Mode::fp32, pp::Mode::bf16}, {pp::Mode::amp_bf16}), lib,
                     {std::string("PRECISION_PROBE_ENGINE_START=") + order,
                      std::string("PRECISION_PROBE_ENGINE_DLOPEN=") + binding,
                      std::string("PRECISION_PROBE_ENGINE_PRELOAD=") + preload});
      ASSERT_EQ(out.exit_code, 0) << order << " " << binding << ": " << out.err;
      const pp::WorkerResult result = read_lines(out.out);
      EXPECT_TRUE(result.finished) << order << " " << binding;
      EXPECT_TRUE(result.smoke.at(pp::Mode::fp32).ok) << order << " " << binding;
      EXPECT_TRUE(result.smoke.at(pp::Mode::bf16).ok) << order << " " << binding;
      EXPECT_TRUE(result.amp.at(pp::Mode::amp_bf16).ok) << order << " " << binding;
    }
  }
}

// A call LibTorch refuses is an answer, not a crash: the engine binary (its own C++ runtime and
// unwinder linked in) catches what it throws. Row-wise FP8 on CPUs: LibTorch's _scaled_mm takes
// per-tensor scales alone there before 2.15, and row-wise ones too from 2.15.
TEST(EngineBinary, AFailedCallIsAnAnswerWithLibTorchsMessage) {
  PP_REQUIRE_RELEASE();
  const pp::testing::Release& r = *pp::testing::release();
  const pp::ProcessOutput out =
      run_worker(cpu_plan({pp::Mode::fp8_rowwise, pp::Mode::fp32}, {}), r.cpu_library());
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const pp::WorkerResult result = read_lines(out.out);
  EXPECT_TRUE(result.finished);
  ASSERT_TRUE(result.smoke.contains(pp::Mode::fp8_rowwise));
  const pp::SmokeOutcome& rowwise = result.smoke.at(pp::Mode::fp8_rowwise);
  if (r.release >= pp::Version{2, 15}) {
    EXPECT_TRUE(rowwise.ok) << rowwise.error;
  } else {
    EXPECT_FALSE(rowwise.ok);
    EXPECT_NE(rowwise.error.find("only supports per-tensor scaling for CPU"), std::string::npos)
        << rowwise.error;
  }
  EXPECT_TRUE(result.smoke.at(pp::Mode::fp32).ok);  // the next check ran as usual
}

// Under `env -i`, no LD_LIBRARY_PATH and the CUDA toolkit's libraries out of reach of the path:
// the release loads with the CUDA runtime of its own wheels (its RPATH), the one its version.py
// names.
TEST(EngineBinary, TheReleaseLoadsAloneWithItsOwnCudaRuntime) {
  PP_REQUIRE_RELEASE();
  const pp::testing::Release& r = *pp::testing::release();
  const pp::ProcessOutput out = pp::run_process(
      {"/usr/bin/env", "-i", PP_REAL_ENGINE, "--describe", "--libtorch", r.cpu_library()}, {}, "",
      std::chrono::seconds(60));
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const pp::Expected<pp::StackInfo> stack = pp::decode_stack(out.out);
  ASSERT_TRUE(stack) << stack.error();
  EXPECT_EQ(stack->abi_version, r.version);
  std::ifstream in(r.site + "/torch/version.py");
  const std::string version_py((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
  const std::size_t at = version_py.find("cuda: Optional[str] = '");
  ASSERT_NE(at, std::string::npos) << version_py;
  const std::string cuda = version_py.substr(at + 23, version_py.find('\'', at + 23) - at - 23);
  EXPECT_EQ(pp::version_or_empty(stack->cuda_version), cuda)
      << "the CUDA runtime loaded is not the release's own";
}

// A pod's CPU limit is a cgroup quota, which LibTorch never reads: under a quota of one CPU (a
// cgroup tree of the test's own, through PRECISION_PROBE_ENGINE_CGROUP_ROOT, v2's and v1's files)
// the engine's LibTorch runs one CPU thread, unless the environment chose its count. The stack's
// cpu_threads is LibTorch's own count (torch_get_num_threads, 2.10).
TEST(EngineBinary, UnderACpuQuotaLibTorchsPoolIsTheQuotas) {
  PP_REQUIRE_RELEASE();
  const pp::testing::Release& r = *pp::testing::release();
  if (r.release < pp::Version{2, 10}) {
    GTEST_SKIP() << r.version << " has no torch_get_num_threads to report its threads (2.10 on)";
  }
  const std::vector<int> mask = pp::affinity_cpus();
  ASSERT_FALSE(mask.empty());
  if (mask.size() < 2) GTEST_SKIP() << "one CPU in this process's mask: a quota is not the limit";
  const std::string root = cgroup_tree(true);
  const auto threads = [&](const std::string& omp) -> std::optional<int> {
    const pp::ProcessOutput out = pp::run_process(
        {PP_REAL_ENGINE, "--describe", "--libtorch", r.cpu_library()},
        pp::environment_with({"PRECISION_PROBE_ENGINE_CGROUP_ROOT=" + root, omp, "MKL_NUM_THREADS",
                              "OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}),
        "", std::chrono::seconds(60));
    EXPECT_EQ(out.exit_code, 0) << out.err;
    const pp::Expected<pp::StackInfo> stack = pp::decode_stack(out.out);
    if (!stack) return std::nullopt;
    return stack->cpu_threads;
  };
  EXPECT_EQ(threads("OMP_NUM_THREADS"), 1) << "the quota's one CPU";
  EXPECT_EQ(threads("OMP_NUM_THREADS=2"), 2) << "the environment's choice stands";
  // A worker's hello says the same, and its fp32 check runs on that one thread.
  const pp::ProcessOutput out = run_worker(
      cpu_plan({pp::Mode::fp32}, {}), r.cpu_library(),
      {"PRECISION_PROBE_ENGINE_CGROUP_ROOT=" + root, "OMP_NUM_THREADS", "MKL_NUM_THREADS"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const pp::WorkerResult result = read_lines(out.out);
  ASSERT_TRUE(result.stack.has_value());
  EXPECT_EQ(result.stack->cpu_threads, 1);
  EXPECT_TRUE(result.smoke.at(pp::Mode::fp32).ok);
}

// Under a quota below its mask a GPU session keeps every thread to the quota's count of CPUs while
// it runs the CPU's checks (at nice 19 they then give way to its GPUs' on one run queue), and is
// back on the mask once they are done; a plan that measures puts it back on the mask for good. That
// is the default (unset, `quota`, or a value it does not know); PRECISION_PROBE_ENGINE_CPUS=mask
// leaves it on the mask, and a CPU session, or one without a quota, is left alone. The trace says
// where it kept to. No GPU and no library are needed: the plans are answered unavailable.
TEST(EngineBinary, AGpuSessionUnderAQuotaKeepsToTheQuotasCpus) {
  const std::vector<int> mask = pp::affinity_cpus();
  if (mask.size() < 2) GTEST_SKIP() << "one CPU in this process's mask: a quota is not the limit";
  const std::string quota = cgroup_tree(true);
  const std::string none = cgroup_tree(false);
  pp::WorkerPlan gpu = cpu_plan({pp::Mode::fp32}, {});
  gpu.kind = pp::DeviceKind::cuda;
  gpu.index = 0;
  gpu.ordinals = {0};
  gpu.slot = 1;
  pp::WorkerPlan soaks = gpu;
  soaks.slot = 2;
  soaks.soak_seconds = 1.0;
  soaks.soak_modes = {pp::Mode::fp32};
  const std::string cpu_first = pp::encode_plan(cpu_plan({pp::Mode::fp32}, {})) + "\n";
  const auto trace_of = [](const char* kind, const std::string& root, const std::string& cpus,
                           const std::string& plans) {
    const pp::ProcessOutput out = pp::run_process(
        {PP_REAL_ENGINE, "--worker", kind, "--libtorch", "/nonexistent/libtorch_cuda.so"},
        pp::environment_with({"PRECISION_PROBE_TRACE=1",
                              "PRECISION_PROBE_ENGINE_CGROUP_ROOT=" + root,
                              "PRECISION_PROBE_LIBCUDA=" PP_FAKE_DRIVER,
                              "FAKE_NVIDIA_GPUS=", "PRECISION_PROBE_ENGINE_CPUS" + cpus}),
        plans, std::chrono::seconds(60));
    EXPECT_EQ(out.exit_code, 0) << out.err;
    EXPECT_NE(out.err.find("plan 0 done"), std::string::npos) << "traced: " << out.err;
    return out.err;
  };
  const std::string gpu_after_cpu = cpu_first + pp::encode_plan(gpu) + "\n";
  for (const char* setting : {"=quota", "=Quota"}) {
    const std::string trace = trace_of("gpu", quota, setting, gpu_after_cpu);
    EXPECT_NE(trace.find("kept to CPU "), std::string::npos) << setting << ": " << trace;
  }
  const std::string kept = trace_of("gpu", quota, "", gpu_after_cpu);
  const std::size_t at = kept.find("kept to CPU ");
  ASSERT_NE(at, std::string::npos) << kept;
  const std::string said = kept.substr(at, kept.find('\n', at) - at);
  const std::optional<std::int64_t> cpu = pp::parse_int(said.substr(12, said.find(' ', 12) - 12));
  ASSERT_TRUE(cpu.has_value()) << said;
  EXPECT_NE(std::find(mask.begin(), mask.end(), *cpu), mask.end()) << said << ": not in the mask";
  EXPECT_NE(said.find(fmt::format("(a quota of 1 of {} CPUs)", mask.size())), std::string::npos)
      << said;
  const std::size_t back = kept.find("back on every CPU of the mask: the CPU's checks are done");
  ASSERT_NE(back, std::string::npos) << kept;
  EXPECT_LT(at, back);
  EXPECT_LT(kept.find("plan 0 done"), back) << kept;
  const std::string measured =
      trace_of("gpu", quota, "", pp::encode_plan(soaks) + "\n" + cpu_first);
  EXPECT_EQ(measured.find("kept to"), std::string::npos) << "a plan measures: " << measured;
  // A run's usual order: the CPU's plan first, then the one that measures (--soak, --bench).
  const std::string released =
      trace_of("gpu", quota, "", cpu_first + pp::encode_plan(soaks) + "\n");
  const std::size_t kept_at = released.find("kept to CPU ");
  const std::size_t back_at = released.find("back on every CPU of the mask: a plan measures");
  ASSERT_NE(kept_at, std::string::npos) << released;
  ASSERT_NE(back_at, std::string::npos) << released;
  EXPECT_LT(kept_at, back_at);
  EXPECT_EQ(released.find("back on", back_at + 1), std::string::npos)
      << "back on the mask once, for good: " << released;
  EXPECT_EQ(released.find("kept to", back_at), std::string::npos) << released;
  for (const auto& [trace, why] :
       {std::pair(trace_of("gpu", quota, "=mask", cpu_first), "the mask"),
        std::pair(trace_of("cpu", quota, "", cpu_first), "a CPU session"),
        std::pair(trace_of("gpu", none, "", cpu_first), "no quota")}) {
    EXPECT_EQ(trace.find("kept to"), std::string::npos) << why << ": " << trace;
  }
}

// PRECISION_PROBE_ENGINE_WAIT sets how the threads of a GPU's primary context wait for it, before
// the plan's context is retained; the trace says what the driver reports back. Unset (or a value
// it does not know) leaves the driver's own choice. No GPU and no library are needed.
TEST(EngineBinary, AGpusThreadsWaitForItAsTheSettingSays) {
  pp::WorkerPlan gpu = cpu_plan({pp::Mode::fp32}, {});
  gpu.kind = pp::DeviceKind::cuda;
  gpu.index = 0;
  gpu.ordinals = {0};
  const auto trace_of = [&gpu](const std::string& setting) {
    const pp::ProcessOutput out = pp::run_process(
        {PP_REAL_ENGINE, "--worker", "gpu", "--libtorch", "/nonexistent/libtorch_cuda.so"},
        pp::environment_with({"PRECISION_PROBE_TRACE=1", "PRECISION_PROBE_LIBCUDA=" PP_FAKE_DRIVER,
                              std::string("FAKE_NVIDIA_GPUS=") + pp::testing::kFakeH200,
                              "CUDA_VISIBLE_DEVICES", "PRECISION_PROBE_ENGINE_WAIT" + setting}),
        pp::encode_plan(gpu) + "\n", std::chrono::seconds(60));
    EXPECT_EQ(out.exit_code, 0) << out.err;
    return out.err;
  };
  for (const auto& [setting, said] :
       {std::pair("=blocking", "by blocking"), std::pair("=yield", "by yielding"),
        std::pair("=spin", "by spinning"), std::pair("", "as the driver chooses"),
        std::pair("=sometimes", "as the driver chooses")}) {
    const std::string trace = trace_of(setting);
    EXPECT_NE(trace.find(std::string("primary context ready: its threads wait for GPU 0 ") + said),
              std::string::npos)
        << setting << ": " << trace;
  }
}

// A GPU session sends cuInit's answer as its first line, before any plan's, and it is the driver
// agent's answer to the byte: the same function reads both, under the same CUDA_VISIBLE_DEVICES
// (a shared session's is the probe's). The fake driver's two GPUs stand for the machine's; no
// LibTorch is needed (none loads, and the hello says so after the answer).
TEST(EngineBinary, AGpuSessionAnswersForCuInitAsTheDriversAgentDoes) {
  pp::WorkerPlan gpu = cpu_plan({pp::Mode::fp32}, {});
  gpu.kind = pp::DeviceKind::cuda;
  gpu.index = 0;
  gpu.ordinals = {0};
  for (const char* visible : {"CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES=1"}) {
    const std::vector<std::string> env = pp::environment_with(
        {"PRECISION_PROBE_LIBCUDA=" PP_FAKE_DRIVER,
         std::string("FAKE_NVIDIA_GPUS=") + pp::testing::kFakeH200 + ";" + pp::testing::kFakeT4,
         visible});
    const pp::ProcessOutput session = pp::run_process(
        {PP_REAL_ENGINE, "--worker", "gpu", "--libtorch", "/nonexistent/libtorch_cuda.so"}, env,
        pp::encode_plan(gpu) + "\n", std::chrono::seconds(60));
    const pp::ProcessOutput agent =
        pp::run_process({PP_BINARY, "--driver-agent", "cuda"}, env, "", std::chrono::seconds(60));
    ASSERT_EQ(agent.exit_code, 0) << agent.err;
    const std::vector<std::string> lines = pp::split(session.out, '\n');
    ASSERT_FALSE(lines.empty()) << session.err;
    pp::SessionFacts said;
    const auto applied = pp::apply_engine_line(
        lines.front(), [](int) -> pp::WorkerResult* { return nullptr; }, said);
    ASSERT_TRUE(applied) << lines.front() << ": " << applied.error();
    ASSERT_TRUE(said.cuda.has_value())
        << "the first line is not cuInit's answer: " << lines.front();
    const pp::Expected<pp::CudaSnapshot> from_agent = pp::decode_cuda_snapshot(agent.out);
    ASSERT_TRUE(from_agent) << agent.out;
    EXPECT_EQ(pp::encode_cuda_snapshot(*said.cuda), pp::encode_cuda_snapshot(*from_agent))
        << visible;
    const std::size_t gpus = std::string(visible) == "CUDA_VISIBLE_DEVICES" ? 2 : 1;
    ASSERT_EQ(said.cuda->devices.size(), gpus) << lines.front();
    EXPECT_EQ(said.cuda->devices.front().name, gpus == 2 ? "NVIDIA H200" : "Tesla T4");
    EXPECT_EQ(said.cuda->devices.back().name, "Tesla T4");
    EXPECT_EQ(said.cuda->devices.back().sm_count, 40);
    EXPECT_EQ(said.cuda->peers.size(), gpus * (gpus - 1));
    EXPECT_NE(said.cuda->library.find("fake_nvidia_driver"), std::string::npos);
    EXPECT_EQ(said.cuda->driver_cuda_version, pp::Version::from_cuda_number(13000));
  }
  // A driver whose cuInit fails sends no answer: the probe asks the agent, which says why.
  const pp::ProcessOutput failed = pp::run_process(
      {PP_REAL_ENGINE, "--worker", "gpu", "--libtorch", "/nonexistent/libtorch_cuda.so"},
      pp::environment_with({"PRECISION_PROBE_LIBCUDA=" PP_FAKE_DRIVER,
                            std::string("FAKE_NVIDIA_GPUS=") + pp::testing::kFakeH200,
                            "FAKE_CUINIT_RESULT=100", "CUDA_VISIBLE_DEVICES"}),
      pp::encode_plan(gpu) + "\n", std::chrono::seconds(60));
  EXPECT_EQ(failed.out.find(R"("type":"cuda")"), std::string::npos) << failed.out;
  EXPECT_NE(failed.out.find(R"("type":"hello")"), std::string::npos) << failed.out;
}

// Where one CPU is usable (here a quota of one), the training's runs go one after another on one
// thread: beside each other they would only take turns, each with its tensors in a malloc arena
// of its own. Where more are usable they run at once. The trace says when each started and ended.
TEST(EngineBinary, OnOneCpuTheTrainingRunsGoOneAfterAnother) {
  PP_REQUIRE_RELEASE();
  if (pp::affinity_cpus().size() < 2) {
    GTEST_SKIP() << "one CPU in this process's mask: the runs at once cannot be shown";
  }
  const auto overlapped = [](const std::string& root,
                             const std::string& setting = "") -> std::optional<bool> {
    const pp::ProcessOutput out = run_worker(
        cpu_plan({pp::Mode::fp32}, {pp::Mode::amp_bf16}), pp::testing::release()->cpu_library(),
        {"PRECISION_PROBE_ENGINE_CGROUP_ROOT=" + root, "OMP_NUM_THREADS",
         "PRECISION_PROBE_ENGINE_CPU_TRAINING" + setting});
    EXPECT_EQ(out.exit_code, 0) << out.err;
    EXPECT_TRUE(read_lines(out.out).amp.at(pp::Mode::amp_bf16).ok) << out.out;
    const std::size_t second_start = out.err.find(": started", out.err.find(": started") + 1);
    const std::size_t first_end = out.err.find(": done in");
    if (second_start == std::string::npos || first_end == std::string::npos) return std::nullopt;
    return second_start < first_end;
  };
  EXPECT_EQ(overlapped(cgroup_tree(true)), false) << "one CPU: one after another";
  EXPECT_EQ(overlapped(cgroup_tree(false)), true) << "more CPUs: at once";
  // PRECISION_PROBE_ENGINE_CPU_TRAINING says otherwise, either way.
  EXPECT_EQ(overlapped(cgroup_tree(false), "=in-turn"), false) << "in turn on more CPUs";
  EXPECT_EQ(overlapped(cgroup_tree(true), "=at-once"), true) << "at once on one CPU";
}

// Where one CPU is usable (a quota of one) the training runs a smaller batch than where more are
// (there the run's time is its CPU time), trains all the same, and its method says the batch.
TEST(EngineBinary, OnOneCpuTheTrainingRunsASmallerBatch) {
  PP_REQUIRE_RELEASE();
  if (pp::affinity_cpus().size() < 2) {
    GTEST_SKIP() << "one CPU in this process's mask: the batch of more cannot be shown";
  }
  const auto batch_of = [](bool one_cpu) -> long {
    const pp::ProcessOutput out = run_worker(
        cpu_plan({pp::Mode::fp32}, {pp::Mode::amp_bf16}), pp::testing::release()->cpu_library(),
        {"PRECISION_PROBE_ENGINE_CGROUP_ROOT=" + cgroup_tree(one_cpu), "OMP_NUM_THREADS"});
    EXPECT_EQ(out.exit_code, 0) << out.err;
    const pp::AmpOutcome& o = read_lines(out.out).amp.at(pp::Mode::amp_bf16);
    EXPECT_TRUE(o.ok) << o.error;
    const std::string said = "at a batch of ";
    const std::size_t at = o.method.find(said);
    if (at == std::string::npos) return -1;
    return std::strtol(o.method.c_str() + at + said.size(), nullptr, 10);
  };
  const long one = batch_of(true);
  const long more = batch_of(false);
  EXPECT_GT(one, 0);
  EXPECT_LT(one, more);
}

TEST(EngineBinary, APlanOfAnotherProtocolIsRefused) {
  PP_REQUIRE_RELEASE();
  const pp::ProcessOutput r = pp::run_process(
      {PP_REAL_ENGINE, "--worker", "cpu", "--libtorch", pp::testing::release()->cpu_library()},
      pp::environment_with({}),
      R"({"protocol":2,"kind":"cpu","index":-1,"smoke":["fp32"],"amp":[],"seed":1})"
      "\n",
      std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("protocol version mismatch"), std::string::npos) << r.err;
}

// TF32 is the one setting LibTorch reads once per process: a session whose environment would make
// its fp32 checks TF32 refuses the plan; tf32 is asked of cuBLAS, on a GPU: a CPU's plan with it
// is refused.
TEST(EngineBinary, AWorkerRefusesAPlanItsTf32SettingWouldFalsify) {
  PP_REQUIRE_RELEASE();
  const std::string lib = pp::testing::release()->cpu_library();
  const pp::ProcessOutput on =
      run_worker(cpu_plan({pp::Mode::fp32}, {}), lib, {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1"});
  EXPECT_EQ(on.exit_code, 2) << on.out;
  EXPECT_NE(on.err.find("would make this plan's fp32 checks TF32"), std::string::npos) << on.err;
  pp::WorkerPlan tf32 = cpu_plan({pp::Mode::tf32}, {});
  const pp::ProcessOutput off = run_worker(tf32, lib);
  EXPECT_EQ(off.exit_code, 2) << off.out;
  EXPECT_NE(off.err.find("tf32 is checked on GPUs alone"), std::string::npos) << off.err;
}

// A library that is no LibTorch (or cannot be loaded) is said in the hello, and every check is
// answered as not run with that reason: the machine's set-up, not a crash.
TEST(EngineBinary, ALibraryThatCannotBeLoadedIsSaidAndEveryCheckAnswered) {
  PP_REQUIRE_RELEASE();
  for (const std::string& lib : {std::string("/nonexistent/libtorch_cpu.so"),
                                 std::string(PP_FAKE_STACKS "/cpu/torch/lib/libtorch_cpu.so")}) {
    const pp::ProcessOutput out = run_worker(cpu_plan({pp::Mode::fp32}, {pp::Mode::amp_bf16}), lib);
    ASSERT_EQ(out.exit_code, 0) << out.err;
    const pp::WorkerResult result = read_lines(out.out);
    ASSERT_TRUE(result.stack.has_value());
    EXPECT_FALSE(result.stack->load_error.empty());
    EXPECT_NE(result.stack->load_error.find(lib), std::string::npos) << result.stack->load_error;
    ASSERT_TRUE(result.smoke.contains(pp::Mode::fp32));
    EXPECT_EQ(result.smoke.at(pp::Mode::fp32).error_kind, pp::ErrorKind::unavailable);
    EXPECT_EQ(result.amp.at(pp::Mode::amp_bf16).error_kind, pp::ErrorKind::unavailable);
    EXPECT_TRUE(result.finished);
  }
}

TEST(EngineBinary, AnEngineThatCannotLoadLibTorchIsTheEnvironmentNotACrash) {
  PP_REQUIRE_RELEASE();
  // A memory limit (ulimit -v) leaves room for the probe and the engine but not for LibTorch's
  // libraries: the engine's dlopen fails, says why, and a requirement that needed it exits 3.
  const pp::ProcessOutput out = pp::run_process(
      {"/bin/sh", "-c", "ulimit -v 300000; exec \"$0\" --device cpu --require fp32 --no-amp",
       PP_BINARY},
      pp::environment_with({"PRECISION_PROBE_ENGINE=" PP_REAL_ENGINE,
                            "PRECISION_PROBE_TORCH=" + pp::testing::release()->site,
                            "PRECISION_PROBE_LIBCUDA=libcuda-not-here.so.1",
                            "PRECISION_PROBE_LIBNVML=libnvidia-ml-not-here.so.1"}),
      "", std::chrono::seconds(60));
  EXPECT_EQ(out.exit_code, 3) << out.out << out.err;
  EXPECT_NE(out.out.find("libtorch-load-failed"), std::string::npos) << out.out;
  EXPECT_EQ(out.out.find("crashed"), std::string::npos) << out.out;
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
  PP_REQUIRE_RELEASE();
  // A long CPU benchmark keeps the real worker busy; the probe is then killed outright, and the
  // worker must go with it (PR_SET_PDEATHSIG), not compute on.
  pp::ChildProcess probe;
  const auto started = probe.start(
      {PP_BINARY, "--device", "cpu", "--bench", "--bench-size", "8192", "--no-amp", "-q"},
      pp::environment_with({"PRECISION_PROBE_ENGINE=" PP_REAL_ENGINE,
                            "PRECISION_PROBE_TORCH=" + pp::testing::release()->site,
                            "PRECISION_PROBE_LIBCUDA=libcuda-not-here.so.1",
                            "PRECISION_PROBE_LIBNVML=libnvidia-ml-not-here.so.1"}),
      "");
  ASSERT_TRUE(started) << started.error();
  std::vector<int> workers;
  for (int i = 0; i < 200 && workers.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    workers = children_of(probe.pid());
  }
  ASSERT_FALSE(workers.empty()) << "no worker was started";
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // into its checks
  ASSERT_EQ(::kill(probe.pid(), SIGKILL), 0);
  probe.wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  for (int pid : workers) EXPECT_FALSE(alive(pid)) << "worker " << pid << " outlived the probe";
}

// --soak through the real binary and the real engine on the CPU: every result bit-identical to
// the golden one; an injected fault caught (exit 4, the mode failed, the diagnostics); a fault
// aimed at another device leaves this one alone.
TEST(EngineBinary, TheSoakComparesEveryResultAndCatchesAnInjectedFault) {
  PP_REQUIRE_RELEASE();
  const pp::ProcessOutput clean = probe_on_the_cpu({"--soak", "1", "--soak-modes", "fp32"});
  ASSERT_EQ(clean.exit_code, 0) << clean.err << clean.out;
  const nlohmann::json c = nlohmann::json::parse(clean.out);
  const nlohmann::json& fp32 = c.at("devices").back().at("soak").at("modes").at("fp32");
  EXPECT_TRUE(fp32.at("ok").get<bool>());
  EXPECT_GT(fp32.at("iterations").get<int>(), 5);  // a second of a 2-core machine under load
  EXPECT_EQ(fp32.at("mismatches"), 0);
  EXPECT_GE(fp32.at("full_compares").get<int>(), 1);
  EXPECT_EQ(fp32.at("golden_checksum").get<std::string>().size(), 16U);
  EXPECT_FALSE(has_code(c, "silent-data-corruption"));
  EXPECT_EQ(c.at("stack").at("abi_version"), pp::testing::release()->version);

  const pp::ProcessOutput hit =
      probe_on_the_cpu({"--soak", "1", "--soak-modes", "fp32"}, "fp32:5:cpu");
  ASSERT_EQ(hit.exit_code, 4) << hit.err << hit.out;
  const nlohmann::json h = nlohmann::json::parse(hit.out);
  const nlohmann::json& cpu = h.at("devices").back();
  const nlohmann::json& o = cpu.at("soak").at("modes").at("fp32");
  EXPECT_EQ(o.at("mismatches"), 1);
  EXPECT_EQ(o.at("first_mismatch").at("iteration"), 5);
  EXPECT_EQ(o.at("first_mismatch").at("elements"), 1);
  EXPECT_TRUE(o.at("injected").get<bool>());
  EXPECT_EQ(cpu.at("precisions").at("fp32").at("status"), "failed");
  EXPECT_TRUE(has_code(h, "silent-data-corruption"));
  EXPECT_TRUE(has_code(h, "soak-fault-injected"));

  const pp::ProcessOutput elsewhere =
      probe_on_the_cpu({"--soak", "1", "--soak-modes", "fp32"}, "fp32:20:0");
  EXPECT_EQ(elsewhere.exit_code, 0) << elsewhere.out;
  // A soak shorter than the modes' slices: every mode still gets its share.
  const pp::ProcessOutput short_one = probe_on_the_cpu({"--soak", "0.3"});
  ASSERT_EQ(short_one.exit_code, 0) << short_one.out;
  for (const auto& [key, mode] :
       nlohmann::json::parse(short_one.out).at("devices").back().at("soak").at("modes").items()) {
    if (mode.at("error_kind") == "not_run") continue;  // its smoke test did not pass here
    EXPECT_TRUE(mode.at("ran").get<bool>()) << key << ": " << mode.dump();
    EXPECT_GT(mode.at("iterations").get<int>(), 0) << key;
  }
}

// The modes share the soak equally, in rounds of one slice each (docs/soak.md): 2.5 s of two
// modes on the CPU are three rounds of 0.42 s slices, 1.25 s each, not 1.5 s and 1.0 s.
TEST(EngineBinary, EveryModeSoaksAnEqualShareOfTheTime) {
  PP_REQUIRE_RELEASE();
  const pp::ProcessOutput run = probe_on_the_cpu({"--soak", "2.5", "--soak-modes", "fp32,bf16"});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const nlohmann::json modes =
      nlohmann::json::parse(run.out).at("devices").back().at("soak").at("modes");
  ASSERT_EQ(modes.size(), 2U) << modes.dump();
  std::vector<double> seconds;
  for (const auto& [key, mode] : modes.items()) {
    ASSERT_TRUE(mode.at("ran").get<bool>()) << key << ": " << mode.dump();
    seconds.push_back(mode.at("seconds").get<double>());
  }
  // Shares, not absolute times: on a loaded machine a slice's last iteration ends late for both
  // modes alike, while a split by slices of unequal count differs by a whole slice (0.42 s).
  EXPECT_NEAR(seconds[0], seconds[1], 0.25) << modes.dump();
  EXPECT_GE(seconds[0] + seconds[1], 2.3) << modes.dump();
  EXPECT_LE(seconds[0] + seconds[1], 3.5) << modes.dump();
}

// SIGINT ends a soak early: a complete report of what ran (exit 5), or exit 4 when a mismatch
// was already found: corruption is never hidden behind an interrupt.
TEST(EngineBinary, AnInterruptedSoakReportsWhatRanAndKeepsACorruptionAtFour) {
  PP_REQUIRE_RELEASE();
  for (const std::string inject : {"", "fp32:10:cpu"}) {
    std::vector<std::string> env = {"PRECISION_PROBE_ENGINE=" PP_REAL_ENGINE,
                                    "PRECISION_PROBE_TORCH=" + pp::testing::release()->site,
                                    "PRECISION_PROBE_LIBCUDA=libcuda-not-here.so.1",
                                    "PRECISION_PROBE_LIBNVML=libnvidia-ml-not-here.so.1"};
    if (!inject.empty()) env.push_back("PRECISION_PROBE_INJECT_FAULT=" + inject);
    pp::ChildProcess probe;
    const auto started = probe.start({PP_BINARY, "--device", "cpu", "--no-amp", "--soak", "30",
                                      "--soak-modes", "fp32", "--format", "json"},
                                     pp::environment_with(env), "");
    ASSERT_TRUE(started) << started.error();
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
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

// One session, several plans (issue 39): the real engine loads the release once and runs its
// plans at once, each answering under its own slot; a check made to hang
// (PRECISION_PROBE_INJECT_HANG) stops its own plan alone, while the other's lines come and end.
TEST(EngineBinary, ASessionRunsItsPlansAtOnceAndAHangIsItsPlansAlone) {
  PP_REQUIRE_RELEASE();
  pp::WorkerPlan hangs = cpu_plan({pp::Mode::fp32, pp::Mode::bf16}, {});
  hangs.slot = 3;
  pp::WorkerPlan other = cpu_plan({pp::Mode::fp16, pp::Mode::int8}, {});
  other.slot = 8;
  pp::ChildProcess engine;
  const auto started = engine.start(
      {PP_REAL_ENGINE, "--worker", "cpu", "--libtorch", pp::testing::release()->cpu_library()},
      pp::environment_with({"PRECISION_PROBE_INJECT_HANG=bf16:cpu",
                            "FAKE_NVIDIA_GPUS=", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"}));
  ASSERT_TRUE(started) << started.error();
  engine.write_input(pp::encode_plan(hangs) + "\n" + pp::encode_plan(other) + "\n");
  pp::WorkerResult a;
  pp::WorkerResult b;
  pp::SessionFacts said;
  const auto result_of = [&a, &b](int slot) -> pp::WorkerResult* {
    return slot == 3 ? &a : slot == 8 ? &b : nullptr;
  };
  std::string pending;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (!(b.finished && a.smoke.contains(pp::Mode::fp32)) &&
         std::chrono::steady_clock::now() < deadline) {
    if (!pp::drain_available(engine.stdout_fd(), pending, 1 << 20)) break;
    for (std::size_t nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
      const pp::Expected<pp::LineNote> note =
          pp::apply_engine_line(pending.substr(0, nl), result_of, said);
      EXPECT_TRUE(note) << pending.substr(0, nl) << ": " << note.error();
      pending.erase(0, nl + 1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(said.hello.has_value());
  EXPECT_FALSE(said.cuda.has_value());  // a CPU session starts no driver
  EXPECT_TRUE(b.finished);
  EXPECT_TRUE(b.smoke.contains(pp::Mode::fp16) && b.smoke.contains(pp::Mode::int8));
  EXPECT_TRUE(a.smoke.contains(pp::Mode::fp32));
  // Still hanging: no bf16 answer, no end; the process is still there to be ended.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  (void)pp::drain_available(engine.stdout_fd(), pending, 1 << 20);
  EXPECT_EQ(pending.find("\"slot\":3"), std::string::npos) << pending;
  EXPECT_FALSE(a.smoke.contains(pp::Mode::bf16));
  EXPECT_FALSE(a.finished);
  EXPECT_TRUE(engine.running());
  engine.kill_group();
  engine.wait();
}

// The probe with the real engine on the CPU and a check made to hang: past --check-timeout the
// session is ended; the checks the CPU answered before stand, the hung one and those after it are
// failed (timed out), exit 5.
TEST(EngineBinary, AHungCheckOfTheRealEngineCostsOnlyItsDevicesRest) {
  PP_REQUIRE_RELEASE();
  std::vector<std::string> argv = {PP_BINARY, "--device",        "cpu", "--no-amp", "--format",
                                   "json",    "--check-timeout", "3"};
  const pp::ProcessOutput out =
      pp::run_process(argv,
                      pp::environment_with({"PRECISION_PROBE_ENGINE=" PP_REAL_ENGINE,
                                            "PRECISION_PROBE_TORCH=" + pp::testing::release()->site,
                                            "PRECISION_PROBE_LIBCUDA=libcuda-not-here.so.1",
                                            "PRECISION_PROBE_LIBNVML=libnvidia-ml-not-here.so.1",
                                            "PRECISION_PROBE_INJECT_HANG=bf16:cpu"}),
                      "", std::chrono::seconds(120));
  EXPECT_EQ(out.exit_code, 5) << out.err;
  const nlohmann::json p = nlohmann::json::parse(out.out).at("devices").back().at("precisions");
  EXPECT_EQ(p.at("fp32").at("status"), "native");
  EXPECT_EQ(p.at("bf16").at("status"), "failed");
  EXPECT_EQ(p.at("bf16").at("failure"), "timed_out");
  const auto bad = pp::run_process({PP_BINARY, "--device", "cpu", "-q"},
                                   pp::environment_with({"PRECISION_PROBE_INJECT_HANG=bf17:cpu"}),
                                   "", std::chrono::seconds(30));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("PRECISION_PROBE_INJECT_HANG='bf17:cpu' is not MODE[:DEVICE]"),
            std::string::npos)
      << bad.err;
}
