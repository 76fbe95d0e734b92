// Every diagnostic, triggered through fakes of the driver, the system and the engine.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>

#include "fakes.hpp"
#include "probe/verdicts/diagnostics.hpp"
#include "probe/verdicts/exit_codes.hpp"
#include "probe/run/probe.hpp"

namespace pp = precision_probe;
using pp::Mode;
using pp::Severity;
using pp::testing::FakeGpu;

namespace {

const FakeGpu kH200{"NVIDIA H200", {9, 0}, 132, 141};
const FakeGpu kT4{"Tesla T4", {7, 5}, 40, 15};

struct Machine {
  pp::testing::FakeSystem system;
  pp::testing::FakeDriver driver = pp::testing::no_driver();
  pp::testing::FakeEngine engine;
  pp::StackInfo image = pp::testing::cuda_stack();  // the image's PyTorch
  pp::Options options;

  Machine() { system.files["/proc/cpuinfo"] = pp::testing::cpuinfo_with_flags("CPU", "avx2"); }
  // A healthy GPU machine: driver, device nodes, one GPU per entry.
  explicit Machine(const std::vector<FakeGpu>& gpus) : Machine() {
    driver = pp::testing::driver_with(gpus);
    system.paths = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/proc/driver/nvidia/version"};
    for (std::size_t i = 0; i < gpus.size(); ++i)
      system.paths.insert("/dev/nvidia" + std::to_string(i));
  }
  pp::Report run() {
    return pp::run_probe(options,
                         pp::ProbeDeps{system, driver, engine, pp::testing::image_of(&image)});
  }
};

// A copy, so that it outlives the report it came from.
std::optional<pp::Diagnostic> find(const pp::Report& r, const std::string& code) {
  const auto it = std::find_if(r.diagnostics.begin(), r.diagnostics.end(),
                               [&code](const pp::Diagnostic& d) { return d.code == code; });
  if (it == r.diagnostics.end()) return std::nullopt;
  return *it;
}

std::vector<std::string> codes(const pp::Report& r) {
  std::vector<std::string> out;
  for (const auto& d : r.diagnostics) out.push_back(d.code);
  return out;
}

}  // namespace

TEST(Diagnostics, AHealthyGpuMachineHasOnlyAdvice) {
  Machine s({kH200});
  const auto r = s.run();
  for (const auto& d : r.diagnostics)
    EXPECT_EQ(d.severity, Severity::info) << d.code << ": " << d.message;
  EXPECT_NE(find(r, "tf32-off-by-default"), std::nullopt);
}

TEST(Diagnostics, NoDriverLibrary) {
  Machine s;
  const auto info = s.run();
  const auto d = find(info, "driver-library-not-found");
  ASSERT_NE(d, std::nullopt);
  EXPECT_EQ(d->severity, Severity::info);
  EXPECT_NE(d->hint.find("--gpus all"), std::string::npos);
  EXPECT_NE(d->hint.find("nvidia.com/gpu"), std::string::npos);
  s.options.require = {Mode::bf16};
  EXPECT_EQ(find(s.run(), "driver-library-not-found")->severity, Severity::error);
}

TEST(Diagnostics, NvmlWithoutLibcudaIsAMissingDriverCapability) {
  Machine s({kH200});
  s.driver.cuda.loaded = false;
  s.driver.cuda.load_error = "libcuda.so.1: cannot open shared object file";
  s.driver.nvml.devices[0].mig_enabled = true;  // forces cuInit to be asked first
  const auto d = find(s.run(), "cuda-library-not-found");
  ASSERT_NE(d, std::nullopt);
  EXPECT_NE(d->hint.find("NVIDIA_DRIVER_CAPABILITIES=compute,utility"), std::string::npos);
}

TEST(Diagnostics, DeviceNodesMissingOrInaccessible) {
  Machine s({kH200});
  s.system.paths = {"/proc/driver/nvidia/version"};
  const auto missing = find(s.run(), "device-nodes-missing");
  ASSERT_NE(missing, std::nullopt);
  EXPECT_NE(missing->message.find("/dev/nvidiactl is missing"), std::string::npos);

  Machine t({kH200});
  t.system.inaccessible = {"/dev/nvidia0"};
  const auto blocked = find(t.run(), "device-nodes-inaccessible");
  ASSERT_NE(blocked, std::nullopt);
  EXPECT_NE(blocked->message.find("/dev/nvidia0"), std::string::npos);
}

TEST(Diagnostics, NvidiaVisibleDevicesVoidOrUnsetInAContainer) {
  Machine s;
  s.system.env["NVIDIA_VISIBLE_DEVICES"] = "void";
  const auto none = find(s.run(), "nvidia-visible-devices-none");
  ASSERT_NE(none, std::nullopt);
  EXPECT_NE(none->message.find("void"), std::string::npos);

  Machine t;
  t.system.paths.insert("/.dockerenv");
  t.options.require = {Mode::bf16};  // said only when a GPU is wanted
  EXPECT_NE(find(t.run(), "nvidia-visible-devices-unset"), std::nullopt);
  Machine host;  // not a container: nothing to say about the variable
  EXPECT_EQ(find(host.run(), "nvidia-visible-devices-unset"), std::nullopt);
}

TEST(Diagnostics, CudaVisibleDevicesHidingEverything) {
  Machine s({kH200, kH200});
  s.system.env["CUDA_VISIBLE_DEVICES"] = "";
  s.driver.cuda.init_result = 100;
  s.driver.cuda.init_error_name = "CUDA_ERROR_NO_DEVICE";
  s.driver.cuda.devices.clear();
  s.options.require = {Mode::bf16};
  const auto r = s.run();
  const auto d = find(r, "cuda-visible-devices-empty");
  ASSERT_NE(d, std::nullopt) << ::testing::PrintToString(codes(r));
  EXPECT_EQ(d->severity, Severity::error);
  EXPECT_NE(d->message.find("(2 present)"), std::string::npos);
  EXPECT_EQ(find(r, "no-cuda-device"), std::nullopt);  // the same cause, said once
  EXPECT_EQ(r.exit_code, pp::exit_code::kEnvironment);
}

TEST(Diagnostics, CudaVisibleDevicesNamingAGpuThatIsNotThere) {
  Machine s({kH200, kH200});
  s.system.env["CUDA_VISIBLE_DEVICES"] = "1,7,0";
  s.driver.cuda.devices.erase(s.driver.cuda.devices.begin());  // CUDA shows GPU 1 only
  const auto d = find(s.run(), "cuda-visible-devices-invalid");
  ASSERT_NE(d, std::nullopt);
  EXPECT_NE(d->message.find("entry '7' names no GPU (2 present: 0-1)"), std::string::npos)
      << d->message;
  EXPECT_NE(d->message.find("(1 visible)"), std::string::npos) << d->message;
}

TEST(Diagnostics, DriverTooOldForTheImagesCuda) {
  Machine s({kH200});
  s.driver = pp::testing::driver_with({kH200}, "550.54.15", 12040);
  s.system.paths = {"/dev/nvidiactl", "/dev/nvidia0",
                    "/usr/local/cuda/compat/libcuda.so.580.65.06"};
  const auto d = find(s.run(), "driver-too-old");
  ASSERT_NE(d, std::nullopt);
  EXPECT_EQ(d->severity, Severity::error);
  EXPECT_NE(
      d->message.find("built with CUDA 13.0, but driver 550.54.15 supports CUDA 12.4 at most"),
      std::string::npos)
      << d->message;
  EXPECT_NE(d->message.find("exist in /usr/local/cuda/compat but are not loaded"),
            std::string::npos);
  EXPECT_NE(d->hint.find("580.65.06"), std::string::npos);

  Machine t({kH200});
  t.driver.cuda.init_result = 35;
  t.driver.cuda.init_error_name = "CUDA_ERROR_INSUFFICIENT_DRIVER";
  t.driver.cuda.devices.clear();
  t.driver.nvml.devices[0].mig_enabled = true;  // cuInit asked up front
  EXPECT_NE(find(t.run(), "driver-too-old"), std::nullopt);
}

TEST(Diagnostics, CuInitFailuresAreNamedWithAFix) {
  Machine s({kH200});
  s.driver.cuda.init_result = 802;
  s.driver.cuda.init_error_name = "CUDA_ERROR_SYSTEM_NOT_READY";
  s.driver.cuda.init_error_string = "system not yet initialized";
  s.driver.cuda.devices.clear();
  s.driver.nvml.loaded = false;  // no NVML: cuInit decides
  const auto r = s.run();
  const auto d = find(r, "cuinit-failed");
  ASSERT_NE(d, std::nullopt);
  EXPECT_NE(d->message.find("CUDA_ERROR_SYSTEM_NOT_READY (802): system not yet initialized"),
            std::string::npos);
  EXPECT_NE(d->hint.find("fabricmanager"), std::string::npos);

  Machine t({kH200});
  t.driver.cuda.init_result = 100;
  t.driver.cuda.init_error_name = "CUDA_ERROR_NO_DEVICE";
  t.driver.cuda.devices.clear();
  t.driver.nvml.loaded = false;
  EXPECT_NE(find(t.run(), "no-cuda-device"), std::nullopt);
}

TEST(Diagnostics, CpuOnlyLibTorch) {
  Machine s({kH200});
  s.image = pp::testing::cpu_stack();
  const auto with_gpu = find(s.run(), "libtorch-without-cuda");
  ASSERT_NE(with_gpu, std::nullopt);
  EXPECT_EQ(with_gpu->severity, Severity::error);
  Machine t;
  t.image = pp::testing::cpu_stack();
  EXPECT_EQ(find(t.run(), "libtorch-without-cuda")->severity, Severity::info);
}

TEST(Diagnostics, ArchitectureCoverage) {
  Machine s({kT4});
  s.image.arch_list = {"sm_80", "sm_90"};
  EXPECT_NE(find(s.run(), "arch-not-in-build"), std::nullopt);
  Machine t({kH200});
  t.image.arch_list = {"sm_80", "compute_80"};
  const auto ptx = find(t.run(), "arch-via-ptx");
  ASSERT_NE(ptx, std::nullopt);
  EXPECT_NE(ptx->message.find("compute_80 (PTX"), std::string::npos);
}

TEST(Diagnostics, MigComputeModesAndBusyMemory) {
  Machine mig({kH200});
  mig.driver.nvml.devices[0].mig_enabled = true;
  EXPECT_NE(find(mig.run(), "mig-enabled"), std::nullopt);

  Machine prohibited({kH200});
  prohibited.driver.cuda.devices[0].compute_mode = 2;
  const auto r = prohibited.run();
  ASSERT_NE(find(r, "compute-mode-prohibited"), std::nullopt) << ::testing::PrintToString(codes(r));
  EXPECT_EQ(find(r, "compute-mode-prohibited")->severity, Severity::error);

  Machine exclusive({kH200});
  exclusive.driver.cuda.devices[0].compute_mode = 3;
  exclusive.driver.nvml.devices[0].memory_used = 20ULL << 30U;
  EXPECT_NE(find(exclusive.run(), "compute-mode-exclusive-busy"), std::nullopt);

  Machine busy({kH200});
  // As an H200 answered with another process holding its memory: NVML's "used" (reserved memory
  // included) exceeds its total; what is not free is what is in use.
  busy.driver.nvml.devices[0].memory_used = *busy.driver.nvml.devices[0].memory_total / 100 * 101;
  busy.driver.nvml.devices[0].memory_free = *busy.driver.nvml.devices[0].memory_total / 100 * 5;
  const auto d = find(busy.run(), "gpu-memory-busy");
  ASSERT_NE(d, std::nullopt);
  EXPECT_NE(d->message.find("134.0 of 141.0 GiB are in use"), std::string::npos) << d->message;
}

TEST(Diagnostics, Bf16EmulatedOnOlderGpus) {
  Machine s({kT4});
  const auto r = s.run();
  const auto d = find(r, "bf16-emulated");
  ASSERT_NE(d, std::nullopt);
  EXPECT_NE(d->message.find("is_bf16_supported"), std::string::npos);
  EXPECT_EQ(find(r, "tf32-off-by-default"), std::nullopt);  // no TF32 on a T4
}

TEST(Diagnostics, AReferenceBlasIsCalledOut) {
  // Two cores at 2.6 GHz with AVX-512 allow 332 GFLOP/s of fp32 FMAs; netlib's BLAS reaches 8.
  Machine s;
  std::string cpuinfo;
  for (int i = 0; i < 2; ++i) {
    cpuinfo += "processor\t: " + std::to_string(i) +
               "\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.1\nsiblings\t: 2\ncpu cores\t: "
               "2\nflags\t\t: avx2 fma avx512f\n\n";
  }
  s.system.files["/proc/cpuinfo"] = cpuinfo;
  s.options.bench = true;
  double gflops = 8.2;
  s.engine.answer = [&gflops](const pp::WorkerPlan& plan) {
    pp::WorkerResult r;
    r.kind = plan.kind;
    r.finished = true;
    for (Mode m : plan.smoke) r.smoke[m] = pp::testing::passed(1e-4);
    pp::BenchOutcome b;
    b.ran = b.ok = true;
    b.size = 1024;
    b.tflops = gflops / 1000.0;
    r.bench[Mode::fp32] = b;
    return r;
  };
  const auto slow = find(s.run(), "cpu-blas-slow");
  ASSERT_NE(slow, std::nullopt);
  EXPECT_NE(slow->message.find("8.2 GFLOP/s, 2.5 % of the 332 GFLOP/s its 2 cores allow"),
            std::string::npos)
      << slow->message;
  EXPECT_NE(slow->hint.find("libopenblas0-pthread"), std::string::npos);
  gflops = 237.0;  // OpenBLAS on the same machine
  EXPECT_EQ(find(s.run(), "cpu-blas-slow"), std::nullopt);
}

// The registry is the vocabulary: in the enum's order, each name kebab-case and unique, and
// docs/diagnostics.md has exactly its sections, in its order.
TEST(Diagnostics, EveryCodeIsInTheRegistryAndTheDocs) {
  std::ifstream docs(PP_SOURCE_DIR "/docs/diagnostics.md");
  ASSERT_TRUE(docs);
  std::vector<std::string> sections;
  for (std::string line; std::getline(docs, line);) {
    if (line.rfind("## ", 0) == 0) sections.push_back(line.substr(3));
  }
  std::vector<std::string> names;
  std::set<std::string> unique;
  for (std::size_t i = 0; i < pp::kDiagnosticCodes.size(); ++i) {
    const pp::DiagnosticInfo& info = pp::kDiagnosticCodes[i];
    EXPECT_EQ(static_cast<std::size_t>(info.code), i) << info.name;
    EXPECT_EQ(pp::to_string(info.code), info.name);
    EXPECT_TRUE(std::regex_match(std::string(info.name), std::regex("[a-z0-9]+(-[a-z0-9]+)*")))
        << info.name;
    unique.insert(std::string(info.name));
    names.emplace_back(info.name);
  }
  EXPECT_EQ(unique.size(), names.size());
  EXPECT_EQ(names, sections);
}

TEST(Diagnostics, OneCauseIsSaidOnce) {
  // CUDA_VISIBLE_DEVICES=7 on a one-GPU machine: cuInit then finds no device, but the variable is
  // the cause, and only it is reported.
  Machine s({kH200});
  s.system.env["CUDA_VISIBLE_DEVICES"] = "7";
  s.driver.cuda.init_result = 100;
  s.driver.cuda.init_error_name = "CUDA_ERROR_NO_DEVICE";
  s.driver.cuda.devices.clear();
  const auto r = s.run();
  const auto d = find(r, "cuda-visible-devices-invalid");
  ASSERT_NE(d, std::nullopt);
  EXPECT_NE(d->message.find("names no GPU (1 present: 0)"), std::string::npos) << d->message;
  EXPECT_EQ(find(r, "no-cuda-device"), std::nullopt);
}

namespace {

// Every plan passes; the devices named in `rerun` ran again in an isolated session after `lost`,
// and `crashed_again` (a GPU index, or -2 for none) crashed in bf16 there.
void answer_with_rerun(Machine& m, const std::set<int>& rerun, const pp::EngineRerun& lost,
                       int crashed_again = -2) {
  m.engine.answer = [rerun, lost, crashed_again](const pp::WorkerPlan& plan) {
    pp::WorkerResult r;
    r.kind = plan.kind;
    r.index = plan.index;
    r.finished = true;
    for (Mode mode : plan.smoke) r.smoke[mode] = pp::testing::passed(1e-4);
    for (Mode mode : plan.amp) r.amp[mode] = pp::testing::passed_amp(mode);
    if (rerun.count(plan.index) > 0) r.rerun = lost;
    if (plan.index == crashed_again && plan.kind == pp::DeviceKind::cuda) {
      pp::SmokeOutcome crash;
      crash.error_kind = pp::ErrorKind::crashed;
      crash.error = "the engine worker crashed (" + lost.signal + ")";
      r.smoke[Mode::bf16] = crash;
    }
    return r;
  };
}

}  // namespace

// The shared session SIGKILLed from outside, its plans passing alone: the devices that ran again
// are named, with the signal, as a warning pointing at the OOM killer; the exit code is the
// verdicts' (0), and the JSON says which devices ran again.
TEST(Diagnostics, ASessionKilledFromOutsideIsAWarningNamingTheDevicesThatRanAgain) {
  Machine m({kH200, kH200});
  answer_with_rerun(m, {1, -1},
                    {"the engine worker was killed (SIGKILL)", "SIGKILL", "", std::nullopt});
  const pp::Report r = m.run();
  EXPECT_EQ(r.exit_code, 0);
  const auto lost = find(r, "engine-session-lost");
  ASSERT_NE(lost, std::nullopt) << ::testing::PrintToString(codes(r));
  EXPECT_EQ(lost->severity, Severity::warning);
  EXPECT_NE(lost->message.find("the checks of GPU 1, CPU was lost before they were done (the "
                               "engine worker was killed (SIGKILL))"),
            std::string::npos)
      << lost->message;
  EXPECT_NE(lost->hint.find("OOM killer"), std::string::npos) << lost->hint;
  const std::vector<std::string> all = codes(r);
  EXPECT_EQ(std::count(all.begin(), all.end(), "engine-session-lost"), 1);
  ASSERT_EQ(r.devices.size(), 3U);
  EXPECT_FALSE(r.devices[0].engine_rerun.has_value());
  ASSERT_TRUE(r.devices[1].engine_rerun.has_value());
  EXPECT_EQ(r.devices[1].engine_rerun->signal, "SIGKILL");
}

// The probe ended the session for GPU 1's hung check: the others that ran again are information,
// pointing at that device; where one device crashed again alone the crash is its own.
TEST(Diagnostics, ASessionLostToOneDevicesFaultIsInformation) {
  Machine hung({kH200, kH200});
  answer_with_rerun(hung, {0},
                    {"GPU 1's check hung (timed out: a check did not finish within 2 s "
                     "(--check-timeout))",
                     "", "GPU 1", std::nullopt});
  const auto after_hang = find(hung.run(), "engine-session-lost");
  ASSERT_NE(after_hang, std::nullopt);
  EXPECT_EQ(after_hang->severity, Severity::info);
  EXPECT_NE(after_hang->message.find("the checks of GPU 0 was lost"), std::string::npos);
  EXPECT_NE(after_hang->hint.find("shared with GPU 1"), std::string::npos) << after_hang->hint;

  Machine crash({kH200, kH200});
  answer_with_rerun(crash, {0, 1},
                    {"the engine worker crashed (SIGSEGV)", "SIGSEGV", "", std::nullopt}, 1);
  const pp::Report r = crash.run();
  EXPECT_EQ(r.exit_code, 4);  // GPU 1's bf16 crashed
  const auto crashed = find(r, "engine-session-lost");
  ASSERT_NE(crashed, std::nullopt);
  EXPECT_EQ(crashed->severity, Severity::info);
  EXPECT_NE(crashed->message.find("; GPU 1 crashed again alone"), std::string::npos)
      << crashed->message;
  EXPECT_NE(crashed->hint.find("see the failed checks of GPU 1"), std::string::npos);

  // Nothing lost: nothing said.
  Machine healthy({kH200});
  EXPECT_EQ(find(healthy.run(), "engine-session-lost"), std::nullopt);
}

// The shared session and then a device's isolated one killed by the OOM killer: the memory's
// fault, not the device's (a warning with the memory's hint, the device named as killed again).
TEST(Diagnostics, ADeviceKilledAgainByTheOomKillerIsNotBlamed) {
  Machine m({kH200, kH200});
  answer_with_rerun(m, {0, 1},
                    {"the engine worker was killed (SIGKILL) by the kernel's OOM killer "
                     "(/sys/fs/cgroup/memory.events: oom_kill 0 -> 1; the cgroup's limit 512 MiB)",
                     "SIGKILL", "", true},
                    1);
  const pp::Report r = m.run();
  const auto lost = find(r, "engine-session-lost");
  ASSERT_NE(lost, std::nullopt);
  EXPECT_EQ(lost->severity, Severity::warning);
  EXPECT_NE(lost->message.find("; the OOM killer ended GPU 1 again alone"), std::string::npos)
      << lost->message;
  EXPECT_EQ(lost->message.find("crashed again alone"), std::string::npos) << lost->message;
  EXPECT_NE(lost->hint.find("more memory than its cgroup's limit"), std::string::npos)
      << lost->hint;
}
