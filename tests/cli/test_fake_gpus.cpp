// The binary end to end against a fake NVIDIA driver (fake_driver.cpp) and the fake engine:
// device facts, selection, CUDA_VISIBLE_DEVICES, verdicts and exit codes for GPUs that are not
// there, on a machine without a GPU.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "binary.hpp"
#include "strings/strings.hpp"
#include "precision_probe/modes.hpp"

namespace pp = precision_probe;
using nlohmann::json;
using pp::testing::fake_driver_env;
using pp::testing::kFakeH200;
using pp::testing::kFakeT4;
using pp::testing::run_probe_binary;
using pp::testing::with;

namespace {

// The text report's wrapped lines joined: a line break and a continuation's indent (four spaces
// or more; a table's rows have two) read as a space.
std::string unwrapped(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      out += text[i];
      continue;
    }
    std::size_t next = i + 1;
    while (next < text.size() && text[next] == ' ') ++next;
    if (next < i + 5) {
      out += '\n';
    } else {
      out += ' ';
      i = next - 1;
    }
  }
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::size_t lines_of(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST(FakeGpus, H200ReportsFactsAndNativeBf16AndFp8) {
  const auto r =
      run_probe_binary({"--format", "json", "--require", "bf16,fp8"}, fake_driver_env(kFakeH200));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("driver").at("status"), "ok");
  EXPECT_EQ(j.at("driver").at("version"), "580.159.04");
  EXPECT_EQ(j.at("driver").at("cuda_version"), "13.0");
  const json& gpu = j.at("devices").at(0);
  EXPECT_EQ(gpu.at("name"), "NVIDIA H200");
  EXPECT_EQ(gpu.at("gpu").at("compute_capability"), "9.0");
  EXPECT_EQ(gpu.at("gpu").at("sm_count"), 132);
  EXPECT_EQ(gpu.at("gpu").at("memory_total_bytes"), 141ULL << 30U);
  EXPECT_EQ(gpu.at("gpu").at("uuid").get<std::string>().rfind("GPU-", 0), 0U);
  EXPECT_EQ(gpu.at("precisions").at("bf16").at("status"), "native");
  EXPECT_EQ(gpu.at("precisions").at("fp8_e5m2").at("status"), "native");
  EXPECT_EQ(gpu.at("precisions").at("nvfp4").at("status"), "unsupported");
  EXPECT_EQ(gpu.at("recommendation").at("dtype"), "bf16");
  EXPECT_EQ(j.at("requirements").size(), 3U);
}

// Blackwell through the fake driver: the block-scaled recipes run (on the fake engine), block-wise
// fp8 is refused by this LibTorch's own check and says so, `--require fp4` gates NVFP4 and
// `--require fp8` still means the per-tensor pair.
TEST(FakeGpus, B200RunsTheBlockScaledRecipesAndNamesWhatLibTorchRefuses) {
  const auto r = run_probe_binary({"--format", "json", "--require", "fp8,fp4,mxfp8,int8"},
                                  fake_driver_env("NVIDIA B200:10.0:148:180"));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json j = json::parse(r.out);
  const json& p = j.at("devices").at(0).at("precisions");
  for (const char* key : {"fp8_e4m3", "fp8_rowwise", "mxfp8", "nvfp4", "mxfp4", "int8"}) {
    EXPECT_EQ(p.at(key).at("status"), "native") << key;
  }
  EXPECT_EQ(p.at("fp8_blockwise").at("hardware"), "native");
  EXPECT_EQ(p.at("fp8_blockwise").at("status"), "unsupported");
  EXPECT_NE(p.at("fp8_blockwise").at("reason").get<std::string>().find("_check_deepseek_support"),
            std::string::npos);
  EXPECT_FALSE(p.at("fp8_blockwise").at("smoke").at("ran"));  // refused before it was called
  std::vector<std::string> required;
  for (const json& q : j.at("requirements")) required.push_back(q.at("mode"));
  EXPECT_EQ(required, (std::vector<std::string>{"fp8_e4m3", "fp8_e5m2", "nvfp4", "mxfp8", "int8"}));
  const auto blockwise =
      run_probe_binary({"--require", "fp8_blockwise"}, fake_driver_env("NVIDIA B200:10.0:148:180"));
  EXPECT_EQ(blockwise.exit_code, 1) << blockwise.out;
  // On an H200 the blocks-scaled formats are the architecture's to lack.
  const auto h200 = run_probe_binary({"--require", "nvfp4"}, fake_driver_env(kFakeH200));
  EXPECT_EQ(h200.exit_code, 1);
  EXPECT_NE(unwrapped(h200.out).find("block-scaled MMA (MX and NVFP4 formats) needs Blackwell"),
            std::string::npos)
      << h200.out;
}

// --soak across three like GPUs: the one whose golden result differs from the majority is named
// and fails (exit 4); a slow one is a straggler; the report is valid JSON for the schema.
TEST(FakeGpus, TheSoakComparesLikeGpusAndNamesTheOddOne) {
  const std::string three = std::string(kFakeH200) + ";" + kFakeH200 + ";" + kFakeH200;
  const auto odd =
      run_probe_binary({"--soak", "1", "--soak-modes", "bf16,fp8_rowwise", "--format", "json"},
                       with(fake_driver_env(three), {"FAKE_ENGINE=soakbad:2"}));
  EXPECT_EQ(odd.exit_code, 4) << odd.out;
  const json j = json::parse(odd.out);
  const json& gpu2 = j.at("devices").at(2);
  EXPECT_NE(gpu2.at("soak").at("golden_disagreement").get<std::string>().find("GPU 0, GPU 1"),
            std::string::npos);
  EXPECT_EQ(gpu2.at("precisions").at("bf16").at("status"), "failed");
  EXPECT_EQ(j.at("devices").at(0).at("precisions").at("bf16").at("status"), "native");
  bool named = false;
  for (const json& d : j.at("diagnostics")) {
    named = named || (d.at("code") == "soak-golden-disagrees" &&
                      d.at("message").get<std::string>().find("GPU-") != std::string::npos);
  }
  EXPECT_TRUE(named) << odd.out;

  const auto slow = run_probe_binary({"--soak", "1", "--soak-modes", "bf16"},
                                     with(fake_driver_env(three), {"FAKE_ENGINE=soakslow:1"}));
  EXPECT_EQ(slow.exit_code, 0) << slow.out;
  EXPECT_NE(slow.out.find("straggler: bf16: 50 TFLOP/s under load, 50 % below the median 100"),
            std::string::npos)
      << slow.out;
  // An injected fault on GPU 1 only: caught there, marked as injected.
  const auto injected =
      run_probe_binary({"--soak", "1", "--format", "json"},
                       with(fake_driver_env(three), {"PRECISION_PROBE_INJECT_FAULT=bf16:30:1"}));
  EXPECT_EQ(injected.exit_code, 4);
  const json k = json::parse(injected.out);
  EXPECT_TRUE(k.at("devices").at(1).at("soak").at("injected").get<bool>());
  EXPECT_FALSE(k.at("devices").at(0).at("soak").at("injected").get<bool>());
  EXPECT_EQ(
      k.at("devices").at(1).at("soak").at("modes").at("bf16").at("first_mismatch").at("iteration"),
      30);
}

// The soak's telemetry, from the driver agent through the fake NVML: an Xid, uncorrectable ECC
// errors that grow and a thermal slowdown are the GPU's evidence, named in a diagnostic.
TEST(FakeGpus, TheSoaksTelemetryNamesAnErroringGpuWithTheEvidence) {
  const std::string dir = pp::testing::make_temp_dir();
  const auto r = run_probe_binary(
      {"--soak", "2", "--soak-modes", "bf16", "--format", "json", "--prom", dir + "/m.prom",
       "--markdown", dir + "/s.md", "--text", dir + "/r.txt"},
      with(fake_driver_env(kFakeH200), {"FAKE_NVIDIA_XID=79", "FAKE_NVIDIA_CLOCK_REASONS=0x44",
                                        "FAKE_NVIDIA_ECC_GROWS=1", "FAKE_NVIDIA_TEMP=91"}));
  EXPECT_EQ(r.exit_code, 0) << r.out;  // no wrong number: the exit stands
  const json j = json::parse(r.out);
  const json& t = j.at("devices").at(0).at("soak").at("telemetry");
  EXPECT_GE(t.at("samples").get<int>(), 1) << t.dump();
  EXPECT_EQ(t.at("max_temperature_c"), 91);
  EXPECT_EQ(t.at("xids"), json::array({79}));
  EXPECT_EQ(t.at("clock_events"), json::array({"sw_power_cap", "hw_thermal_slowdown"}));
  std::string health;
  for (const json& d : j.at("diagnostics")) {
    if (d.at("code") == "soak-gpu-health") health = d.dump();
  }
  EXPECT_NE(health.find("Xid 79"), std::string::npos) << r.out;
  EXPECT_NE(health.find("hw_thermal_slowdown"), std::string::npos) << health;
  EXPECT_NE(health.find("\"severity\":\"error\""), std::string::npos) << health;
  EXPECT_NE(health.find("GPU-"), std::string::npos) << health;  // the UUID, for the ticket
  // Every format shows the telemetry, not only JSON.
  const std::string text = pp::testing::read_all(dir + "/r.txt");
  EXPECT_NE(text.find("telemetry: "), std::string::npos) << text;
  EXPECT_NE(text.find("up to 91 °C"), std::string::npos) << text;
  EXPECT_NE(text.find("hw_thermal_slowdown"), std::string::npos) << text;
  EXPECT_NE(text.find("Xid 79"), std::string::npos) << text;
  const std::string md = pp::testing::read_all(dir + "/s.md");
  EXPECT_NE(md.find("Telemetry during the soak (NVML):"), std::string::npos) << md;
  EXPECT_NE(md.find("- GPU 0: "), std::string::npos) << md;
  const std::string prom = pp::testing::read_all(dir + "/m.prom");
  EXPECT_NE(prom.find(R"(precision_probe_soak_max_temperature_celsius{gpu="0",)"),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("\"} 91\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find(R"(,reason="hw_thermal_slowdown"} 1)"), std::string::npos) << prom;
  EXPECT_NE(prom.find(R"(precision_probe_soak_xid_events{gpu="0",)"), std::string::npos);
  EXPECT_NE(prom.find(R"(source="ecc_uncorrected"})"), std::string::npos) << prom;
  bool available = false;
  const std::string problems = pp::testing::promtool_problems(prom, available);
  if (!available) GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  EXPECT_EQ(problems, "") << prom;
}

// A worker that dies in its soak is no pass, whatever its lines said; a fault asked for at a
// result the soak never reaches is said, not claimed.
TEST(FakeGpus, ASoakCutShortFailsAndAnInjectionNeverReachedIsSaid) {
  const auto died = run_probe_binary({"--soak", "1", "--soak-modes", "bf16", "--format", "json"},
                                     with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=soakcrash"}));
  EXPECT_EQ(died.exit_code, 4) << died.out;
  const json d = json::parse(died.out).at("devices").at(0);
  EXPECT_FALSE(d.at("soak").at("modes").at("bf16").at("ok").get<bool>());
  EXPECT_NE(d.at("soak").at("modes").at("bf16").at("error").get<std::string>().find(
                "the soak was cut short"),
            std::string::npos);
  const auto missed = run_probe_binary(
      {"--soak", "1", "--soak-modes", "bf16", "--format", "json"},
      with(fake_driver_env(kFakeH200), {"PRECISION_PROBE_INJECT_FAULT=bf16:5000"}));
  EXPECT_EQ(missed.exit_code, 0) << missed.out;
  const json m = json::parse(missed.out);
  const json& soak = m.at("devices").at(0).at("soak");
  EXPECT_FALSE(soak.at("injected").get<bool>());
  EXPECT_NE(soak.at("injection_note").get<std::string>().find("did not reach"), std::string::npos);
  bool warned = false;
  for (const json& x : m.at("diagnostics")) {
    warned = warned || (x.at("code") == "soak-fault-injected" && x.at("severity") == "warning");
  }
  EXPECT_TRUE(warned) << missed.out;
}

// A fault that no device's soak takes (no GPU 99; the CPU, not soaked) injects nothing, and the
// report says so (docs/soak.md); an empty value is unset, as for every variable.
TEST(FakeGpus, AnInjectionNoDeviceTakesIsSaidAndAnEmptyOneIsUnset) {
  for (const char* spec : {"bf16:1:99", "bf16:1:cpu", "fp8_e4m3:1"}) {
    const auto r = run_probe_binary(
        {"--soak", "1", "--soak-modes", "bf16", "--format", "json"},
        with(fake_driver_env(kFakeH200), {std::string("PRECISION_PROBE_INJECT_FAULT=") + spec}));
    EXPECT_EQ(r.exit_code, 0) << spec << ": " << r.out;
    const json j = json::parse(r.out);
    const json& soak = j.at("devices").at(0).at("soak");
    EXPECT_FALSE(soak.at("injected").get<bool>());
    const std::string note = soak.at("injection_note");
    EXPECT_NE(note.find("PRECISION_PROBE_INJECT_FAULT names"), std::string::npos) << spec;
    EXPECT_NE(note.find("nothing was injected"), std::string::npos) << note;
    const std::string where = std::string(spec) == "bf16:1:99" ? "bf16 on GPU 99, which this run"
                              : std::string(spec) == "bf16:1:cpu"
                                  ? "bf16 on the CPU, which this run"
                                  : "fp8_e4m3, which no device";
    EXPECT_NE(note.find(where), std::string::npos) << note;
    int warnings = 0;
    for (const json& x : j.at("diagnostics")) {
      if (x.at("code") == "soak-fault-injected" && x.at("severity") == "warning") {
        ++warnings;
        EXPECT_NE(x.at("message").get<std::string>().find("GPU 0: " + note), std::string::npos)
            << x.dump();
      }
    }
    EXPECT_EQ(warnings, 1) << r.out;
  }
  const auto empty =
      run_probe_binary({"--soak", "1", "--soak-modes", "bf16", "--format", "json"},
                       with(fake_driver_env(kFakeH200), {"PRECISION_PROBE_INJECT_FAULT="}));
  EXPECT_EQ(empty.exit_code, 0) << empty.out;
  EXPECT_EQ(json::parse(empty.out).at("devices").at(0).at("soak").at("injection_note"), "");
}

// A GPU newer than this probe (a compute capability it does not know) gets no native verdict: no
// check runs on it, each mode says why, and a requirement is not met.
TEST(FakeGpus, AGpuOfAnUnknownComputeCapabilityGetsNoNativeVerdict) {
  const auto r = run_probe_binary({"--require", "fp32", "--format", "json"},
                                  fake_driver_env("NVIDIA Future:13.0:160:192"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const json gpu = json::parse(r.out).at("devices").at(0);
  EXPECT_EQ(gpu.at("gpu").at("architecture"), "unknown");
  for (const auto& [mode, p] : gpu.at("precisions").items()) {
    EXPECT_EQ(p.at("hardware"), "unsupported") << mode;
    EXPECT_EQ(p.at("status"), "unsupported") << mode;
    EXPECT_NE(p.at("reason").get<std::string>().find(
                  "cc 13.0: unknown compute capability, newer than every one"),
              std::string::npos)
        << p.dump();
    // No check was asked of it.
    EXPECT_FALSE(p.at("smoke").at("ran").get<bool>()) << mode;
  }
  EXPECT_EQ(gpu.at("recommendation").at("dtype"), "fp32");
}

TEST(FakeGpus, T4RunsBf16OnlyEmulatedSoTheGateSaysOne) {
  const auto r = run_probe_binary({"--require", "bf16"}, fake_driver_env(kFakeT4));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("bf16          emulated     emulated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recommendation: fp16 with dynamic loss scaling"), std::string::npos)
      << r.out;
  EXPECT_EQ(run_probe_binary({"--require", "fp16"}, fake_driver_env(kFakeT4)).exit_code, 0);
}

TEST(FakeGpus, EmptyCudaVisibleDevicesHidesEveryGpu) {
  const auto r = run_probe_binary({"--require", "bf16", "--format", "json"},
                                  with(fake_driver_env(kFakeH200), {"CUDA_VISIBLE_DEVICES="}));
  EXPECT_EQ(r.exit_code, 3);
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("driver").at("status"), "no_devices");
  EXPECT_EQ(j.at("driver").at("cu_init").at("name"), "CUDA_ERROR_NO_DEVICE");
}

TEST(FakeGpus, DeviceSelectionUsesVisibleIndices) {
  const std::string two = std::string(kFakeH200) + ";" + kFakeT4;
  const auto r = run_probe_binary({"--device", "1", "--require", "fp16", "--format", "json"},
                                  fake_driver_env(two));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("devices").at(0).at("selected"), false);
  EXPECT_EQ(j.at("devices").at(0).at("precisions").at("fp16").at("status"), "not_tested");
  EXPECT_EQ(j.at("devices").at(1).at("selected"), true);
  EXPECT_EQ(j.at("devices").at(1).at("name"), "Tesla T4");
  // CUDA_VISIBLE_DEVICES=1 renumbers: the T4 becomes GPU 0.
  const auto renumbered = run_probe_binary({"--device", "0", "--format", "json"},
                                           with(fake_driver_env(two), {"CUDA_VISIBLE_DEVICES=1"}));
  EXPECT_EQ(json::parse(renumbered.out).at("devices").at(0).at("name"), "Tesla T4");
  const auto missing = run_probe_binary({"--device", "2"}, fake_driver_env(two));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("GPU 2 does not exist (2 visible: 0-1)"), std::string::npos)
      << missing.err;
}

TEST(FakeGpus, QuickLaunchesNoKernel) {
  // The engine would hang: --quick must not start it.
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_probe_binary({"--quick", "--require", "bf16", "--format", "json"},
                                  with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=hang"}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("run").at("quick"), true);
  EXPECT_EQ(j.at("devices").at(0).at("precisions").at("bf16").at("status"), "not_tested");
  EXPECT_EQ(j.at("driver").at("cuda_queried"), false);  // NVML answered: no cuInit
}

TEST(FakeGpus, AStackThatCannotRunOnTheGpuIsAnEnvironmentProblemEvenUnderQuick) {
  // The image's PyTorch a CPU-only build: a GPU requirement exits 3, with and without --quick
  // (its files say so). The CPU gate is not affected.
  for (bool quick : {false, true}) {
    std::vector<std::string> args = {"--require", "bf16", "--format", "json"};
    if (quick) args.emplace_back("--quick");
    const auto r =
        run_probe_binary(args, with(fake_driver_env(kFakeH200), {pp::testing::fake_stack("cpu")}));
    EXPECT_EQ(r.exit_code, 3) << (quick ? "--quick" : "") << "\n" << r.err;
    const json j = json::parse(r.out);
    const json& bf16 = j.at("devices").at(0).at("precisions").at("bf16");
    EXPECT_EQ(bf16.at("status"), "not_tested");
    EXPECT_EQ(bf16.at("hardware"), "native");
    EXPECT_NE(bf16.at("reason").get<std::string>().find("built without CUDA"), std::string::npos)
        << bf16.dump();
  }
}

TEST(FakeGpus, AnEngineThatIsMissingOrCannotStartIsAnEnvironmentProblem) {
  // No engine, an engine file that cannot be run: a full run's GPU requirement exits 3, not
  // tested; --quick, which needs no engine, answers for the hardware and the image's stack.
  const std::string empty_dir = pp::testing::make_temp_dir();
  const std::string empty_engine = empty_dir + "/precision-probe-engine";
  std::ofstream(empty_engine).flush();
  ::chmod(empty_engine.c_str(), 0755);
  for (const std::string& engine : {std::string("PRECISION_PROBE_ENGINE=/nonexistent/engine"),
                                    "PRECISION_PROBE_ENGINE=" + empty_engine,
                                    std::string("PRECISION_PROBE_ENGINE=/etc/hostname")}) {
    for (bool quick : {false, true}) {
      std::vector<std::string> args = {"--require", "bf16", "--format", "json"};
      if (quick) args.emplace_back("--quick");
      const auto r = run_probe_binary(args, with(fake_driver_env(kFakeH200), {engine}));
      EXPECT_EQ(r.exit_code, quick ? 0 : 3) << engine << (quick ? " --quick" : "") << "\n" << r.err;
      const json j = json::parse(r.out);
      EXPECT_EQ(j.at("devices").at(0).at("precisions").at("bf16").at("status"), "not_tested");
      EXPECT_EQ(j.at("devices").at(0).at("precisions").at("bf16").at("hardware"), "native");
    }
  }
  ::unlink(empty_engine.c_str());
  ::rmdir(empty_dir.c_str());
}

TEST(FakeGpus, MemoryHeldByOthersLeavesChecksUntestedAndNamesTheHolders) {
  // Another process holds 136 of 141 GiB; the training run then runs out of memory.
  const auto env =
      with(fake_driver_env(kFakeH200), {"FAKE_MEMORY_USED_PCT=97", "FAKE_GPU_PROCESSES=4242:136",
                                        "FAKE_ENGINE=oom:amp_bf16", "FAKE_ENGINE_ON=cuda"});
  const auto r = run_probe_binary({"--format", "json"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const json& gpu = j.at("devices").at(0);
  EXPECT_EQ(gpu.at("amp").at("amp_bf16").at("status"), "not_tested");
  EXPECT_EQ(gpu.at("gpu").at("processes").at(0).at("pid"), 4242);
  EXPECT_EQ(gpu.at("gpu").at("processes").at(0).at("used_bytes"), 136LL << 30);
  bool named = false;
  for (const auto& d : j.at("diagnostics")) {
    if (d.at("code") != "gpu-memory-busy") continue;
    const std::string message = d.at("message");
    named = message.find("PID 4242") != std::string::npos &&
            message.find("amp_bf16 could not run here") != std::string::npos;
  }
  EXPECT_TRUE(named) << j.at("diagnostics").dump(2);
  // A requirement that needed the memory: the environment (3), never a failed check (4).
  const auto gated = run_probe_binary({"--require", "amp_bf16"}, env);
  EXPECT_EQ(gated.exit_code, 3) << gated.out;
}

TEST(FakeGpus, PrometheusCarriesTheHardwareVerdictSoQuickIsNotAlarming) {
  // Under --quick nothing is native by status (no kernel ran), but the hardware verdict is there:
  // the documented alert on bf16 reads it and stays quiet on a healthy H200.
  const auto quick =
      run_probe_binary({"--quick", "--format", "prometheus"}, fake_driver_env(kFakeH200));
  EXPECT_EQ(quick.exit_code, 0) << quick.err;
  EXPECT_NE(quick.out.find(R"(precision_probe_hardware_native{gpu="0",UUID="GPU-)"),
            std::string::npos)
      << quick.out;
  EXPECT_NE(quick.out.find(R"(modelName="NVIDIA H200",)"), std::string::npos);
  EXPECT_NE(quick.out.find(R"(kind="cuda",mode="bf16"} 1)"), std::string::npos);
  const auto t4 = run_probe_binary({"--quick", "--format", "prometheus"}, fake_driver_env(kFakeT4));
  EXPECT_NE(t4.out.find(R"(modelName="Tesla T4",)"), std::string::npos);
  EXPECT_NE(t4.out.find(R"(kind="cuda",mode="bf16"} 0)"), std::string::npos) << t4.out;
  const auto arch = run_probe_binary({"arch", "9.0", "--format", "prometheus"});
  EXPECT_EQ(arch.out.find(R"(device="-1")"), std::string::npos) << arch.out;
  EXPECT_NE(arch.out.find(R"(gpu="",UUID="",pci_bus_id="",device="arch",)"), std::string::npos)
      << arch.out;
}

// The device labels are dcgm-exporter's where they mean the same, spelled as it spells them (the
// PCI bus id with NVML's 8-digit domain, in upper case; device "nvidia0"), so that dashboards join
// the probe's series with DCGM's on UUID (docs/prometheus.md).
TEST(FakeGpus, PrometheusLabelsJoinDcgmExporters) {
  const std::string dir = pp::testing::make_temp_dir();
  const auto r = run_probe_binary({"--quick", "--format", "prometheus", "--json", dir + "/r.json"},
                                  fake_driver_env(kFakeH200));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(pp::testing::read_all(dir + "/r.json"));
  const json& gpu = j.at("devices").at(0).at("gpu");
  std::string bus = gpu.at("pci_bus_id").get<std::string>();  // "0000:17:00.0"
  ASSERT_EQ(bus.find(':'), 4U) << bus;
  bus = "0000" + bus;
  std::transform(bus.begin(), bus.end(), bus.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  const std::string labels = fmt::format(
      R"({{gpu="0",UUID="{}",pci_bus_id="{}",device="nvidia0",modelName="NVIDIA H200",)"
      R"(Hostname="{}",DCGM_FI_DRIVER_VERSION="{}",kind="cuda",mode="bf16"}})",
      gpu.at("uuid").get<std::string>(), bus, j.at("host").at("hostname").get<std::string>(),
      j.at("driver").at("version").get<std::string>());
  EXPECT_NE(r.out.find("precision_probe_hardware_native" + labels + " 1\n"), std::string::npos)
      << labels << "\n"
      << r.out;
  EXPECT_EQ(r.out.find(R"(uuid=")"), std::string::npos);  // renamed once: UUID, modelName, gpu
}

TEST(FakeGpus, AWorkerOnTheWrongGpuHasItsResultsDiscarded) {
  // Workers start before their GPU is known and narrow CUDA_VISIBLE_DEVICES themselves; each says
  // which GPU it ran on, and results from any other GPU than the planned one are not believed.
  const auto ok = run_probe_binary({"--require", "bf16"}, fake_driver_env(kFakeH200));
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  const auto r = run_probe_binary(
      {"--require", "bf16", "--format", "json"},
      with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=wronggpu", "FAKE_ENGINE_ON=cuda"}));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  const json bf16 = json::parse(r.out).at("devices").at(0).at("precisions").at("bf16");
  EXPECT_EQ(bf16.at("status"), "cannot_run");
  EXPECT_NE(bf16.at("reason").get<std::string>().find("CUDA_VISIBLE_DEVICES was not honoured"),
            std::string::npos)
      << bf16;
}

TEST(FakeGpus, NoKernelImageIsAnEnvironmentFailure) {
  const auto r = run_probe_binary(
      {"--require", "bf16"},
      with(fake_driver_env(kFakeT4), {"FAKE_ENGINE=noimage", "FAKE_ENGINE_ON=cuda"}));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("no kernel image is available"), std::string::npos);
}

TEST(FakeGpus, TrainingModesCanBeRequiredAndFailTheGate) {
  EXPECT_EQ(run_probe_binary({"--require", "amp"}, fake_driver_env(kFakeH200)).exit_code, 0);
  const auto r = run_probe_binary(
      {"--require", "amp_bf16", "--format", "json"},
      with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=wrong:amp_bf16", "FAKE_ENGINE_ON=cuda"}));
  EXPECT_EQ(r.exit_code, 4);
  const json amp = json::parse(r.out).at("devices").at(0).at("amp").at("amp_bf16");
  EXPECT_EQ(amp.at("status"), "failed");
  EXPECT_NE(amp.at("reason").get<std::string>().find("loss did not go down"), std::string::npos);
}

TEST(FakeGpus, BenchReportsThroughputAgainstFp32AndThePeak) {
  const auto r = run_probe_binary({"--bench", "--format", "json"},
                                  with(fake_driver_env(kFakeH200), {"FAKE_ENGINE_ON=cuda"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("run").at("bench"), true);
  const json& bench = j.at("devices").at(0).at("bench");
  EXPECT_EQ(bench.at("bf16").at("size"), 8192);
  EXPECT_DOUBLE_EQ(bench.at("bf16").at("ratio_to_fp32").get<double>(), 15.0);
  EXPECT_DOUBLE_EQ(bench.at("bf16").at("peak_tflops").get<double>(), 989.4);
  EXPECT_EQ(bench.at("bf16").at("peak_source"), "datasheet: NVIDIA H200");
  // The CPU is benchmarked at its own, smaller, default size.
  EXPECT_EQ(j.at("devices").back().at("bench").at("fp32").at("size"), 1024);
}

TEST(FakeGpus, BenchEmulationRuleAndFailures) {
  const auto slow = run_probe_binary(
      {"--bench", "--require", "bf16"},
      with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=slowbf16", "FAKE_ENGINE_ON=cuda"}));
  EXPECT_EQ(slow.exit_code, 1) << slow.out;
  EXPECT_NE(slow.out.find("no faster than fp32's"), std::string::npos) << slow.out;
  const auto oom = run_probe_binary(
      {"--bench", "--bench-size", "32768"},
      with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=oom:bf16", "FAKE_ENGINE_ON=cuda"}));
  // Out of memory is the machine's state: reported, not a failed check (exit 4 drains nodes).
  EXPECT_EQ(oom.exit_code, 0) << oom.out;
  EXPECT_NE(oom.out.find("CUDA out of memory"), std::string::npos);
  const auto bad = run_probe_binary({"--bench-size", "100"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--bench-size: '100' is not a multiple of 16"), std::string::npos)
      << bad.err;
}

TEST(FakeGpus, EveryKindOfReportMatchesTheSchema) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--format", "json", "--bench"},
        std::vector<std::string>{"--format", "json", "--quick"},
        std::vector<std::string>{"--format", "json", "--require", "amp"},
        std::vector<std::string>{"--format", "json", "--nccl", "--bench"},
        std::vector<std::string>{"--format", "json", "--soak", "1", "--device", "all"}}) {
    const auto r = run_probe_binary(args, fake_driver_env(std::string(kFakeH200) + ";" + kFakeT4));
    bool available = false;
    const std::string problem = pp::testing::validate_against_schema(r.out, available);
    if (!available)
      GTEST_SKIP() << "no python3 with jsonschema (apt-get install python3-jsonschema)";
    EXPECT_EQ(problem, "") << args.back();
  }
}

// A plan per device (a GPU's tf32 in it: no session has LibTorch's TF32 override on, whatever the
// environment), and one for the collective; each loads the image's library for its kind.
TEST(FakeGpus, OneWorkerPerDeviceAndOneForTheCollective) {
  // Each worker logs "KIND ARGS tf32=SETTING"; kept here as "KIND tf32=SETTING".
  const std::string dir = pp::testing::make_temp_dir();
  int runs = 0;
  auto worker_args = [&](const std::string& gpus, std::vector<std::string> args,
                         std::vector<std::string> env) {
    const std::string log = dir + "/workers-" + std::to_string(++runs) + ".log";
    env.push_back("FAKE_ENGINE_LOG=" + log);
    const auto r = run_probe_binary(args, with(fake_driver_env(gpus), env));
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    std::vector<std::string> lines;
    std::istringstream in(pp::testing::read_all(log));
    const std::string lib_dir = PP_FAKE_STACKS "/cuda/torch/lib/";
    for (std::string line; std::getline(in, line);) {
      const std::string kind = line.substr(0, line.find(' '));
      // The CPU's plan joins the GPUs' session where device nodes let it start ahead and GPUs
      // are selected (seen failing on the H200 for --device cpu: a session of its own there).
      const bool cpu_alone = std::find(args.begin(), args.end(), "cpu") != args.end();
      const bool own_cpu_session =
          kind == "cpu" && (cpu_alone || !pp::testing::machine_has_gpu_nodes());
      const std::string lib = lib_dir + (own_cpu_session ? "libtorch_cpu.so" : "libtorch_cuda.so");
      EXPECT_NE(line.find("--libtorch " + lib + " "), std::string::npos) << line;
      lines.push_back(kind + line.substr(line.rfind(' ')));
    }
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  using Lines = std::vector<std::string>;
  EXPECT_EQ(worker_args(kFakeH200, {}, {}), (Lines{"cpu tf32=-", "cuda tf32=-"}));
  EXPECT_EQ(worker_args(kFakeH200, {"--device", "cpu"}, {}), (Lines{"cpu tf32=-"}));
  const std::string two = std::string(kFakeH200) + ";" + kFakeH200;
  EXPECT_EQ(worker_args(two, {"--nccl"}, {}),
            (Lines{"cpu tf32=-", "cuda tf32=-", "cuda tf32=-", "cuda tf32=-"}));
  // An environment that sets the override (NGC's images) reaches no session: tf32 is asked of
  // cuBLAS by name, fp32 stays fp32.
  EXPECT_EQ(worker_args(kFakeH200, {}, {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1"}),
            (Lines{"cpu tf32=-", "cuda tf32=-"}));
}

TEST(FakeGpus, NcclAllReduceAcrossEveryGpu) {
  const std::string two = std::string(kFakeH200) + ";" + kFakeH200;
  const auto r = run_probe_binary({"--nccl", "--format", "json"}, fake_driver_env(two));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json c = json::parse(r.out).at("collectives");
  EXPECT_EQ(c.at("requested"), true);
  EXPECT_EQ(c.at("status"), "native");
  EXPECT_EQ(c.at("nccl_version"), "2.27.7");
  EXPECT_EQ(c.at("devices"), json::array({0, 1}));
  ASSERT_EQ(c.at("all_reduce").size(), 3U);
  EXPECT_EQ(c.at("all_reduce").at(2).at("dtype"), "bf16");
  EXPECT_NEAR(c.at("all_reduce").at(0).at("busbw_gbps").get<double>(), 178.957, 1e-3);
  ASSERT_EQ(c.at("peer_access").size(), 2U);  // 0 -> 1 and 1 -> 0
  EXPECT_EQ(c.at("peer_access").at(0).at("access"), true);
  const auto text = run_probe_binary({"--nccl"}, fake_driver_env(two));
  EXPECT_NE(text.out.find("collectives (NCCL 2.27.7) · GPUs 0,1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("peer access between GPUs 0 and 1 both ways: yes"), std::string::npos)
      << text.out;
}

// One GPU's all-reduce has one rank: NCCL moves nothing, so no bandwidth is reported, while the
// exact sums and the time stay (docs/report.md).
TEST(FakeGpus, AOneRankAllReduceGivesNoBandwidth) {
  const auto r = run_probe_binary({"--nccl", "--format", "json"}, fake_driver_env(kFakeH200));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json c = json::parse(r.out).at("collectives");
  EXPECT_EQ(c.at("status"), "native");
  ASSERT_EQ(c.at("all_reduce").size(), 3U);
  for (const json& a : c.at("all_reduce")) {
    EXPECT_EQ(a.at("ranks"), 1);
    EXPECT_EQ(a.at("ok"), true);
    EXPECT_GT(a.at("time_ms").get<double>(), 0.0);
    EXPECT_TRUE(a.at("algbw_gbps").is_null()) << a;
    EXPECT_TRUE(a.at("busbw_gbps").is_null()) << a;
  }
  const auto text = run_probe_binary({"--nccl"}, fake_driver_env(kFakeH200));
  EXPECT_NE(text.out.find("one GPU: its one-rank all-reduce moves no data"), std::string::npos)
      << text.out;
  const auto two =
      run_probe_binary({"--nccl"}, fake_driver_env(std::string(kFakeH200) + ";" + kFakeH200));
  EXPECT_EQ(two.out.find("one-rank"), std::string::npos) << two.out;
  // An all-reduce that did not run proves nothing: no such line under its refusal.
  const auto none =
      run_probe_binary({"--nccl"}, with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=nonccl"}));
  EXPECT_EQ(none.exit_code, 3) << none.out;
  EXPECT_EQ(none.out.find("one-rank"), std::string::npos) << none.out;
}

TEST(FakeGpus, NcclFailuresAndRefusals) {
  const std::string two = std::string(kFakeH200) + ";" + kFakeH200;
  // An inexact sum is a failed check.
  const auto inexact =
      run_probe_binary({"--nccl"}, with(fake_driver_env(two), {"FAKE_ENGINE=inexact:bf16"}));
  EXPECT_EQ(inexact.exit_code, 4);
  EXPECT_NE(inexact.out.find("bf16 all-reduce: wrong result"), std::string::npos) << inexact.out;
  // A LibTorch that loads no NCCL: unsupported, with the reason; asked for, an environment
  // problem.
  const auto none = run_probe_binary({"--nccl", "--format", "json"},
                                     with(fake_driver_env(two), {"FAKE_ENGINE=nonccl"}));
  EXPECT_EQ(none.exit_code, 3);
  const json c = json::parse(none.out).at("collectives");
  EXPECT_EQ(c.at("status"), "unsupported");
  EXPECT_NE(c.at("reason").get<std::string>().find("loads no NCCL"), std::string::npos) << c.dump();
  // One GPU: a one-rank all-reduce (NCCL's own set-up, its copy kernel), exact like any other.
  const auto one = run_probe_binary({"--nccl", "--format", "json"}, fake_driver_env(kFakeH200));
  EXPECT_EQ(one.exit_code, 0) << one.err;
  const json single = json::parse(one.out).at("collectives");
  EXPECT_EQ(single.at("status"), "native") << single.dump();
  EXPECT_EQ(single.at("devices"), json::array({0}));
  const auto cpu = run_probe_binary({"--nccl"});  // no GPU at all
  EXPECT_EQ(cpu.exit_code, 3);
}

TEST(FakeGpus, DisagreeingGpusAreCalledOut) {
  const auto mixed = run_probe_binary({"--format", "json"},
                                      fake_driver_env(std::string(kFakeH200) + ";" + kFakeT4));
  const json report = json::parse(mixed.out);
  bool found = false;
  for (const auto& d : report.at("diagnostics")) {
    if (d.at("code") == "devices-disagree") {
      found = true;
      EXPECT_EQ(d.at("severity"), "warning");
      EXPECT_NE(d.at("message").get<std::string>().find("bf16: native on GPU 0; emulated on GPU 1"),
                std::string::npos)
          << d.at("message");
    }
  }
  EXPECT_TRUE(found) << report.at("diagnostics").dump();
}

namespace {

// The lines of a node-feature-discovery feature file, each checked against NFD's rules: a comment,
// or a label of the project's domain with a name and a value Kubernetes accepts.
std::map<std::string, std::string> nfd_labels(const std::string& file) {
  static const std::regex kLabel(
      R"(^precision-probe\.io/([A-Za-z0-9][-A-Za-z0-9_.]{0,61}[A-Za-z0-9])=)"
      R"((([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$)");
  std::map<std::string, std::string> labels;
  std::istringstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind('#', 0) == 0) continue;
    std::smatch m;
    EXPECT_TRUE(std::regex_match(line, m, kLabel)) << "not a valid label line: " << line;
    if (!m.empty()) labels[m[1]] = line.substr(line.find('=') + 1);
  }
  return labels;
}

}  // namespace

// --nfd: node labels for node-feature-discovery. Node-wide, a mode is native only where every GPU
// proved it, else the worst verdict; the expiry comes first, one TTL after the labels were
// delivered (not after the run started: a long soak would deliver labels that had expired).
TEST(FakeGpus, NodeLabelsSayWhatEveryGpuProvedAndExpire) {
  const std::string dir = pp::testing::make_temp_dir();
  const auto r = run_probe_binary({"--format", "json", "--nfd", dir + "/precision-probe", "--soak",
                                   "2", "--soak-modes", "fp16"},
                                  fake_driver_env(std::string(kFakeH200) + ";" + kFakeT4));
  const auto after_s = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json j = json::parse(r.out);
  const std::string file = pp::testing::read_all(dir + "/precision-probe");
  EXPECT_LT(file.size(), 65536U);
  const auto started = pp::parse_utc_timestamp(j.at("started_at").get<std::string>());
  ASSERT_TRUE(started.has_value());
  ASSERT_EQ(file.rfind("# +expiry-time=", 0), 0U) << file;
  const auto expires = pp::parse_utc_timestamp(file.substr(15, file.find('\n') - 15));
  ASSERT_TRUE(expires.has_value()) << file;
  // Delivered after the two seconds of soak, before the probe exited.
  EXPECT_GE(*expires / 1000, *started / 1000 + 2 + 3600) << file;
  EXPECT_LE(*expires / 1000, after_s + 3600) << file;
  const auto labels = nfd_labels(file);
  EXPECT_EQ(labels.at("gpu.count"), "2");
  EXPECT_EQ(labels.at("gpu.fp16"), "native");    // both GPUs
  EXPECT_EQ(labels.at("gpu.bf16"), "emulated");  // the T4 emulates it
  EXPECT_EQ(labels.at("gpu.fp8_e4m3"), "unsupported");
  EXPECT_EQ(labels.at("gpu.recommendation"), "mixed");
  EXPECT_EQ(labels.at("gpu.soak"), "passed");
  EXPECT_EQ(labels.at("probe.version"), j.at("tool").at("version"));
  EXPECT_EQ(labels.at("probe.severity"), j.at("severity"));
  EXPECT_EQ(labels.size(), pp::all_modes().size() + 5);

  // One H200 that computes wrong bf16 numbers: the node's bf16 is failed, exit 4; a day's TTL.
  const auto bad = run_probe_binary({"--format", "nfd", "--nfd-ttl", "24h"},
                                    with(fake_driver_env(kFakeH200), {"FAKE_ENGINE=wrong:bf16"}));
  EXPECT_EQ(bad.exit_code, 4) << bad.out;
  const auto bad_labels = nfd_labels(bad.out);
  EXPECT_EQ(bad_labels.at("gpu.bf16"), "failed");
  EXPECT_EQ(bad_labels.at("gpu.fp16"), "native");
  EXPECT_EQ(bad_labels.at("probe.severity"), "error");
  const std::string expiry = bad.out.substr(15, bad.out.find('\n') - 15);
  const auto bad_expires = pp::parse_utc_timestamp(expiry);
  ASSERT_TRUE(bad_expires.has_value()) << bad.out;
  const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  EXPECT_NEAR(static_cast<double>(*bad_expires / 1000 - now_s), 86400.0, 300.0) << expiry;

  // No GPU: the count says so, and no mode is labelled native.
  const auto none = run_probe_binary({"--format", "nfd"}, {});
  const auto none_labels = nfd_labels(none.out);
  EXPECT_EQ(none_labels.at("gpu.count"), "0");
  EXPECT_EQ(none_labels.count("gpu.bf16"), 0U);

  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--nfd-ttl", "60"}, "--nfd-ttl: '60' is not a duration"},
           {{"--nfd-ttl", "30s"}, "--nfd-ttl: '30s' is not a duration from 1m"},
           {{"--format", "nfd", "arch", "9.0"}, "node labels (nfd) come from a run on the node"}}) {
    const auto usage = run_probe_binary(args, {});
    EXPECT_EQ(usage.exit_code, 2) << usage.err;
    EXPECT_NE(usage.err.find(message), std::string::npos) << usage.err;
  }
}

// The text report fits 80 columns (README: "Output"), on a run with every section: each line, or
// one token alone where it is wider (a long path).
TEST(FakeGpus, EveryLineOfTheTextReportFitsEightyColumns) {
  const std::string gpus = std::string(kFakeH200) + ";" + kFakeT4;
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> runs = {
      {{"--bench", "--bench-size", "256", "--soak", "1", "--nccl", "--device", "all", "--require",
        "bf16,amp_fp16,fp8_blockwise"},
       {"PRECISION_PROBE_INJECT_FAULT=bf16:3:0"}},
      {{"--quick", "--require", "bf16,nvfp4"}, {}},
      {{"arch", "7.5", "--require", "bf16"}, {}},
  };
  for (const auto& [args, env] : runs) {
    const auto r = run_probe_binary(args, with(fake_driver_env(gpus), env));
    ASSERT_GE(r.exit_code, 0) << r.err;
    std::istringstream lines(r.out);
    std::string line;
    int count = 0;
    while (std::getline(lines, line)) {
      ++count;
      if (pp::visible_width(line) <= 80) continue;
      const std::size_t start = line.find_first_not_of(' ');
      EXPECT_EQ(line.find(' ', start), std::string::npos)
          << args.front() << ": " << pp::visible_width(line) << " columns: " << line;
    }
    EXPECT_GT(count, 10) << r.out;
    if (args.front() == "--bench") {
      for (const char* section : {"  amp_fp16", "  bench", "  soak", "collectives"}) {
        EXPECT_NE(r.out.find(section), std::string::npos) << section << "\n" << r.out;
      }
    }
  }
}

// A variable set to a path the probe cannot use is named with that path; an empty one is unset.
TEST(FakeGpus, AnEngineOrDriverVariableIsNamedWithItsValueAndAnEmptyOneIsUnset) {
  const auto missing = run_probe_binary(
      {"--require", "bf16", "--format", "json"},
      with(fake_driver_env(kFakeH200), {"PRECISION_PROBE_ENGINE=/nonexistent/engine"}));
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  const json j = json::parse(missing.out);
  const std::string reason =
      j.at("devices").at(0).at("precisions").at("bf16").at("reason").get<std::string>();
  EXPECT_NE(reason.find("PRECISION_PROBE_ENGINE=/nonexistent/engine names no file"),
            std::string::npos)
      << reason;
  bool diagnosed = false;
  for (const json& d : j.at("diagnostics")) {
    diagnosed = diagnosed || (d.at("code") == "engine-not-installed" &&
                              d.at("message").get<std::string>().find("/nonexistent/engine") !=
                                  std::string::npos);
  }
  EXPECT_TRUE(diagnosed) << missing.out;
  // PRECISION_PROBE_ENGINE= (empty): the engine next to the probe (the build's), which runs.
  const auto next_to =
      run_probe_binary({"--require", "bf16", "--format", "json"},
                       with(fake_driver_env(kFakeH200), {"PRECISION_PROBE_ENGINE="}));
  EXPECT_NE(next_to.out.find("precisions"), std::string::npos);
  EXPECT_EQ(next_to.out.find("names no file"), std::string::npos) << next_to.out;
  // PRECISION_PROBE_LIBCUDA= (empty): the driver's own libcuda.so.1, not a library named "".
  const auto driver = run_probe_binary(
      {"--quick", "--format", "json"},
      {"PRECISION_PROBE_LIBCUDA=", "PRECISION_PROBE_LIBNVML=", "PRECISION_PROBE_TORCH=none"});
  const json k = json::parse(driver.out);
  const std::string message = k.at("driver").at("message").get<std::string>();
  EXPECT_EQ(message.find(" has no cuInit"), std::string::npos) << message;
  EXPECT_EQ(message.find(":  "), std::string::npos) << message;
  if (k.at("driver").at("status") != "ok") {  // this machine has no driver: it names the real one
    EXPECT_NE(message.find("libcuda.so.1"), std::string::npos) << message;
  }
}

// CUDA_VISIBLE_DEVICES entries that name no GPU, by UUID, MIG UUID or a repeated index, are
// diagnosed as the README promises; a GPU named twice is one GPU.
TEST(FakeGpus, AVisibleDevicesEntryNamingNoGpuOrRepeatedIsDiagnosed) {
  const std::string two = std::string(kFakeH200) + ";" + kFakeH200;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"GPU-xyz", "entry 'GPU-xyz' names no GPU"},
      {"MIG-abc", "entry 'MIG-abc' names no GPU"},
      {"7", "entry '7' names no GPU"},
      {"0,0", "entry '0' repeats an earlier one"},
      {"1,0,1", "entry '1' repeats an earlier one"},
  };
  for (const auto& [value, message] : cases) {
    const auto r = run_probe_binary({"--format", "json", "--require", "bf16"},
                                    with(fake_driver_env(two), {"CUDA_VISIBLE_DEVICES=" + value}));
    const json j = json::parse(r.out);
    std::string found;
    for (const json& d : j.at("diagnostics")) {
      if (d.at("code") == "cuda-visible-devices-invalid") found = d.at("message");
    }
    EXPECT_NE(found.find(message), std::string::npos) << value << ": " << found;
    int gpus = 0;
    for (const json& d : j.at("devices")) gpus += d.at("kind") == "cuda" ? 1 : 0;
    const bool repeated = message.find("repeats") != std::string::npos;
    // A repeated index is one GPU: no second, untested one, and the gate passes on it.
    EXPECT_EQ(gpus, repeated ? (value == "0,0" ? 1 : 2) : 0) << value << "\n" << r.out;
    EXPECT_EQ(r.exit_code, repeated ? 0 : 3) << value << ": " << j.at("exit_reason");
  }
  const auto fine = run_probe_binary({"--format", "json"},
                                     with(fake_driver_env(two), {"CUDA_VISIBLE_DEVICES=1,0"}));
  EXPECT_EQ(fine.out.find("cuda-visible-devices"), std::string::npos) << fine.out;
}

// A default run (no flags, 80 columns: stdout is a pipe) of a healthy node fits a screen: eight
// H200s share one table in 60 lines, one H200 and the CPU take 45; the MX formats' reason is said
// once, the CPU (reported, not gated) summarised.
TEST(FakeGpus, TheTextReportOfAHealthyNodeFitsAScreen) {
  std::string eight = kFakeH200;
  for (int i = 1; i < 8; ++i) eight += std::string(";") + kFakeH200;
  const auto node = run_probe_binary({}, fake_driver_env(eight));
  ASSERT_EQ(node.exit_code, 0) << node.err << node.out;
  EXPECT_LE(lines_of(node.out), 60U) << node.out;
  EXPECT_NE(node.out.find("\nGPU 0-7 NVIDIA H200 ×8 · cc 9.0 Hopper · "), std::string::npos)
      << node.out;
  EXPECT_EQ(count(node.out, "  mode "), 1U) << node.out;
  EXPECT_EQ(count(unwrapped(node.out), "block-scaled MMA (MX and NVFP4 formats)"), 1U) << node.out;
  EXPECT_NE(unwrapped(node.out).find("peer access between every pair of the 8 GPUs: yes"),
            std::string::npos)
      << node.out;
  const auto one = run_probe_binary({}, fake_driver_env(kFakeH200));
  ASSERT_EQ(one.exit_code, 0) << one.err << one.out;
  EXPECT_LE(lines_of(one.out), 45U) << one.out;
  EXPECT_NE(unwrapped(one.out).find("\nCPU "), std::string::npos) << one.out;
  EXPECT_NE(unwrapped(one.out).find(" · reported, not gated: "), std::string::npos) << one.out;
}

// A GPU whose bf16 verdict differs has its own table, the others share one; a GPU whose error is
// larger within the tolerance shares the table, whose error column shows its figure.
TEST(FakeGpus, AGpuWhoseVerdictDiffersHasItsOwnTableAndAGroupShowsItsLargestError) {
  std::string eight = kFakeH200;
  for (int i = 1; i < 8; ++i) eight += std::string(";") + kFakeH200;
  const auto odd = run_probe_binary(
      {}, with(fake_driver_env(eight), {"FAKE_ENGINE=wrong:bf16", "FAKE_ENGINE_ON=gpu:3"}));
  EXPECT_EQ(odd.exit_code, 4) << odd.out;
  EXPECT_NE(odd.out.find("\nGPU 0-2,4-7 NVIDIA H200 ×7 · "), std::string::npos) << odd.out;
  EXPECT_NE(odd.out.find("\nGPU 3 NVIDIA H200 · "), std::string::npos) << odd.out;
  EXPECT_EQ(count(odd.out, "  mode "), 2U) << odd.out;
  EXPECT_NE(odd.out.find("  bf16          native       failed         5.00e-01"), std::string::npos)
      << odd.out;
  const auto near = run_probe_binary(
      {}, with(fake_driver_env(eight), {"FAKE_ENGINE=near:bf16", "FAKE_ENGINE_ON=gpu:5"}));
  EXPECT_EQ(near.exit_code, 0) << near.out;
  EXPECT_EQ(count(near.out, "  mode "), 1U) << near.out;
  EXPECT_NE(near.out.find("  bf16          native       native         5.00e-03    1.0e-02"),
            std::string::npos)
      << near.out;
  // Each GPU's own figure stays in the JSON.
  const auto json_near = run_probe_binary(
      {"--format", "json"},
      with(fake_driver_env(eight), {"FAKE_ENGINE=near:bf16", "FAKE_ENGINE_ON=gpu:5"}));
  const json j = json::parse(json_near.out);
  const auto rel = [&j](int gpu) {
    return j.at("devices").at(gpu).at("precisions").at("bf16").at("smoke").at("rel_error");
  };
  EXPECT_DOUBLE_EQ(rel(0).get<double>(), 1e-6);
  EXPECT_DOUBLE_EQ(rel(5).get<double>(), 5e-3);
}

namespace {

// The report's last line, wrapped lines joined.
std::string last_line(const std::string& text) {
  const std::string joined = unwrapped(text);
  const std::size_t end = joined.find_last_not_of('\n');
  return joined.substr(joined.rfind('\n', end) + 1, end - joined.rfind('\n', end));
}

}  // namespace

// Without a PyTorch the one reason is said once per report, not per device and mode; the last
// line says that no kernel ran, and which gate would make a CI step fail (exit 3 here).
TEST(FakeGpus, WithoutATorchTheReasonIsSaidOnceAndTheLastLineSaysNothingIsProven) {
  std::string eight = kFakeH200;
  for (int i = 1; i < 8; ++i) eight += std::string(";") + kFakeH200;
  const auto gpus =
      run_probe_binary({}, with(fake_driver_env(eight), {"PRECISION_PROBE_TORCH=none"}));
  EXPECT_EQ(gpus.exit_code, 0) << gpus.out;
  EXPECT_EQ(count(unwrapped(gpus.out), "no PyTorch or LibTorch was found"), 1U) << gpus.out;
  EXPECT_LE(lines_of(gpus.out), 60U) << gpus.out;
  EXPECT_EQ(last_line(gpus.out),
            "no kernel ran: nothing here is proven. --require bf16 gates a CI step: exit 0 only "
            "where a bf16 kernel runs and is right (here: exit 3).")
      << gpus.out;
  EXPECT_EQ(run_probe_binary({"--require", "bf16"},
                             with(fake_driver_env(eight), {"PRECISION_PROBE_TORCH=none"}))
                .exit_code,
            3);
  // No GPU: the CPU is gated by --device cpu, whose table says the reason once too.
  const auto cpu = run_probe_binary({"--device", "cpu"}, {"PRECISION_PROBE_TORCH=none"});
  EXPECT_EQ(cpu.exit_code, 0) << cpu.out;
  EXPECT_EQ(count(unwrapped(cpu.out), "no PyTorch or LibTorch was found"), 1U) << cpu.out;
  EXPECT_EQ(last_line(cpu.out).rfind("no kernel ran: nothing here is proven. --require ", 0), 0U)
      << cpu.out;
  const auto bare = run_probe_binary({}, {"PRECISION_PROBE_TORCH=none"});
  EXPECT_NE(last_line(bare.out).find(". --device cpu --require "), std::string::npos) << bare.out;
  EXPECT_NE(last_line(bare.out).find("(here: exit 3)."), std::string::npos) << bare.out;
  // --quick: the hardware alone meets a requirement there, and the line says so.
  const auto quick = run_probe_binary({"--quick"}, fake_driver_env(kFakeH200));
  EXPECT_NE(last_line(quick.out).find("under --quick the hardware alone meets it (here: exit 0)."),
            std::string::npos)
      << quick.out;
}

// A CI step on a machine without a GPU that requires bf16 exits 3, and is told to gate the CPU.
TEST(FakeGpus, ACiStepWithoutAGpuIsToldToGateTheCpu) {
  const auto text = run_probe_binary({"--require", "bf16"});
  EXPECT_EQ(text.exit_code, 3) << text.out;
  EXPECT_NE(unwrapped(text.out).find("; to gate the CPU, add --device cpu\n"), std::string::npos)
      << text.out;
  const auto doc = run_probe_binary({"--require", "bf16", "--format", "json"});
  const std::string reason = json::parse(doc.out).at("exit_reason");
  EXPECT_NE(reason.find("to gate the CPU, add --device cpu"), std::string::npos) << reason;
  // Where the CPU is gated, the advice is not given.
  const auto gated = run_probe_binary({"--device", "cpu", "--require", "fp32"});
  EXPECT_EQ(gated.exit_code, 0) << gated.out;
  EXPECT_EQ(unwrapped(gated.out).find("add --device cpu"), std::string::npos) << gated.out;
}
