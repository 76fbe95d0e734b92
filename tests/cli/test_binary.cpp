// End-to-end tests of the binary: exit codes, bad input, output files. The engine is the fake
// one (fake_engine.cpp) and the NVIDIA libraries are unloadable unless a test says otherwise.

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "binary.hpp"
#include "precision_probe/modes.hpp"

namespace pp = precision_probe;
using nlohmann::json;
using pp::testing::read_all;
using pp::testing::run_probe_binary;

namespace {

void expect_schema_valid(const std::string& text) {
  bool available = false;
  const std::string problem = pp::testing::validate_against_schema(text, available);
  if (available) {
    EXPECT_EQ(problem, "") << text;
  }
}

int count_lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST(Binary, HelpAndVersionExitZero) {
  const auto help = run_probe_binary({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--require"), std::string::npos);
  EXPECT_NE(help.out.find("arch"), std::string::npos);
  const auto version = run_probe_binary({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("precision-probe 0."), std::string::npos);
}

TEST(Binary, WithoutGpusTheCpuReportExitsZero) {
  const auto r = run_probe_binary({});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("CPU "), std::string::npos);
  EXPECT_NE(r.out.find("driver-library-not-found"), std::string::npos);
  EXPECT_NE(r.out.find("exit 0"), std::string::npos);
  EXPECT_EQ(r.err, "");
}

TEST(Binary, JsonReportIsOneValidDocument) {
  const auto r = run_probe_binary({"--format", "json", "--seed", "11"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("exit_code"), 0);
  EXPECT_EQ(j.at("run").at("seed"), 11);
  EXPECT_EQ(j.at("driver").at("status"), "not_found");
  const json& cpu = j.at("devices").back();
  EXPECT_EQ(cpu.at("kind"), "cpu");
  EXPECT_EQ(cpu.at("precisions").at("fp32").at("status"), "native");
  EXPECT_EQ(cpu.at("precisions").at("tf32").at("status"), "unsupported");
  expect_schema_valid(r.out);
}

TEST(Binary, RequiringAGpuModeWithoutGpusExitsThree) {
  const auto r = run_probe_binary({"--require", "bf16"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.out.find("NOT MET"), std::string::npos);
  EXPECT_NE(r.out.find("no usable GPU"), std::string::npos);
  const auto gpu0 = run_probe_binary({"--device", "0"});
  EXPECT_EQ(gpu0.exit_code, 3);
}

TEST(Binary, CpuGateExitsZeroOrOne) {
  EXPECT_EQ(run_probe_binary({"--device", "cpu", "--require", "fp32"}).exit_code, 0);
  const auto tf32 = run_probe_binary({"--device", "cpu", "--require", "tf32"});
  EXPECT_EQ(tf32.exit_code, 1);
  EXPECT_NE(tf32.out.find("tf32          on CPU     NOT MET (unsupported)"), std::string::npos)
      << tf32.out;
}

TEST(Binary, WrongNumbersOrNaNExitFour) {
  const auto wrong = run_probe_binary({"--device", "cpu"}, {"FAKE_ENGINE=wrong:fp32"});
  EXPECT_EQ(wrong.exit_code, 4);
  EXPECT_NE(wrong.out.find("relative error 0.5 exceeds the tolerance"), std::string::npos);
  const auto nan =
      run_probe_binary({"--device", "cpu", "--format", "json"}, {"FAKE_ENGINE=nan:bf16"});
  EXPECT_EQ(nan.exit_code, 4);
  const json j = json::parse(nan.out);
  EXPECT_EQ(j.at("devices").back().at("precisions").at("bf16").at("status"), "failed");
  EXPECT_NE(nan.err.find("precision-probe: exit 4"), std::string::npos);
}

TEST(Binary, UnsupportedOperationIsReportedWithLibTorchsMessage) {
  const auto r =
      run_probe_binary({"--device", "cpu", "--format", "json"}, {"FAKE_ENGINE=unsupported:fp16"});
  EXPECT_EQ(r.exit_code, 0);
  const json fp16 = json::parse(r.out).at("devices").back().at("precisions").at("fp16");
  EXPECT_EQ(fp16.at("status"), "unsupported");
  EXPECT_EQ(fp16.at("reason"), "\"addmm_impl_cpu_\" not implemented for 'Half'");
}

TEST(Binary, AHungWorkerIsKilledAtTheTimeoutAndExitsFive) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_probe_binary({"--device", "cpu", "--timeout", "1", "--format", "json"},
                                  {"FAKE_ENGINE=hang"});
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_LT(took, std::chrono::seconds(10));
  const json j = json::parse(r.out);
  const json& fp32 = j.at("devices").back().at("precisions").at("fp32");
  // The run's deadline cut it off: out of time, not a failed check.
  EXPECT_EQ(fp32.at("status"), "out_of_time");
  EXPECT_EQ(fp32.at("failure"), "out_of_time");
  EXPECT_NE(fp32.at("reason").get<std::string>().find("the run's --timeout of 1 s ran out"),
            std::string::npos);
  expect_schema_valid(r.out);
}

TEST(Binary, ACrashingOrGarbledWorkerFailsItsChecks) {
  const auto crash = run_probe_binary({"--device", "cpu"}, {"FAKE_ENGINE=crash"});
  EXPECT_EQ(crash.exit_code, 4);
  EXPECT_NE(crash.out.find("crashed (SIGSEGV)"), std::string::npos) << crash.out;
  const auto garbage = run_probe_binary({"--device", "cpu"}, {"FAKE_ENGINE=garbage"});
  EXPECT_EQ(garbage.exit_code, 4);
  EXPECT_NE(garbage.out.find("malformed line"), std::string::npos) << garbage.out;
}

TEST(Binary, MissingEngineIsSaidNotHidden) {
  const auto r =
      run_probe_binary({"--format", "json"}, {"PRECISION_PROBE_ENGINE=/nonexistent/engine"});
  EXPECT_EQ(r.exit_code, 0);
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("devices").back().at("precisions").at("fp32").at("status"), "not_tested");
  bool found = false;
  for (const auto& d : j.at("diagnostics")) found = found || d.at("code") == "engine-not-installed";
  EXPECT_TRUE(found);
}

TEST(Binary, BadInputIsOneLineOnStderrAndExitTwo) {
  const std::vector<std::vector<std::string>> cases = {{"--format", "xml"},
                                                       {"--require", "fp7"},
                                                       {"--device", "zero"},
                                                       {"--bogus"},
                                                       {"--timeout", "-1"},
                                                       {"arch", "banana"},
                                                       {"-o", "/nonexistent-dir/report.json"}};
  for (const auto& args : cases) {
    const auto r = run_probe_binary(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[1 % args.size()];
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("precision-probe: error: ", 0), 0U) << r.err;
  }
}

TEST(Binary, BadInputWithJsonStillPrintsAValidDocument) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--format", "json", "--require", "fp7"},
        std::vector<std::string>{"--format=json", "--device", "x"},
        std::vector<std::string>{"--format", "json", "--timeout", "0"},
        std::vector<std::string>{"--format", "json", "-o", "/nonexistent-dir/r.json"}}) {
    const auto r = run_probe_binary(args);
    EXPECT_EQ(r.exit_code, 2);
    const json j = json::parse(r.out);
    EXPECT_EQ(j.at("exit_code"), 2);
    EXPECT_FALSE(j.at("error").at("message").get<std::string>().empty());
    expect_schema_valid(r.out);
  }
}

TEST(Binary, OutputFileIsWrittenAndAFailedRunLeavesItUntouched) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string path = dir + "/report.json";
  const auto ok = run_probe_binary({"--format", "json", "-o", path});
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(ok.out, "");
  const std::string first = read_all(path);
  EXPECT_NO_THROW(json::parse(first));
  const auto bad = run_probe_binary({"--format", "json", "-o", path, "--require", "fp7"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(read_all(path), first);
  const auto quiet = run_probe_binary({"-q"});
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_EQ(quiet.out, "");
}

TEST(Binary, ArchAnswersWithoutAGpu) {
  const auto text = run_probe_binary({"arch", "8.9"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("compute capability 8.9 (Ada Lovelace)"), std::string::npos);
  EXPECT_NE(text.out.find("fp8_e4m3      native"), std::string::npos) << text.out;
  const auto t4 = run_probe_binary({"arch", "sm_75", "--format", "json"});
  EXPECT_EQ(t4.exit_code, 0);
  const json j = json::parse(t4.out);
  const json& d = j.at("devices").at(0);
  EXPECT_TRUE(d.at("index").is_null());
  EXPECT_EQ(d.at("precisions").at("bf16").at("hardware"), "emulated");
  EXPECT_EQ(d.at("precisions").at("bf16").at("status"), "not_tested");
  EXPECT_EQ(d.at("precisions").at("fp8_e4m3").at("status"), "unsupported");
  EXPECT_EQ(d.at("kernels").at("covered"), true);
  expect_schema_valid(t4.out);
  // A build without sm_75: "would this image work on a T4?" -- no.
  const auto narrow =
      run_probe_binary({"arch", "7.5", "--format", "json"}, {pp::testing::fake_stack("hopper")});
  EXPECT_EQ(json::parse(narrow.out).at("devices").at(0).at("kernels").at("covered"), false);
}

// A compute capability no GPU has is given no family's verdicts (8.8 was Ampere's), and a future
// one no verdict at all (14.0 was native in every mode but fp8_blockwise): nothing native, each
// mode says why, and a requirement is not met, with or without the image's LibTorch.
TEST(Binary, ArchGivesAnUnknownComputeCapabilityNoNativeVerdict) {
  for (const std::string& torch : {std::string("PRECISION_PROBE_TORCH=none"), std::string()}) {
    std::vector<std::string> env;
    if (!torch.empty()) env.push_back(torch);
    const auto future = run_probe_binary({"arch", "14.0", "--require", "nvfp4,fp8"}, env);
    EXPECT_EQ(future.exit_code, 1) << torch << "\n" << future.out << future.err;
    EXPECT_NE(future.out.find("compute capability 14.0 (unknown)"), std::string::npos)
        << future.out;
    EXPECT_NE(future.out.find("newer than every one this precision-probe knows"), std::string::npos)
        << future.out;
    const auto none = run_probe_binary({"arch", "8.8", "--format", "json"}, env);
    EXPECT_EQ(none.exit_code, 0) << none.err;  // a report, nothing required
    const json d = json::parse(none.out).at("devices").at(0);
    EXPECT_EQ(d.at("name"), "compute capability 8.8 (unknown)");
    for (const auto& [mode, p] : d.at("precisions").items()) {
      EXPECT_EQ(p.at("hardware"), "unsupported") << mode;
      EXPECT_NE(p.at("status"), "native") << mode;
      EXPECT_NE(p.at("hardware_reason")
                    .get<std::string>()
                    .find("cc 8.8: unknown compute capability: no NVIDIA GPU has it"),
                std::string::npos)
          << mode << ": " << p.dump();
    }
    expect_schema_valid(none.out);
    EXPECT_EQ(run_probe_binary({"arch", "9.9", "--require", "fp32"}, env).exit_code, 1);
  }
  // Jetson Thor under a driver before CUDA 13 (10.1) is a GPU that exists.
  EXPECT_EQ(run_probe_binary({"arch", "10.1", "--require", "nvfp4", "--format", "json"},
                             {"PRECISION_PROBE_TORCH=none"})
                .exit_code,
            0);
}

TEST(Binary, MarkdownIsAJobSummary) {
  const auto r =
      run_probe_binary({"--format", "markdown", "--device", "cpu", "--require", "fp32,tf32"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("## precision-probe: ❌ exit 1\n", 0), 0U) << r.out;
  // A column per mode of the table, in its order.
  std::string header = "| device |";
  std::string rule = "\n|---|";
  for (pp::Mode mode : pp::all_modes()) {
    header += " " + std::string(pp::mode_key(mode)) + " |";
    rule += "---|";
  }
  EXPECT_NE(r.out.find(header + " recommendation |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(rule + "---|\n"), std::string::npos);
  EXPECT_NE(r.out.find("| CPU "), std::string::npos);
  EXPECT_NE(r.out.find("### Requirements"), std::string::npos);
  EXPECT_NE(r.out.find("| tf32 | CPU | ❌ | unsupported |"), std::string::npos) << r.out;
}

TEST(Binary, PrometheusPassesPromtool) {
  const auto r =
      run_probe_binary({"--format", "prometheus", "--device", "cpu", "--require", "fp32"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("# TYPE precision_probe_native gauge"), std::string::npos);
  EXPECT_NE(r.out.find(R"(precision_probe_native{gpu="",UUID="",pci_bus_id="",device="cpu",)"),
            std::string::npos);
  // One spelling of the device everywhere: device="cpu", in the requirement's labels too.
  EXPECT_NE(
      r.out.find(R"(precision_probe_requirement_met{gpu="",UUID="",pci_bus_id="",device="cpu",)"),
      std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find(R"(device="CPU")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("precision_probe_exit_code 0\n"), std::string::npos);
  bool available = false;
  const std::string problems = pp::testing::promtool_problems(r.out, available);
  if (!available) GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  EXPECT_EQ(problems, "") << r.out;
  // The exception is narrow: a label name in camelCase of the probe's own would be found.
  std::string own = r.out;
  own.replace(own.find("kind="), 5, "deviceKind=");
  EXPECT_NE(pp::testing::promtool_problems(own, available), "");
}

// docs/prometheus.md's claim, as written: `promtool check metrics` of the output as it is finds no
// error (its exit 1), only its lint (exit 3), and every line of that lint is the camelCase one that
// dcgm-exporter's four label names draw (with them respelled it is clean: the test above).
TEST(Binary, PromtoolFindsNoErrorAndLintsOnlyTheCamelCaseLabelNames) {
  const auto r =
      run_probe_binary({"--format", "prometheus", "--device", "cpu", "--require", "fp32"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  bool available = false;
  const pp::testing::PromtoolCheck check = pp::testing::promtool_check(r.out, available);
  if (!available) GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  EXPECT_EQ(check.exit_code, 3) << check.output;
  std::istringstream lines(check.output);
  int linted = 0;
  for (std::string line; std::getline(lines, line);) {
    ++linted;
    EXPECT_TRUE(std::regex_match(
        line, std::regex("precision_probe_[a-z_]+ label names should be written in "
                         "'snake_case' not 'camelCase'")))
        << line;
  }
  EXPECT_GT(linted, 10) << check.output;
  // Exit 3 is the lint's alone here: an error in the exposition is exit 1.
  const pp::testing::PromtoolCheck broken =
      pp::testing::promtool_check(r.out + "precision_probe_gpus{ 1\n", available);
  EXPECT_EQ(broken.exit_code, 1) << broken.output;
}

// In a Kubernetes pod without hostNetwork the hostname is the pod's name: PRECISION_PROBE_NODE_NAME
// (spec.nodeName through the downward API) names the node in every output, and host.hostname
// stays what the kernel says.
TEST(Binary, PrecisionProbeNodeNameNamesTheNodeAndTheHostnameStaysTheKernels) {
  char kernel[256] = {};
  ASSERT_EQ(::gethostname(kernel, sizeof kernel - 1), 0);
  const std::string hostname = kernel;
  ASSERT_NE(hostname, "gpu-node-07.example");
  const std::string dir = pp::testing::make_temp_dir();
  const auto r = run_probe_binary({"--format", "json", "--device", "cpu", "--prom", dir + "/m.prom",
                                   "--text", dir + "/r.txt", "--markdown", dir + "/r.md"},
                                  {"PRECISION_PROBE_NODE_NAME=gpu-node-07.example"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("host").at("hostname"), hostname);
  EXPECT_EQ(j.at("host").at("node_name"), "gpu-node-07.example");
  expect_schema_valid(r.out);
  const std::string prom = read_all(dir + "/m.prom");
  EXPECT_NE(prom.find(R"(driver_cuda="",Hostname="gpu-node-07.example"})"), std::string::npos)
      << prom;
  EXPECT_NE(prom.find(R"(modelName=")"), std::string::npos) << prom;
  EXPECT_EQ(prom.find("Hostname=\"" + hostname + "\""), std::string::npos) << prom;
  // Every device series too (the CPU's: its precisions, its selection).
  const std::string device_label = R"(,Hostname="gpu-node-07.example",DCGM_FI_DRIVER_VERSION=)";
  std::size_t device_series = 0;
  for (std::size_t at = prom.find(device_label); at != std::string::npos;
       at = prom.find(device_label, at + 1)) {
    ++device_series;
  }
  EXPECT_GT(device_series, 10U) << prom;
  EXPECT_NE(read_all(dir + "/r.txt").find(" on gpu-node-07.example (hostname " + hostname + ", "),
            std::string::npos)
      << read_all(dir + "/r.txt");
  EXPECT_NE(read_all(dir + "/r.md").find("`gpu-node-07.example` · "), std::string::npos);
  // Unset or empty, the node is the hostname.
  for (const char* unset : {"PRECISION_PROBE_NODE_NAME", "PRECISION_PROBE_NODE_NAME="}) {
    const auto plain = run_probe_binary({"--format", "json", "--device", "cpu"}, {unset});
    EXPECT_EQ(plain.exit_code, 0) << plain.err;
    const json h = json::parse(plain.out).at("host");
    EXPECT_EQ(h.at("hostname"), hostname);
    EXPECT_EQ(h.at("node_name"), hostname) << unset;
  }
}

TEST(Binary, ANodeNameThatIsNotOneIsExitTwoBeforeAnythingRuns) {
  const std::string label63(63, 'a');
  const std::string longest = label63 + "." + label63 + "." + label63 + "." + std::string(61, 'b');
  ASSERT_EQ(longest.size(), 253U);
  for (const std::string& good :
       {std::string("a"), std::string("GPU-07"), std::string("0.x-1.y"), label63, longest}) {
    const auto r = run_probe_binary({"--format", "json", "--device", "cpu"},
                                    {"PRECISION_PROBE_NODE_NAME=" + good});
    EXPECT_EQ(r.exit_code, 0) << good << ": " << r.err;
    EXPECT_EQ(json::parse(r.out).at("host").at("node_name"), good);
  }
  for (const std::string& bad :
       {std::string("gpu_07"), std::string("-gpu"), std::string("gpu-"), std::string("a..b"),
        std::string(".a"), std::string("a."), std::string("gpu 07"), label63 + "a", longest + "c",
        std::string("n\x01") + "de", std::string("n\u00e9ud")}) {
    const auto text = run_probe_binary({}, {"PRECISION_PROBE_NODE_NAME=" + bad});
    EXPECT_EQ(text.exit_code, 2) << bad;
    EXPECT_EQ(text.out, "");
    EXPECT_EQ(count_lines(text.err), 1) << text.err;
    EXPECT_EQ(text.err.rfind("precision-probe: error: PRECISION_PROBE_NODE_NAME='", 0), 0U)
        << text.err;
    EXPECT_NE(text.err.find("is not a node name (RFC 1123"), std::string::npos) << text.err;
    const auto j = run_probe_binary({"--format", "json"}, {"PRECISION_PROBE_NODE_NAME=" + bad});
    EXPECT_EQ(j.exit_code, 2);
    const json doc = json::parse(j.out);
    EXPECT_EQ(doc.at("exit_code"), 2);
    EXPECT_EQ(doc.at("error").at("kind"), "usage");
    // The error document names the host by its hostname: the value given is no name.
    EXPECT_EQ(doc.at("host").at("node_name"), doc.at("host").at("hostname"));
    expect_schema_valid(j.out);
  }
}

TEST(Binary, OneProbeFeedsEveryConsumer) {
  const std::string dir = pp::testing::make_temp_dir();
  const auto r = run_probe_binary({"--format", "text", "-o", "-", "--json", dir + "/r.json",
                                   "--prom", dir + "/m.prom", "--markdown", dir + "/s.md",
                                   "--output-as", "text:" + dir + "/r.txt", "--seed", "5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("exit 0"), std::string::npos);
  const json j = json::parse(read_all(dir + "/r.json"));
  EXPECT_EQ(j.at("run").at("seed"), 5);
  EXPECT_NE(read_all(dir + "/m.prom").find("precision_probe_info"), std::string::npos);
  EXPECT_EQ(read_all(dir + "/s.md").rfind("## precision-probe", 0), 0U);
  EXPECT_EQ(read_all(dir + "/r.txt").rfind("precision-probe ", 0), 0U);
  // The same probe: the seed agrees across the outputs.
  EXPECT_NE(read_all(dir + "/s.md").find("seed 5"), std::string::npos);
}

TEST(Binary, AnUnwritableExtraOutputFailsBeforeAnythingIsWritten) {
  const std::string dir = pp::testing::make_temp_dir();
  std::ofstream(dir + "/r.json") << "old";
  const auto r = run_probe_binary({"--json", dir + "/r.json", "--prom", "/nonexistent-dir/m.prom"});
  EXPECT_EQ(r.exit_code, 2);
  // The message names the flag as typed (--prom) and the directory that is missing.
  EXPECT_NE(r.err.find("--prom: /nonexistent-dir/m.prom: directory /nonexistent-dir: No such file"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_all(dir + "/r.json"), "old");
  EXPECT_EQ(run_probe_binary({"--output-as", "xml:r.xml"}).exit_code, 2);
  EXPECT_EQ(run_probe_binary({"--json", dir + "/x", "--output-as", "json:" + dir + "/x"}).exit_code,
            2);
}
