#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "binary.hpp"
#include "fakes.hpp"
#include "precision_probe/report_json.hpp"
#include "probe/verdicts/exit_codes.hpp"
#include "probe/run/probe.hpp"

namespace pp = precision_probe;
using pp::Mode;
using pp::Status;
using pp::testing::FakeEngine;
using pp::testing::FakeGpu;
using pp::testing::FakeSystem;

namespace {

const FakeGpu kH200{"NVIDIA H200", {9, 0}, 132, 141};
const FakeGpu kT4{"Tesla T4", {7, 5}, 40, 15};

FakeSystem plain_cpu_system() {
  FakeSystem s;
  s.files["/proc/cpuinfo"] = pp::testing::cpuinfo_with_flags("Test CPU", "avx2 fma f16c", 4);
  s.files["/etc/os-release"] = "NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
  return s;
}

struct Probe {
  FakeSystem system = plain_cpu_system();
  pp::testing::FakeDriver driver = pp::testing::no_driver();
  FakeEngine engine;
  pp::StackInfo image = pp::testing::cuda_stack();  // the image's PyTorch
  pp::Options options;

  pp::Report run() {
    return pp::run_probe(options,
                         pp::ProbeDeps{system, driver, engine, pp::testing::image_of(&image)});
  }
};

const pp::DeviceReport* device(const pp::Report& r, const std::string& label) {
  for (const auto& d : r.devices) {
    if (d.label() == label) return &d;
  }
  return nullptr;
}

// What a run concluded, without its timings: each device's statuses and reasons, the diagnostics
// and the exit code.
std::string conclusions(const pp::Report& r) {
  std::string s = "exit " + std::to_string(r.exit_code) + "\n";
  for (const pp::DeviceReport& d : r.devices) {
    for (const auto& [mode, p] : d.precisions) {
      s += d.label() + " " + std::string(pp::mode_key(mode)) + ": " +
           std::string(pp::to_string(p.status)) + " (" + p.reason + ")\n";
    }
  }
  for (const pp::Diagnostic& d : r.diagnostics) s += d.code + ": " + d.message + "\n";
  return s;
}

bool has_diagnostic(const pp::Report& r, const std::string& code) {
  return std::any_of(r.diagnostics.begin(), r.diagnostics.end(),
                     [&code](const pp::Diagnostic& d) { return d.code == code; });
}

}  // namespace

TEST(Probe, WithoutDriverTheCpuIsStillProbedAndReported) {
  Probe p;
  p.image = pp::testing::cpu_stack();
  const auto r = p.run();
  EXPECT_EQ(r.driver.status, pp::DriverStatus::not_found);
  ASSERT_EQ(r.devices.size(), 1U);
  const auto* cpu = device(r, "CPU");
  ASSERT_NE(cpu, nullptr);
  EXPECT_FALSE(cpu->selected);
  EXPECT_EQ(cpu->name, "Test CPU");
  // Only modes the CPU could run were sent to the engine.
  ASSERT_EQ(p.engine.plans_seen.size(), 1U);
  EXPECT_EQ(p.engine.plans_seen[0].smoke,
            (std::vector<Mode>{Mode::fp32, Mode::fp16, Mode::bf16, Mode::int8}));
  EXPECT_EQ(cpu->find(Mode::fp32)->status, Status::native);
  EXPECT_EQ(cpu->find(Mode::bf16)->status, Status::emulated);  // no AVX512-BF16 in the fake CPU
  EXPECT_EQ(cpu->find(Mode::tf32)->status, Status::unsupported);
  EXPECT_EQ(r.stack.libtorch_version, "2.11.0+cpu");  // the image's
  EXPECT_EQ(r.exit_code, pp::exit_code::kOk);
  EXPECT_TRUE(has_diagnostic(r, "driver-library-not-found"));
}

// An aarch64 machine, through the fake System: qemu-user shows the host's /proc/cpuinfo, so the
// Arm CPU facts are tested here with a real Grace's (tests/unit/grace-cpuinfo.txt), from the
// probe's reading of the machine to the plan, the verdicts and the JSON report.
TEST(Probe, AGraceCpuIsProbedAsItsArmCoresAllow) {
  Probe p;
  p.system.arch = "aarch64";
  p.system.files["/proc/cpuinfo"] = pp::testing::grace_cpuinfo();
  p.image = pp::testing::cpu_stack();
  p.options.devices.cpu = true;
  p.options.require = {Mode::bf16, Mode::fp16, Mode::int8, Mode::amp_bf16};
  const auto r = p.run();
  const auto* cpu = device(r, "CPU");
  ASSERT_NE(cpu, nullptr);
  ASSERT_TRUE(cpu->cpu.has_value());
  EXPECT_EQ(cpu->name, "Arm Neoverse-V2");
  EXPECT_EQ(cpu->cpu->architecture, "aarch64");
  EXPECT_EQ(cpu->cpu->logical_cores, 72);
  EXPECT_EQ(cpu->cpu->physical_cores, 72);
  // Every mode the Arm cores have instructions for is sent to the engine and is native.
  ASSERT_EQ(p.engine.plans_seen.size(), 1U);
  EXPECT_EQ(p.engine.plans_seen[0].smoke,
            (std::vector<Mode>{Mode::fp32, Mode::fp16, Mode::bf16, Mode::int8}));
  EXPECT_EQ(p.engine.plans_seen[0].amp, (std::vector<Mode>{Mode::amp_fp16, Mode::amp_bf16}));
  for (Mode m : {Mode::fp32, Mode::fp16, Mode::bf16, Mode::int8, Mode::amp_fp16, Mode::amp_bf16}) {
    ASSERT_NE(cpu->find(m), nullptr) << pp::mode_key(m);
    EXPECT_EQ(cpu->find(m)->hardware, pp::Hardware::native) << pp::mode_key(m);
    EXPECT_EQ(cpu->find(m)->status, Status::native) << pp::mode_key(m);
  }
  EXPECT_EQ(cpu->find(Mode::tf32)->status, Status::unsupported);
  EXPECT_EQ(r.exit_code, pp::exit_code::kOk);
  const nlohmann::json j = nlohmann::json::parse(pp::report_to_json(r));
  const nlohmann::json& facts = j.at("devices").back().at("cpu");
  EXPECT_EQ(facts.at("model"), "Arm Neoverse-V2");
  EXPECT_EQ(facts.at("architecture"), "aarch64");
  EXPECT_EQ(facts.at("logical_cores"), 72);
  EXPECT_EQ(facts.at("isa_features"), nlohmann::json({"asimd", "fphp", "asimdhp", "asimddp", "bf16",
                                                      "i8mm", "sve", "sve2", "svebf16"}));
  EXPECT_TRUE(facts.at("mhz").is_null());
}

TEST(Probe, RequiringAGpuModeWithoutGpusIsAnEnvironmentProblem) {
  Probe p;
  p.options.require = {Mode::bf16};
  const auto r = p.run();
  EXPECT_EQ(r.exit_code, pp::exit_code::kEnvironment);
  const auto it =
      std::find_if(r.diagnostics.begin(), r.diagnostics.end(),
                   [](const pp::Diagnostic& d) { return d.code == "driver-library-not-found"; });
  ASSERT_NE(it, r.diagnostics.end());
  EXPECT_EQ(it->severity, pp::Severity::error);
}

TEST(Probe, EveryGpuGetsAWorkerPinnedByUuid) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200, kH200});
  p.options.require = {Mode::bf16, Mode::fp8_e4m3, Mode::fp8_e5m2};
  const auto r = p.run();
  const std::vector<pp::WorkerPlan>& plans = p.engine.plans_seen;
  ASSERT_EQ(plans.size(), 3U);  // the CPU and two GPUs
  EXPECT_EQ(plans[1].cuda_visible_devices, p.driver.cuda.devices[0].uuid);
  EXPECT_EQ(plans[2].cuda_visible_devices, p.driver.cuda.devices[1].uuid);
  // nvfp4 is not run on Hopper: the hardware has none.
  const auto& gpu_modes = plans[1].smoke;
  EXPECT_EQ(std::count(gpu_modes.begin(), gpu_modes.end(), Mode::nvfp4), 0);
  EXPECT_EQ(std::count(gpu_modes.begin(), gpu_modes.end(), Mode::fp8_e5m2), 1);
  const auto* gpu1 = device(r, "GPU 1");
  ASSERT_NE(gpu1, nullptr);
  EXPECT_TRUE(gpu1->selected);
  EXPECT_EQ(gpu1->find(Mode::bf16)->status, Status::native);
  EXPECT_EQ(gpu1->find(Mode::nvfp4)->status, Status::unsupported);
  ASSERT_TRUE(gpu1->kernels.has_value());
  EXPECT_EQ(gpu1->kernels->via, "sm_90");
  EXPECT_EQ(gpu1->recommendation.dtype, pp::DType::bf16);
  EXPECT_EQ(r.requirements.size(), 6U);
  EXPECT_EQ(r.exit_code, pp::exit_code::kOk);
  EXPECT_EQ(p.driver.cuda_calls, 1);  // cuInit ran (alongside the workers)
}

// A GPU session sends cuInit's answer (protocol 8): the driver's agent is not asked, and the report
// is the session's answer. Where the engine would answer but its session did not (it crashed
// before, its cuInit failed), the agent is asked once the GPUs' plans are done (here at once);
// where no GPU's plan starts a session, alongside them as before.
TEST(Probe, AGpuSessionsAnswerForCuInitSparesTheDriversAgent) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200, kH200});
  p.options.require = {Mode::bf16};
  p.engine.sends_cuda = true;
  p.engine.cuda = p.driver.cuda;
  p.engine.cuda->devices[1].sm_count = 114;  // the session's answer, told from the agent's
  const auto r = p.run();
  EXPECT_EQ(p.driver.cuda_calls, 0);
  EXPECT_EQ(p.engine.cuda_answer_calls, 1);
  const auto* gpu1 = device(r, "GPU 1");
  ASSERT_NE(gpu1, nullptr);
  ASSERT_TRUE(gpu1->gpu.has_value());
  EXPECT_EQ(gpu1->gpu->sm_count, 114);
  EXPECT_EQ(gpu1->gpu->source, "cuda+nvml");
  EXPECT_EQ(r.exit_code, pp::exit_code::kOk);

  Probe silent;  // the engine answers for cuInit, but no session did
  silent.driver = pp::testing::driver_with({kH200, kH200});
  silent.options.require = {Mode::bf16};
  silent.engine.sends_cuda = true;
  const auto s = silent.run();
  EXPECT_EQ(silent.driver.cuda_calls, 1);
  EXPECT_GE(silent.engine.cuda_answer_calls, 1);
  ASSERT_NE(device(s, "GPU 1"), nullptr);
  EXPECT_EQ(device(s, "GPU 1")->gpu->source, "cuda+nvml");
  EXPECT_EQ(conclusions(s), conclusions(r));

  Probe cpu_only;  // no GPU's plan: no session to answer
  cpu_only.driver = pp::testing::driver_with({kH200});
  cpu_only.options.devices.all_gpus = false;
  cpu_only.options.devices.cpu = true;
  cpu_only.engine.sends_cuda = true;
  cpu_only.engine.cuda = cpu_only.driver.cuda;
  (void)cpu_only.run();
  EXPECT_EQ(cpu_only.engine.cuda_answer_calls, 0);
}

// Where no thread can be started, the CPU's checks and cuInit run on the run's own thread, in their
// turn: the run concludes the same, and nothing ends it (binary.hpp's child can start none).
TEST(Probe, WithoutASecondThreadTheRunConcludesTheSame) {
  const auto run = [] {
    Probe p;
    p.driver = pp::testing::driver_with({kH200, kT4});
    p.options.require = {Mode::bf16, Mode::fp16};
    p.system.paths.insert("/dev/nvidia0");
    const pp::Report r = p.run();
    return conclusions(r) + "cuInit asked " + std::to_string(p.driver.cuda_calls) + ", " +
           std::to_string(p.engine.plans_seen.size()) + " plans run\n";
  };
  const std::string expected = run();
  ASSERT_NE(expected.find("GPU 1 bf16: emulated"), std::string::npos) << expected;
  ASSERT_NE(expected.find("cuInit asked 1, 3 plans run"), std::string::npos) << expected;
  const pp::Expected<std::string> got = pp::testing::without_threads(run);
  ASSERT_TRUE(got) << got.error();
  EXPECT_EQ(*got, expected);
}

TEST(Probe, WorkersAreStartedAheadForTheGpusTheDeviceNodesSuggest) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200, kH200});
  for (const char* node :
       {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia-caps"}) {
    p.system.paths.insert(node);
  }
  p.run();
  ASSERT_EQ(p.engine.prestarts.size(), 1U);
  EXPECT_TRUE(p.engine.prestarts[0].cpu);
  EXPECT_EQ(p.engine.prestarts[0].gpus, 2);

  // Narrowed by CUDA_VISIBLE_DEVICES and by --device; none under --quick.
  const auto guess = [&](std::optional<std::string> visible, const char* devices) {
    return pp::expected_gpu_workers(pp::read_machine(p.system).nodes,
                                    pp::parse_cuda_visible_devices(visible),
                                    *pp::parse_device_selection(devices));
  };
  EXPECT_EQ(guess(std::nullopt, "all"), 2);
  EXPECT_EQ(guess(std::string("1"), "all"), 1);
  EXPECT_EQ(guess(std::string(""), "all"), 0);
  EXPECT_EQ(guess(std::nullopt, "1"), 1);
  EXPECT_EQ(guess(std::nullopt, "cpu"), 0);
  Probe quick;
  quick.options.quick = true;
  quick.run();
  EXPECT_TRUE(quick.engine.prestarts.empty());
  Probe none;  // no device node: no GPU worker ahead, the CPU's still
  none.run();
  ASSERT_EQ(none.engine.prestarts.size(), 1U);
  EXPECT_EQ(none.engine.prestarts[0].gpus, 0);
}

TEST(Probe, WorkersAreStartedAheadForTheGpusInView) {
  // Two device nodes: two GPU workers, unless --device names one.
  Probe two;
  two.driver = pp::testing::driver_with({kH200, kH200});
  two.system.paths.insert("/dev/nvidia0");
  two.system.paths.insert("/dev/nvidia1");
  two.run();
  ASSERT_EQ(two.engine.prestarts.size(), 1U);
  EXPECT_EQ(two.engine.prestarts[0].gpus, 2);
  EXPECT_TRUE(two.engine.prestarts[0].cpu);
  Probe second;
  second.driver = pp::testing::driver_with({kH200, kH200});
  second.system.paths = two.system.paths;
  second.options.devices = *pp::parse_device_selection("1");
  second.run();
  ASSERT_EQ(second.engine.prestarts.size(), 1U);
  EXPECT_EQ(second.engine.prestarts[0].gpus, 1);
}

TEST(Probe, BF16OnAT4IsEmulatedAndFailsTheGate) {
  Probe p;
  p.driver = pp::testing::driver_with({kT4});
  p.options.require = {Mode::bf16};
  const auto r = p.run();
  const auto* t4 = device(r, "GPU 0");
  ASSERT_NE(t4, nullptr);
  EXPECT_EQ(t4->find(Mode::bf16)->status, Status::emulated);
  EXPECT_NE(t4->find(Mode::bf16)->reason.find("slower than FP32"), std::string::npos);
  EXPECT_EQ(t4->find(Mode::fp16)->status, Status::native);
  EXPECT_EQ(t4->find(Mode::fp8_e4m3)->status, Status::unsupported);
  EXPECT_EQ(t4->recommendation.dtype, pp::DType::fp16);
  EXPECT_TRUE(t4->recommendation.loss_scaling);
  EXPECT_EQ(r.exit_code, pp::exit_code::kRequirementNotMet);
}

TEST(Probe, QuickRunsNoKernelAndSkipsCuInitWhenNvmlAnswers) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  p.options.quick = true;
  p.options.require = {Mode::bf16};
  const auto r = p.run();
  EXPECT_TRUE(p.engine.plans_seen.empty());
  EXPECT_EQ(p.driver.cuda_calls, 0);
  EXPECT_EQ(p.engine.lib_dir, "") << "--quick loads no LibTorch";
  const auto* gpu = device(r, "GPU 0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->find(Mode::bf16)->status, Status::not_tested);
  EXPECT_EQ(gpu->find(Mode::bf16)->reason, "--quick: no kernels run");
  EXPECT_FALSE(gpu->gpu->sm_count.has_value());  // NVML alone has no SM count
  EXPECT_EQ(r.exit_code, pp::exit_code::kOk);    // hardware-only gate under --quick
}

TEST(Probe, ExplicitDevicesAreCheckedAgainstWhatIsVisible) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200, kH200});
  p.options.devices.all_gpus = false;
  p.options.devices.gpu_indices = {5};
  const auto bad = p.run();
  ASSERT_TRUE(bad.error.has_value());
  EXPECT_NE(bad.error->message.find("GPU 5 does not exist (2 visible: 0-1)"), std::string::npos);
  EXPECT_EQ(bad.exit_code, pp::exit_code::kUsage);

  p.options.devices.gpu_indices = {1};
  const auto r = p.run();
  EXPECT_FALSE(r.error.has_value());
  EXPECT_FALSE(device(r, "GPU 0")->selected);
  EXPECT_EQ(device(r, "GPU 0")->find(Mode::bf16)->reason, "not selected (--device)");
  EXPECT_TRUE(device(r, "GPU 1")->selected);
  EXPECT_EQ(device(r, "GPU 1")->find(Mode::bf16)->status, Status::native);

  Probe none;
  none.options.devices.all_gpus = false;
  none.options.devices.gpu_indices = {0};
  const auto missing = none.run();
  EXPECT_EQ(missing.exit_code, pp::exit_code::kEnvironment);
}

TEST(Probe, AWorkerThatTimesOutFailsItsUnfinishedChecksWithExitFive) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  p.engine.answer = [&p](const pp::WorkerPlan& plan) {
    pp::WorkerResult r;
    r.kind = plan.kind;
    r.index = plan.index;
    r.stack = p.image;
    if (plan.kind == pp::DeviceKind::cuda) {
      r.smoke[Mode::fp32] = pp::testing::passed(1e-7, 1e-5);  // finished before the hang
      r.problem = pp::ErrorKind::timed_out;
      r.problem_message = "timed out after 60 s (--timeout)";
    } else {
      r.finished = true;
      for (Mode m : plan.smoke) r.smoke[m] = pp::testing::passed(1e-4);
    }
    return r;
  };
  const auto r = p.run();
  const auto* gpu = device(r, "GPU 0");
  EXPECT_EQ(gpu->find(Mode::fp32)->status, Status::native);
  EXPECT_EQ(gpu->find(Mode::bf16)->status, Status::failed);
  EXPECT_EQ(gpu->find(Mode::bf16)->failure, pp::ErrorKind::timed_out);
  EXPECT_EQ(gpu->find(Mode::bf16)->reason, "timed out after 60 s (--timeout)");
  EXPECT_EQ(r.exit_code, pp::exit_code::kTimedOut);
}

TEST(Probe, AWorkerThatCrashesFailsWithExitFour) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  p.engine.answer = [&p](const pp::WorkerPlan& plan) {
    pp::WorkerResult r;
    r.kind = plan.kind;
    r.stack = p.image;
    r.finished = plan.kind == pp::DeviceKind::cpu;
    if (plan.kind == pp::DeviceKind::cuda) {
      r.problem = pp::ErrorKind::crashed;
      r.problem_message = "the engine worker crashed (SIGSEGV)";
    }
    for (Mode m : plan.smoke) {
      if (plan.kind == pp::DeviceKind::cpu) r.smoke[m] = pp::testing::passed(1e-4);
    }
    return r;
  };
  const auto r = p.run();
  EXPECT_EQ(device(r, "GPU 0")->find(Mode::fp16)->reason, "the engine worker crashed (SIGSEGV)");
  EXPECT_EQ(r.exit_code, pp::exit_code::kCheckFailed);
}

TEST(Probe, MissingEngineLeavesChecksNotTestedAndSaysWhy) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  p.engine.is_installed = false;
  p.engine.answer = [](const pp::WorkerPlan& plan) {
    pp::WorkerResult r;
    r.kind = plan.kind;
    r.problem = pp::ErrorKind::unavailable;
    r.problem_message = "the kernel engine (precision-probe-engine) is not installed";
    return r;
  };
  const auto r = p.run();
  const auto* bf16 = device(r, "GPU 0")->find(Mode::bf16);
  EXPECT_EQ(bf16->status, Status::not_tested);
  EXPECT_EQ(bf16->failure, pp::ErrorKind::unavailable);
  EXPECT_NE(bf16->reason.find("not installed"), std::string::npos);
  EXPECT_TRUE(has_diagnostic(r, "engine-not-installed"));
  for (const auto& plan : p.engine.plans_seen) EXPECT_EQ(plan.kind, pp::DeviceKind::cpu);
  EXPECT_EQ(r.exit_code, pp::exit_code::kOk);  // nothing required, nothing failed
  // A GPU requirement cannot be met without an engine: the environment's fault (3), not 1.
  p.options.require = {Mode::bf16};
  EXPECT_EQ(p.run().exit_code, pp::exit_code::kEnvironment);
  // --quick runs no kernel: it needs no engine.
  p.options.quick = true;
  EXPECT_EQ(p.run().exit_code, pp::exit_code::kOk);
}

TEST(Probe, ACpuOnlyLibTorchCannotMeetAGpuRequirement) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  p.image = pp::testing::cpu_stack();
  p.options.require = {Mode::bf16};
  for (bool quick : {false, true}) {
    p.options.quick = quick;
    p.engine.plans_seen.clear();
    const auto r = p.run();
    EXPECT_EQ(r.exit_code, pp::exit_code::kEnvironment) << quick << ": " << r.exit_reason;
    EXPECT_NE(r.exit_reason.find("built without CUDA"), std::string::npos) << r.exit_reason;
    for (const auto& plan : p.engine.plans_seen) EXPECT_EQ(plan.kind, pp::DeviceKind::cpu);
    // The hardware verdict stands: the GPU has BF16; this LibTorch cannot use it.
    EXPECT_EQ(device(r, "GPU 0")->find(Mode::bf16)->hardware, pp::Hardware::native);
    EXPECT_EQ(device(r, "GPU 0")->find(Mode::nvfp4)->status, Status::unsupported);
  }
}

// A CUDA build whose libtorch_cuda.so is not there (./dev's cache of PyPI's torch, a partial
// install) says so, not "built without CUDA"; the CPU's checks still run on its CPU library.
TEST(Probe, ACudaBuildWithoutItsCudaLibrarySaysWhatIsMissing) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  p.image.cuda_built = false;  // version.py names CUDA 13.0; lib/libtorch_cuda.so is missing
  p.options.require = {Mode::bf16};
  const auto r = p.run();
  EXPECT_EQ(r.exit_code, pp::exit_code::kEnvironment) << r.exit_reason;
  const auto* bf16 = device(r, "GPU 0")->find(Mode::bf16);
  EXPECT_EQ(bf16->status, Status::not_tested);
  EXPECT_NE(bf16->reason.find("is a CUDA 13.0 build, but its libtorch_cuda.so is not in "
                              "/image/torch/lib"),
            std::string::npos)
      << bf16->reason;
  const auto it = std::find_if(r.diagnostics.begin(), r.diagnostics.end(),
                               [](const auto& d) { return d.code == "libtorch-without-cuda"; });
  ASSERT_NE(it, r.diagnostics.end());
  EXPECT_EQ(it->severity, pp::Severity::error);
  EXPECT_NE(it->message.find("libtorch_cuda.so is not in /image/torch/lib"), std::string::npos);
  ASSERT_EQ(p.engine.plans_seen.size(), 1U);
  EXPECT_EQ(p.engine.plans_seen[0].kind, pp::DeviceKind::cpu);
}

TEST(Probe, OutOfMemoryIsAStateOfTheMachineNotAFailure) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  p.engine.answer = [](const pp::WorkerPlan& plan) {
    pp::WorkerResult r;
    r.kind = plan.kind;
    r.index = plan.index;
    for (Mode m : plan.smoke) r.smoke[m] = pp::testing::passed(1e-4);
    for (Mode m : plan.amp) {
      pp::AmpOutcome o;
      o.error = "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 139.81 GiB total)";
      o.error_kind = pp::classify_error(o.error);
      r.amp[m] = o;
    }
    r.finished = true;
    return r;
  };
  auto r = p.run();
  const auto* amp = device(r, "GPU 0")->find(Mode::amp_bf16);
  EXPECT_EQ(amp->status, Status::not_tested);
  EXPECT_NE(amp->reason.find("out of memory"), std::string::npos);
  EXPECT_EQ(r.exit_code, pp::exit_code::kOk);  // not the 4 that drains a node
  p.options.require = {Mode::amp_bf16};
  r = p.run();
  EXPECT_EQ(r.exit_code, pp::exit_code::kEnvironment) << r.exit_reason;
}

TEST(Probe, GpuMissingFromTheBuildIsFlagged) {
  Probe p;
  p.driver = pp::testing::driver_with({kT4});
  p.image.arch_list = {"sm_80", "sm_90"};
  const auto r = p.run();
  const auto* t4 = device(r, "GPU 0");
  ASSERT_TRUE(t4->kernels.has_value());
  EXPECT_FALSE(t4->kernels->covered);
  EXPECT_TRUE(has_diagnostic(r, "arch-not-in-build"));
}

TEST(Probe, ArchReportsTheMatrixOffline) {
  Probe p;
  pp::Options o;
  o.command = pp::Command::arch;
  o.arch_cc = "7.5";
  const auto r =
      pp::run_arch(o, pp::ProbeDeps{p.system, p.driver, p.engine, pp::testing::image_of(&p.image)});
  ASSERT_EQ(r.devices.size(), 1U);
  const auto& d = r.devices[0];
  EXPECT_EQ(d.name, "compute capability 7.5 (Turing)");
  EXPECT_EQ(d.find(Mode::fp16)->hardware, pp::Hardware::native);
  EXPECT_EQ(d.find(Mode::fp16)->status, Status::not_tested);
  EXPECT_EQ(d.find(Mode::bf16)->hardware, pp::Hardware::emulated);
  EXPECT_EQ(d.find(Mode::fp8_e4m3)->status, Status::unsupported);
  ASSERT_TRUE(d.kernels.has_value());
  EXPECT_TRUE(d.kernels->covered);
  EXPECT_EQ(d.kernels->via, "sm_75");
  EXPECT_TRUE(p.engine.plans_seen.empty());
  EXPECT_EQ(p.driver.nvml_calls + p.driver.cuda_calls, 0);
}

TEST(Probe, ArchGatesOnItsVerdictsWhenAsked) {
  Probe p;
  pp::Options o;
  o.command = pp::Command::arch;
  o.arch_cc = "7.5";
  o.require = {Mode::bf16};
  auto r =
      pp::run_arch(o, pp::ProbeDeps{p.system, p.driver, p.engine, pp::testing::image_of(&p.image)});
  EXPECT_EQ(r.exit_code, pp::exit_code::kRequirementNotMet) << r.exit_reason;
  EXPECT_NE(r.exit_reason.find("bf16 on cc 7.5 is not_tested: the hardware is emulated"),
            std::string::npos)
      << r.exit_reason;
  o.arch_cc = "9.0";
  r = pp::run_arch(o, pp::ProbeDeps{p.system, p.driver, p.engine, pp::testing::image_of(&p.image)});
  EXPECT_EQ(r.exit_code, pp::exit_code::kOk) << r.exit_reason;
  // A build that cannot run there: the environment (3), as --quick says.
  p.image = pp::testing::cpu_stack();
  r = pp::run_arch(o, pp::ProbeDeps{p.system, p.driver, p.engine, pp::testing::image_of(&p.image)});
  EXPECT_EQ(r.exit_code, pp::exit_code::kEnvironment) << r.exit_reason;
  p.image = pp::testing::cuda_stack();
  p.image.arch_list = {"sm_80"};
  r = pp::run_arch(o, pp::ProbeDeps{p.system, p.driver, p.engine, pp::testing::image_of(&p.image)});
  EXPECT_EQ(r.exit_code, pp::exit_code::kEnvironment) << r.exit_reason;
  EXPECT_TRUE(p.engine.plans_seen.empty());
}

TEST(Probe, AnUngatedDeviceNeverChangesTheExitCodeButIsCalledOut) {
  // The documented rule: the CPU (reported, not gated by default) fails, and the exit code
  // stays 0; a diagnostic says what failed. Gated, the same failure is exit 4; a timeout, 5.
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  pp::ErrorKind cpu_problem = pp::ErrorKind::wrong_result;
  p.engine.answer = [&p, &cpu_problem](const pp::WorkerPlan& plan) {
    pp::WorkerResult r;
    r.kind = plan.kind;
    r.index = plan.index;
    r.stack = p.image;
    r.finished = true;
    for (Mode m : plan.amp) r.amp[m] = pp::testing::passed_amp(m);
    for (Mode m : plan.smoke) {
      r.smoke[m] = pp::testing::passed(1e-4);
      if (plan.kind == pp::DeviceKind::cpu && m == Mode::bf16) {
        r.smoke[m].ok = false;
        r.smoke[m].error_kind = cpu_problem;
        r.smoke[m].error = "what went wrong";
      }
    }
    return r;
  };
  auto r = p.run();
  EXPECT_EQ(device(r, "CPU")->find(Mode::bf16)->status, Status::failed);
  EXPECT_EQ(r.exit_code, pp::exit_code::kOk) << r.exit_reason;
  EXPECT_TRUE(has_diagnostic(r, "ungated-device-failed"));
  cpu_problem = pp::ErrorKind::timed_out;
  EXPECT_EQ(p.run().exit_code, pp::exit_code::kOk);
  p.options.devices.cpu = true;
  EXPECT_EQ(p.run().exit_code, pp::exit_code::kTimedOut);
  cpu_problem = pp::ErrorKind::wrong_result;
  r = p.run();
  EXPECT_EQ(r.exit_code, pp::exit_code::kCheckFailed);
  EXPECT_FALSE(has_diagnostic(r, "ungated-device-failed"));
}

// The stack is the image's, read from its files; the workers load its LibTorch (its torch/lib)
// and say what they loaded: a GPU worker's libtorch_cuda.so.
TEST(Probe, TheStackIsTheImagesWithTheLibraryTheEngineLoaded) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  const auto r = p.run();
  EXPECT_EQ(p.engine.lib_dir, "/image/torch/lib");
  EXPECT_EQ(r.stack.source, "image files");
  EXPECT_EQ(r.stack.libtorch_version, "2.11.0+cu130");
  EXPECT_EQ(r.stack.arch_list, pp::testing::cuda_stack().arch_list);
  EXPECT_EQ(r.stack.abi_version, "2.11.0");
  EXPECT_EQ(r.stack.library, "/image/torch/lib/libtorch_cuda.so");
  EXPECT_EQ(r.stack.cpu_threads, 8);
  EXPECT_TRUE(device(r, "GPU 0")->kernels.has_value());
}

// Without a PyTorch to load, no kernel runs: every check not tested, the reason saying so, a
// requirement an environment problem (exit 3); --quick still answers for the hardware.
TEST(Probe, WithoutAPyTorchNoKernelRunsAndARequirementIsAnEnvironmentProblem) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  p.image.available = false;
  p.options.require = {Mode::bf16};
  const auto r = p.run();
  EXPECT_TRUE(p.engine.plans_seen.empty());
  const auto* bf16 = device(r, "GPU 0")->find(Mode::bf16);
  EXPECT_EQ(bf16->status, Status::not_tested);
  EXPECT_NE(bf16->reason.find("no PyTorch or LibTorch was found"), std::string::npos)
      << bf16->reason;
  EXPECT_EQ(device(r, "CPU")->find(Mode::fp32)->status, Status::not_tested);
  EXPECT_EQ(r.exit_code, pp::exit_code::kEnvironment);
  EXPECT_TRUE(has_diagnostic(r, "libtorch-not-found"));
}

// A release below the engine's floor runs no kernel, saying which release and which floor.
TEST(Probe, AReleaseBelowTheFloorRunsNoKernelNamingBoth) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  p.image.libtorch_version = "2.8.0+cu128";
  p.options.require = {Mode::bf16};
  const auto r = p.run();
  EXPECT_TRUE(p.engine.plans_seen.empty());
  const auto* bf16 = device(r, "GPU 0")->find(Mode::bf16);
  EXPECT_EQ(bf16->status, Status::not_tested);
  EXPECT_NE(bf16->reason.find("PyTorch 2.8.0+cu128 is older than 2.9"), std::string::npos)
      << bf16->reason;
  EXPECT_EQ(r.exit_code, pp::exit_code::kEnvironment);
  EXPECT_TRUE(has_diagnostic(r, "libtorch-too-old"));
}

// tf32 is in its GPU's one plan, beside fp32 (the engine asks cuBLAS for TF32 by name: no process
// of its own), its benchmark and its share of the soak too; one session is started ahead for the
// GPUs.
TEST(Probe, EachGpusTf32IsInItsOnePlan) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  p.system.paths.insert("/dev/nvidia0");
  p.options.soak_s = 12;
  p.options.bench = true;
  const auto r = p.run();
  std::vector<const pp::WorkerPlan*> gpu_plans;
  for (const auto& plan : p.engine.plans_seen) {
    if (plan.kind == pp::DeviceKind::cuda) gpu_plans.push_back(&plan);
  }
  ASSERT_EQ(gpu_plans.size(), 1U);
  const pp::WorkerPlan& main = *gpu_plans.front();
  EXPECT_EQ(std::count(main.smoke.begin(), main.smoke.end(), Mode::tf32), 1);
  EXPECT_EQ(std::count(main.smoke.begin(), main.smoke.end(), Mode::fp32), 1);
  EXPECT_EQ(std::count(main.soak_modes.begin(), main.soak_modes.end(), Mode::tf32), 1);
  EXPECT_NEAR(main.soak_seconds, 12.0, 1e-9);
  ASSERT_FALSE(p.engine.prestarts.empty());
  EXPECT_EQ(p.engine.prestarts.front().gpus, 1);
  const auto* gpu = device(r, "GPU 0");
  EXPECT_EQ(gpu->find(Mode::tf32)->status, Status::native) << gpu->find(Mode::tf32)->reason;
  ASSERT_TRUE(gpu->soak.has_value());
  EXPECT_NEAR(gpu->soak->seconds, 12.0, 1e-9);
}

TEST(Probe, TrainingModesAreRunAndGated) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  p.options.require = {Mode::amp_bf16, Mode::amp_fp16};
  const auto r = p.run();
  const std::vector<pp::WorkerPlan> plans = p.engine.plans_seen;
  ASSERT_EQ(plans.size(), 2U);
  EXPECT_EQ(plans[1].amp, (std::vector<Mode>{Mode::amp_fp16, Mode::amp_bf16}));
  const auto* gpu = device(r, "GPU 0");
  const auto* amp = gpu->find(Mode::amp_fp16);
  ASSERT_NE(amp, nullptr);
  EXPECT_EQ(amp->status, Status::native);
  ASSERT_TRUE(amp->amp.has_value());
  EXPECT_TRUE(amp->amp->overflow_handled);
  EXPECT_EQ(r.exit_code, pp::exit_code::kOk);
}

TEST(Probe, AFailedTrainingRunFailsTheGateEvenIfTheMatmulsPass) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200});
  p.engine.answer = [&p](const pp::WorkerPlan& plan) {
    pp::WorkerResult r;
    r.kind = plan.kind;
    r.finished = true;
    r.stack = p.image;
    for (Mode m : plan.smoke) r.smoke[m] = pp::testing::passed(1e-4);
    for (Mode m : plan.amp) {
      r.amp[m] = pp::testing::passed_amp(m);
      if (m == Mode::amp_bf16) {
        r.amp[m].ok = false;
        r.amp[m].error_kind = pp::ErrorKind::wrong_result;
        r.amp[m].error = "wrong result: the loss did not go down (2.3026 -> 2.3100)";
      }
    }
    return r;
  };
  const auto r = p.run();
  const auto* gpu = device(r, "GPU 0");
  EXPECT_EQ(gpu->find(Mode::bf16)->status, Status::native);
  EXPECT_EQ(gpu->find(Mode::amp_bf16)->status, Status::failed);
  EXPECT_EQ(r.exit_code, pp::exit_code::kCheckFailed);
  // bf16 is no longer recommended: its training run failed.
  EXPECT_EQ(gpu->recommendation.dtype, pp::DType::fp16);
}

TEST(Probe, AmpOnAT4IsEmulatedForBf16) {
  Probe p;
  p.driver = pp::testing::driver_with({kT4});
  p.options.require = {Mode::amp_bf16};
  const auto r = p.run();
  EXPECT_EQ(device(r, "GPU 0")->find(Mode::amp_bf16)->status, Status::emulated);
  EXPECT_EQ(device(r, "GPU 0")->find(Mode::amp_fp16)->status, Status::native);
  EXPECT_EQ(r.exit_code, pp::exit_code::kRequirementNotMet);
}

TEST(Probe, MeasurementsRunAloneEverythingElseAtOnce) {
  // --nccl alone: the CPU's checks start before the driver is asked; the collective runs with the
  // per-device workers, in one go.
  Probe p;
  p.driver = pp::testing::driver_with({kH200, kH200});
  p.system.paths = {"/dev/nvidia0", "/dev/nvidia1"};
  p.options.nccl = true;
  p.run();
  // CPU; 2 GPUs and the collective
  EXPECT_EQ(p.engine.run_sizes, (std::vector<std::size_t>{1, 3}));
  EXPECT_EQ(p.engine.plans_seen.front().kind, pp::DeviceKind::cpu);
  EXPECT_EQ(p.engine.plans_seen.back().collective_ranks, 2);
  // With --bench: the CPU's checks, the GPUs; then the CPU's benchmark alone; then the
  // collective alone.
  Probe b;
  b.driver = pp::testing::driver_with({kH200, kH200});
  b.system.paths = {"/dev/nvidia0", "/dev/nvidia1"};
  b.options.nccl = true;
  b.options.bench = true;
  b.run();
  EXPECT_EQ(b.engine.run_sizes, (std::vector<std::size_t>{1, 2, 1, 1}));
  const std::vector<pp::WorkerPlan> plans = b.engine.plans_seen;
  ASSERT_EQ(plans.size(), 5U);
  EXPECT_EQ(plans[0].bench_size, 0);     // the CPU, without its benchmark
  EXPECT_EQ(plans[1].bench_size, 8192);  // a GPU
  EXPECT_EQ(plans[3].kind, pp::DeviceKind::cpu);
  EXPECT_EQ(plans[3].bench_size, 1024);
  EXPECT_TRUE(plans[3].amp.empty());
  EXPECT_EQ(plans[4].collective_ranks, 2);
}

// The start-up's order (docs/architecture.md, "Why these choices"): the workers are started ahead
// and the CPU's checks handed to the engine before the driver is asked, so that a driver that
// hangs costs them nothing.
TEST(Probe, WorkersStartAndTheCpusChecksBeginBeforeTheDriverIsAsked) {
  struct DriverAfterTheCpu : pp::testing::FakeDriver {
    DriverAfterTheCpu(FakeDriver driver, FakeEngine& e)
        : FakeDriver(std::move(driver)), engine(&e) {}
    FakeEngine* engine;
    bool prestarted = false;
    bool cpu_began = false;
    pp::NvmlSnapshot query_nvml() override {
      prestarted = !engine->prestarts.empty();
      // The CPU's checks run on a thread of their own: wait (a while) for them to reach the engine.
      for (int i = 0; i < 1000 && !cpu_began; ++i) {
        {
          const std::lock_guard<std::mutex> lock(engine->mutex);
          cpu_began = !engine->calls.empty();
        }
        if (!cpu_began) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      return FakeDriver::query_nvml();
    }
  };
  Probe p;
  DriverAfterTheCpu driver(pp::testing::driver_with({kH200}), p.engine);
  p.system.paths = {"/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version"};
  const pp::Report r = pp::run_probe(
      p.options, pp::ProbeDeps{p.system, driver, p.engine, pp::testing::image_of(&p.image)});
  EXPECT_TRUE(driver.prestarted);
  EXPECT_TRUE(driver.cpu_began);
  EXPECT_EQ(driver.nvml_calls, 1);
  ASSERT_FALSE(p.engine.calls.empty());
  EXPECT_EQ(p.engine.calls.front().front().kind, pp::DeviceKind::cpu);
  EXPECT_EQ(r.exit_code, pp::exit_code::kOk);
}

// A recipe the GPU has and this LibTorch refuses is unsupported, naming the layer, and is not
// asked of the engine; a recipe every layer has is run.
TEST(Probe, ARecipeTheStackLacksIsUnsupportedWithTheLayerAndNotRun) {
  const FakeGpu b200{"NVIDIA B200", {10, 0}, 148, 180};
  Probe p;
  p.driver = pp::testing::driver_with({b200});
  p.options.require = {Mode::fp8_blockwise, Mode::nvfp4};
  const auto r = p.run();
  const auto* gpu = device(r, "GPU 0");
  ASSERT_NE(gpu, nullptr);
  const auto* blockwise = gpu->find(Mode::fp8_blockwise);
  EXPECT_EQ(blockwise->hardware, pp::Hardware::native);
  EXPECT_EQ(blockwise->status, Status::unsupported);
  EXPECT_NE(blockwise->reason.find("cc 10.0: LibTorch's scaled_mm runs block-wise FP8 only on cc "
                                   "9.0 (its _check_deepseek_support)"),
            std::string::npos)
      << blockwise->reason;
  EXPECT_NE(blockwise->reason.find("(LibTorch 2.11)"), std::string::npos);
  EXPECT_EQ(gpu->find(Mode::nvfp4)->status, Status::native);
  EXPECT_EQ(gpu->find(Mode::mxfp8)->status, Status::native);
  const std::vector<Mode> planned = p.engine.plans_seen.back().smoke;
  EXPECT_EQ(std::count(planned.begin(), planned.end(), Mode::fp8_blockwise), 0);
  EXPECT_EQ(std::count(planned.begin(), planned.end(), Mode::nvfp4), 1);
  EXPECT_EQ(r.exit_code, pp::exit_code::kRequirementNotMet) << r.exit_reason;
  EXPECT_NE(r.exit_reason.find("fp8_blockwise"), std::string::npos) << r.exit_reason;
}

TEST(Probe, AnOlderLibTorchOrCudaIsNamedWithWhatToUpgrade) {
  Probe p;
  p.driver = pp::testing::driver_with({FakeGpu{"NVIDIA B200", {10, 0}, 148, 180}});
  p.image.libtorch_version = "2.10.0";
  p.image.cuda_version = pp::Version{12, 8};
  p.options.quick = true;
  const auto r = p.run();
  const auto* gpu = device(r, "GPU 0");
  ASSERT_NE(gpu, nullptr);
  const auto* mxfp8 = gpu->find(Mode::mxfp8);
  EXPECT_EQ(mxfp8->status, Status::unsupported);
  EXPECT_NE(
      mxfp8->reason.find("cannot run the mxfp8 check (aten::_scaled_mm_v2) through its stable "
                         "C ABI: upgrade to LibTorch (PyTorch) 2.11 or later"),
      std::string::npos)
      << mxfp8->reason;
  // Quick: a mode every layer has is native hardware, not tested; the row-wise recipe is there.
  EXPECT_EQ(gpu->find(Mode::fp8_rowwise)->status, Status::not_tested);
  p.image.libtorch_version = "2.11.0";
  const auto newer = p.run();
  EXPECT_NE(device(newer, "GPU 0")
                ->find(Mode::fp8_blockwise)
                ->reason.find("built with CUDA 12.8, and fp8_blockwise needs CUDA 12.9+"),
            std::string::npos);
}

TEST(Probe, ArchSaysWhatThisBuildLacksForARecipeOffline) {
  Probe p;
  pp::Options o;
  o.command = pp::Command::arch;
  o.arch_cc = "12.0";
  o.require = {Mode::mxfp4};
  const auto r =
      pp::run_arch(o, pp::ProbeDeps{p.system, p.driver, p.engine, pp::testing::image_of(&p.image)});
  const auto& d = r.devices.at(0);
  EXPECT_EQ(d.find(Mode::mxfp4)->hardware, pp::Hardware::native);
  EXPECT_EQ(d.find(Mode::mxfp4)->status, Status::unsupported);
  EXPECT_NE(d.find(Mode::mxfp4)->reason.find("only on cc 10.x"), std::string::npos);
  EXPECT_EQ(d.find(Mode::nvfp4)->status, Status::not_tested);  // every layer has it
  EXPECT_EQ(d.find(Mode::int8)->hardware, pp::Hardware::native);
  EXPECT_EQ(r.exit_code, pp::exit_code::kRequirementNotMet) << r.exit_reason;
  o.arch_cc = "10.3";  // B300: its tensor cores dropped int8
  o.require = {Mode::int8};
  const auto b300 =
      pp::run_arch(o, pp::ProbeDeps{p.system, p.driver, p.engine, pp::testing::image_of(&p.image)});
  EXPECT_EQ(b300.devices.at(0).find(Mode::int8)->hardware, pp::Hardware::emulated);
  EXPECT_EQ(b300.devices.at(0).find(Mode::mxfp4)->status, Status::not_tested);
}

// Every GPU soaks the same inputs (the run's seed): like GPUs' golden results must agree.
TEST(Probe, EveryGpuSoaksTheSameInputs) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200, kH200});
  p.options.soak_s = 1.0;
  const pp::Report r = p.run();
  const std::vector<pp::WorkerPlan> plans = p.engine.plans_seen;
  ASSERT_EQ(plans.size(), 3U);
  const pp::WorkerPlan& gpu0 = plans[1];
  const pp::WorkerPlan& gpu1 = plans[2];
  EXPECT_NE(gpu0.seed, gpu1.seed);  // the smoke tests' inputs differ per device
  EXPECT_EQ(gpu0.soak_seed, gpu1.soak_seed);
  EXPECT_EQ(gpu0.soak_modes, gpu1.soak_modes);
  EXPECT_FALSE(gpu0.soak_modes.empty());
  EXPECT_DOUBLE_EQ(gpu0.soak_seconds, gpu1.soak_seconds);  // less tf32's share, soaked apart
  for (const char* gpu : {"GPU 0", "GPU 1"}) {
    ASSERT_TRUE(device(r, gpu)->soak.has_value()) << gpu;
    EXPECT_DOUBLE_EQ(device(r, gpu)->soak->seconds, 1.0) << gpu;
  }
  EXPECT_EQ(plans[0].soak_seconds, 0.0);  // the CPU is not selected
}

// The soak's GEMM size: 16384 on a GPU of 16 GiB or more, 8192 below (from the total memory, so
// that like GPUs soak alike), 256 on the CPU; --bench-size says it for every device.
TEST(Probe, TheSoakSizeFollowsTheDevicesMemoryUnlessBenchSizeSays) {
  Probe p;
  p.driver = pp::testing::driver_with({kH200, kT4});
  p.options.soak_s = 1.0;
  p.options.devices.cpu = true;
  (void)p.run();
  const std::vector<pp::WorkerPlan> plans = p.engine.plans_seen;
  ASSERT_EQ(plans.size(), 3U);
  EXPECT_EQ(plans[0].soak_size, 256);
  EXPECT_EQ(plans[1].soak_size, 16384);
  EXPECT_EQ(plans[2].soak_size, 8192);
  Probe sized;
  sized.driver = pp::testing::driver_with({kH200});
  sized.options.soak_s = 1.0;
  sized.options.bench_size = 4096;
  (void)sized.run();
  const std::vector<pp::WorkerPlan> sized_plans = sized.engine.plans_seen;
  ASSERT_EQ(sized_plans.size(), 2U);
  EXPECT_EQ(sized_plans[1].soak_size, 4096);
}
