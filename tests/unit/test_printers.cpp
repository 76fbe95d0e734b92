#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "binary.hpp"
#include "fakes.hpp"
#include "probe/outputs/printers.hpp"
#include "precision_probe/report_json.hpp"
#include "strings/strings.hpp"
#include "probe/run/probe.hpp"

namespace pp = precision_probe;
using nlohmann::json;
using pp::Mode;
using pp::Status;

namespace {

pp::PrecisionResult native(double rel, double tol) {
  pp::PrecisionResult p;
  p.hardware = pp::Hardware::native;
  p.status = Status::native;
  p.smoke = pp::testing::passed(rel, tol);
  return p;
}

pp::PrecisionResult unsupported(const std::string& why) {
  pp::PrecisionResult p;
  p.hardware = pp::Hardware::unsupported;
  p.status = Status::unsupported;
  p.reason = why;
  p.hardware_reason = why;
  return p;
}

// A small, fixed report: one GPU with two modes, gated on bf16.
pp::Report sample() {
  pp::Report r;
  r.tool = pp::this_tool();
  r.tool.version = "9.9.9";
  r.host.hostname = "node1";
  r.host.os = "Ubuntu 24.04";
  r.host.machine = "x86_64";
  r.run.seed = 7;
  r.run.required = {"bf16"};
  r.stack = pp::testing::cuda_stack();
  r.stack.arch_list = {"sm_90"};
  r.stack.cudnn_version = "";
  r.stack.library = "/image/torch/lib/libtorch_cuda.so";
  r.stack.abi_version = "2.11.0";
  r.driver.status = pp::DriverStatus::ok;
  r.driver.version = "580.1";
  r.driver.cuda_version = pp::Version{13, 0};
  r.driver.message = "1 GPU(s) visible to CUDA";
  pp::DeviceReport d;
  d.kind = pp::DeviceKind::cuda;
  d.index = 0;
  d.name = "NVIDIA H200";
  d.selected = true;
  pp::GpuInfo g;
  g.index = 0;
  g.name = d.name;
  g.uuid = "GPU-1";
  g.cc = pp::ComputeCapability{9, 0};
  g.sm_count = 132;
  g.memory_total = 144ULL << 30U;
  d.gpu = g;
  d.kernels = pp::KernelCoverage{true, "sm_90", ""};
  d.precisions = {{Mode::bf16, native(2.5e-3, 1e-2)},
                  {Mode::nvfp4, unsupported("FP4 needs cc 10.0+")}};
  d.recommendation = {pp::DType::bf16, false, "BF16 is native"};
  r.devices.push_back(d);
  r.requirements.push_back({Mode::bf16, "GPU 0", true, Status::native, ""});
  r.diagnostics.push_back({"tf32-off-by-default", pp::Severity::info, "TF32 is off", "enable it"});
  r.exit_code = 0;
  r.exit_reason = "every requirement met natively; nothing failed";
  r.duration_ms = 812.0;
  return r;
}

std::string render(const pp::Report& r, pp::Format format, bool color = false) {
  std::ostringstream out;
  pp::make_printer(format, pp::PrintStyle{color})->print(r, out);
  return out.str();
}

}  // namespace

TEST(JsonPrinter, ReportParsesBackWithTheDocumentedFields) {
  const json j = json::parse(render(sample(), pp::Format::json));
  EXPECT_EQ(j.at("schema_version"), pp::kSchemaVersion);
  EXPECT_EQ(j.at("tool").at("name"), "precision-probe");
  EXPECT_EQ(j.at("tool").at("version"), "9.9.9");
  EXPECT_EQ(j.at("host").at("hostname"), "node1");
  EXPECT_EQ(j.at("stack").at("libtorch_version"), "2.11.0+cu130");
  EXPECT_EQ(j.at("driver").at("cuda_version"), "13.0");
  const json& dev = j.at("devices").at(0);
  EXPECT_EQ(dev.at("index"), 0);
  EXPECT_EQ(dev.at("kind"), "cuda");
  EXPECT_EQ(dev.at("gpu").at("compute_capability"), "9.0");
  EXPECT_EQ(dev.at("gpu").at("architecture"), "Hopper");
  EXPECT_EQ(dev.at("kernels").at("via"), "sm_90");
  const json& bf16 = dev.at("precisions").at("bf16");
  EXPECT_EQ(bf16.at("hardware"), "native");
  EXPECT_EQ(bf16.at("status"), "native");
  EXPECT_TRUE(bf16.at("smoke").at("ok").get<bool>());
  EXPECT_DOUBLE_EQ(bf16.at("smoke").at("rel_error").get<double>(), 2.5e-3);
  EXPECT_DOUBLE_EQ(bf16.at("smoke").at("tolerance").get<double>(), 1e-2);
  EXPECT_EQ(dev.at("precisions").at("nvfp4").at("status"), "unsupported");
  EXPECT_TRUE(dev.at("precisions").at("nvfp4").at("smoke").at("rel_error").is_null());
  EXPECT_EQ(dev.at("recommendation").at("dtype"), "bf16");
  EXPECT_EQ(j.at("requirements").at(0).at("met"), true);
  EXPECT_EQ(j.at("diagnostics").at(0).at("code"), "tf32-off-by-default");
  EXPECT_EQ(j.at("exit_code"), 0);
  EXPECT_DOUBLE_EQ(j.at("duration_ms").get<double>(), 812.0);
  EXPECT_FALSE(j.contains("error"));
}

TEST(JsonPrinter, SampleReportMatchesTheSchema) {
  bool available = false;
  const std::string problem =
      pp::testing::validate_against_schema(render(sample(), pp::Format::json), available);
  if (!available) GTEST_SKIP() << "no python3 with jsonschema (apt-get install python3-jsonschema)";
  EXPECT_EQ(problem, "");
}

TEST(JsonPrinter, InvalidUtf8FromADriverDoesNotBreakTheDocument) {
  auto r = sample();
  r.devices[0].name = "bad \xff\xfe name";
  EXPECT_NO_THROW(json::parse(render(r, pp::Format::json)));
}

TEST(TextPrinter, PrintsTheReportAsExpected) {
  const std::string expected =
      "precision-probe 9.9.9 on node1 (Ubuntu 24.04) · 0.81 s\n"
      "LibTorch 2.11.0+cu130 (CUDA 13.0, kernels: sm_90) · loaded from\n"
      "    /image/torch/lib/libtorch_cuda.so\n"
      "driver 580.1 (supports CUDA 13.0) · 1 GPU(s) visible to CUDA\n"
      "\n"
      "GPU 0 NVIDIA H200 · cc 9.0 Hopper · 132 SMs · 144.0 GiB · kernels sm_90 ·\n"
      "      selected\n"
      "  mode          hardware     status        rel.error  tolerance      time\n"
      "  bf16          native       native         2.50e-03    1.0e-02    0.5 ms\n"
      "  unsupported nvfp4: FP4 needs cc 10.0+\n"
      "  recommendation: bf16 (BF16 is native)\n"
      "\n"
      "diagnostics\n"
      "  info    tf32-off-by-default: TF32 is off\n"
      "           fix: enable it\n"
      "\n"
      "requirements\n"
      "  bf16          on GPU 0   met     (native)\n"
      "\n"
      "exit 0: every requirement met natively; nothing failed\n";
  EXPECT_EQ(render(sample(), pp::Format::text), expected);
}

TEST(TextPrinter, ColourOnlyWhenAsked) {
  const std::string plain = render(sample(), pp::Format::text, false);
  const std::string colored = render(sample(), pp::Format::text, true);
  EXPECT_EQ(plain.find('\033'), std::string::npos);
  EXPECT_NE(colored.find("\033[32mnative"), std::string::npos);
}

TEST(TextPrinter, FailuresAndUnmetRequirementsStandOut) {
  auto r = sample();
  r.devices[0].precisions[Mode::bf16].status = Status::failed;
  r.devices[0].precisions[Mode::bf16].reason =
      "wrong result: relative error 0.5 exceeds the tolerance 0.01";
  r.requirements[0].met = false;
  r.requirements[0].status = Status::failed;
  r.exit_code = 4;
  r.exit_reason = "GPU 0 bf16 failed";
  const std::string text = render(r, pp::Format::text);
  EXPECT_NE(text.find("failed       "), std::string::npos);
  EXPECT_NE(text.find("relative error 0.5"), std::string::npos);
  EXPECT_NE(text.find("NOT MET (failed)"), std::string::npos);
  EXPECT_NE(text.find("exit 4: GPU 0 bf16 failed"), std::string::npos);
}

namespace {

pp::Report with_amp() {
  auto r = sample();
  pp::PrecisionResult fp16;
  fp16.hardware = pp::Hardware::native;
  fp16.status = Status::native;
  fp16.amp = pp::testing::passed_amp(Mode::amp_fp16);
  r.devices[0].precisions.set(Mode::amp_fp16, fp16);
  return r;
}

}  // namespace

TEST(JsonPrinter, TrainingRunsGoUnderAmp) {
  const json j = json::parse(render(with_amp(), pp::Format::json));
  const json& dev = j.at("devices").at(0);
  EXPECT_FALSE(dev.at("precisions").contains("amp_fp16"));
  const json& amp = dev.at("amp").at("amp_fp16");
  EXPECT_EQ(amp.at("status"), "native");
  EXPECT_EQ(amp.at("steps"), 30);
  EXPECT_DOUBLE_EQ(amp.at("loss_start").get<double>(), 2.3);
  EXPECT_DOUBLE_EQ(amp.at("fp32_loss_end").get<double>(), 0.498);
  EXPECT_EQ(amp.at("dtypes").at("matmul"), "fp16");
  EXPECT_EQ(amp.at("dtypes").at("loss"), "fp32");
  EXPECT_EQ(amp.at("loss_scaling").at("skipped_steps"), 1);
  EXPECT_EQ(amp.at("loss_scaling").at("overflow_handled"), true);
  EXPECT_EQ(amp.at("memory").at("peak_bytes"), 60 << 20);
  EXPECT_NEAR(amp.at("memory").at("ratio_to_fp32").get<double>(), 60.0 / 110.0, 1e-12);
  bool available = false;
  const std::string problem =
      pp::testing::validate_against_schema(render(with_amp(), pp::Format::json), available);
  if (available) {
    EXPECT_EQ(problem, "");
  }
}

// A training run is a row of the table: its final loss's relative distance from an fp32 run's,
// the tolerance, its time.
TEST(TextPrinter, TrainingRunsAreRowsOfTheTable) {
  const std::string text = render(with_amp(), pp::Format::text);
  EXPECT_NE(
      text.find("  amp_fp16      native       native         4.00e-03    2.0e-02   40.0 ms\n"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("  training"), std::string::npos) << text;
  // A second or more in seconds, within the column.
  pp::Report slow = with_amp();
  slow.devices[0].precisions[Mode::amp_fp16].amp->ms = 4543.5;
  EXPECT_NE(render(slow, pp::Format::text).find("    2.0e-02    4.54 s\n"), std::string::npos)
      << render(slow, pp::Format::text);
}

TEST(TextPrinter, FreeTextWrapsAtTheWidthWithoutTrailingSpaces) {
  auto r = sample();
  r.devices[0].recommendation.reason = std::string(
      "cc 9.0 (Hopper) runs BF16 natively: autocast to bf16; BF16 keeps FP32's exponent range, so "
      "no loss scaling is needed, and this sentence goes on to be long enough to wrap twice");
  r.diagnostics[0].hint =
      "start the container with GPUs: `docker run --gpus all ...` (NVIDIA Container Toolkit), "
      "`runtime: nvidia` in Compose, a `nvidia.com/gpu` resource limit in Kubernetes";
  std::ostringstream narrow;
  pp::make_printer(pp::Format::text, pp::PrintStyle{false, 80})->print(r, narrow);
  std::istringstream lines(narrow.str());
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    EXPECT_LE(pp::visible_width(line), 80U) << line;
    EXPECT_TRUE(line.empty() || line.back() != ' ') << "trailing space: '" << line << "'";
  }
  EXPECT_GT(count, 20);
  EXPECT_NE(narrow.str().find("           fix: start the container"), std::string::npos);
  EXPECT_NE(narrow.str().find("\n                (NVIDIA Container Toolkit), `runtime: nvidia`"),
            std::string::npos)
      << narrow.str();
  // On a wide terminal the recommendation stays on one line.
  std::ostringstream wide;
  pp::make_printer(pp::Format::text, pp::PrintStyle{false, 200})->print(r, wide);
  EXPECT_NE(wide.str().find("long enough to wrap twice)\n"), std::string::npos) << wide.str();
  EXPECT_NE(wide.str().find("\n  recommendation: bf16 (cc 9.0"), std::string::npos) << wide.str();
}

TEST(TextPrinter, CpuThroughputIsInGigaflops) {
  pp::Report r = sample();
  pp::DeviceReport cpu;
  cpu.kind = pp::DeviceKind::cpu;
  cpu.name = "AMD EPYC";
  pp::PrecisionResult fp32 = native(2e-7, 1e-5);
  pp::BenchResult b;
  b.outcome.ran = b.outcome.ok = true;
  b.outcome.size = 1024;
  b.outcome.tflops = 0.0082;  // 8.2 GFLOP/s: "0.0082" TFLOP/s would read as nothing
  b.outcome.ms = 261.0;
  fp32.bench = b;
  pp::PrecisionResult int8 = native(0.0, 0.0);
  b.outcome.tflops = 0.0731;  // integer operations: GOPS
  int8.bench = b;
  cpu.precisions = {{Mode::fp32, fp32}, {Mode::int8, int8}};
  r.devices = {cpu};
  const std::string text = render(r, pp::Format::text);
  EXPECT_NE(text.find("  bench           GFLOP/s sustained"), std::string::npos) << text;
  EXPECT_NE(text.find("  fp32                8.2 "), std::string::npos) << text;
  EXPECT_NE(text.find("  int8               73.1 "), std::string::npos) << text;
  EXPECT_NE(text.find("integer ops: GOPS, not GFLOP/s\n"), std::string::npos) << text;
}

namespace {

// A report holding every kind of line the text printer writes, with long values: training runs,
// bench rows with notes, a soak with an injected fault, golden disagreement and a straggler,
// collectives with peers, a failure, a long path, diagnostics and requirements.
pp::Report every_kind_of_line() {
  pp::Report r = with_amp();
  r.host.hostname = "gpu-node-0042.training-cluster.example.internal";
  r.host.os = "Ubuntu 24.04.1 LTS";
  r.host.container = true;
  r.stack.library =
      "/opt/conda/envs/training-environment-with-a-long-name/lib/python3.12/"
      "site-packages/torch/lib/libtorch_cuda.so";
  pp::DeviceReport& d = r.devices[0];
  pp::PrecisionResult failed = native(0.5, 1e-2);
  failed.status = Status::failed;
  failed.reason =
      "relative error 5.0e-01 exceeds the tolerance 1.0e-02: the GPU computed wrong "
      "numbers for this precision (see docs/diagnostics.md#smoke-test-failed)";
  d.precisions.set(Mode::fp8_rowwise, failed);
  pp::PrecisionResult bf16 = d.precisions[Mode::bf16];
  pp::BenchResult b;
  b.outcome.ran = b.outcome.ok = true;
  b.outcome.size = 16384;
  b.outcome.tflops = 801.123;
  b.outcome.sustained_tflops = 712.5;
  b.outcome.ms = 10.9876;
  b.ratio_to_fp32 = 14.52;
  b.peak_tflops = 989.4;
  b.percent_of_peak = 81.0;
  b.peak_source = "NVIDIA H200 datasheet, dense (half the sparse figure), SXM at its boost clock";
  d.precisions[Mode::bf16].bench = b;
  pp::SoakReport soak;
  soak.injected = true;
  pp::SoakOutcome o;
  o.ran = true;
  o.iterations = 123456789;
  o.mismatches = 12345;
  o.first_mismatch = pp::SoakMismatch{};
  o.first_mismatch->iteration = 200;
  o.first_mismatch->seconds = 18.4;
  o.tflops = 799.9;
  o.seconds = 29.9;
  o.error =
      "12345 of 123456789 results differ from the golden one: silent data corruption under "
      "load (docs/soak.md)";
  soak.modes = {{Mode::bf16, o}};
  soak.golden_disagreement = "bf16, fp8_e4m3 golden results differ from GPUs 1, 2, 3, 4, 5, 6, 7";
  soak.straggler = "bf16 at 612.0 TFLOP/s is 23 % below the median of the 8 NVIDIA H200 (799.9)";
  d.soak = soak;
  pp::CollectivesReport c;
  c.requested = true;
  c.status = Status::failed;
  c.reason = "the fp16 all-reduce's result differs from the exact sum on rank 3 of 8";
  c.nccl_version = "2.28.9";
  c.devices = {0, 1, 2, 3, 4, 5, 6, 7};
  pp::CollectiveOutcome a;
  a.dtype = pp::DType::fp16;
  a.ran = true;
  a.bytes = 1LL << 30U;
  a.time_ms = 1234.567;
  a.algbw_gbps = 123456.7;
  a.busbw_gbps = 216049.2;
  a.error = "rank 3: 1048576 elements differ from the exact sum";
  c.all_reduce = {a};
  c.peers = {{0, 1, true, 0, true}};
  r.collectives = c;
  r.diagnostics.push_back(
      {"libtorch-not-loadable", pp::Severity::error,
       "dlopen(/opt/conda/envs/training-environment-with-a-long-name/lib/python3.12/site-packages/"
       "torch/lib/libtorch_cuda.so) failed: libcudart.so.13: cannot open shared object file",
       "install the CUDA runtime wheel of torch's CUDA (nvidia-cuda-runtime) next to torch"});
  r.requirements.push_back({Mode::fp8_rowwise, "GPU 0", false, Status::failed, failed.reason});
  r.exit_code = 4;
  r.exit_reason =
      "a check failed: fp8_rowwise on GPU 0 computed wrong numbers (relative error "
      "5.0e-01 against 1.0e-02), and GPU 0's soak found 12345 mismatches";
  return r;
}

}  // namespace

// The text report fits 80 columns: every line, or, where one token alone is wider (a long path),
// that token on a line of its own.
TEST(TextPrinter, EveryLineFitsEightyColumns) {
  const pp::Report r = every_kind_of_line();
  for (const bool color : {false, true}) {
    std::ostringstream out;
    pp::make_printer(pp::Format::text, pp::PrintStyle{color, 80})->print(r, out);
    const std::string text = out.str();
    for (const char* expected :
         {"  amp_fp16", "  bench", "  soak", "collectives", "peer access", "a fault was injected",
          "golden: ", "straggler: ", "diagnostics", "requirements", "NOT MET"}) {
      EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
    }
    std::istringstream lines(text);
    std::string line;
    int wide_tokens = 0;
    while (std::getline(lines, line)) {
      if (pp::visible_width(line) <= 80) continue;
      const std::size_t start = line.find_first_not_of(' ');
      const bool one_token = line.find(' ', start) == std::string::npos;
      EXPECT_TRUE(one_token) << pp::visible_width(line) << " columns: " << line;
      wide_tokens += one_token ? 1 : 0;
    }
    EXPECT_GE(wide_tokens, 1) << "the long path should stand alone:\n" << text;
  }
}

// With no stack known (--quick with none found, PRECISION_PROBE_TORCH=none), every output says
// "unknown", as text and JSON do, never an empty version.
TEST(Printers, AnUnknownStackIsSaidToBeUnknown) {
  pp::Report r = sample();
  r.stack = pp::StackInfo{};
  r.stack.error = "not looked for (PRECISION_PROBE_TORCH=none)";
  r.run.quick = true;
  const std::string md = render(r, pp::Format::markdown);
  EXPECT_NE(md.find(" · LibTorch unknown · driver 580.1"), std::string::npos) << md;
  EXPECT_EQ(md.find("LibTorch  ("), std::string::npos) << md;
  const std::string prom = render(r, pp::Format::prometheus);
  EXPECT_NE(prom.find(R"(libtorch="unknown",cuda="unknown")"), std::string::npos) << prom;
  EXPECT_NE(render(r, pp::Format::text).find("LibTorch: not looked for"), std::string::npos);
  // A known CPU-only stack keeps its version.
  r.stack = pp::testing::cuda_stack();
  r.stack.cuda_built = false;
  r.stack.cuda_version.reset();
  EXPECT_NE(render(r, pp::Format::markdown).find("LibTorch 2.11.0+cu130 (CPU only)"),
            std::string::npos);
}

namespace {

// A visible H200 like sample()'s, at `index`, with bf16's error and time as given.
pp::DeviceReport h200(int index, double rel_error = 2.5e-3, double ms = 0.5) {
  pp::DeviceReport d = sample().devices.front();
  d.index = index;
  d.gpu->index = index;
  d.gpu->uuid = "GPU-" + std::to_string(index);
  d.gpu->pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x17 + index);
  d.gpu->memory_free = static_cast<std::uint64_t>(140 - index) << 30U;
  d.precisions[Mode::bf16].smoke.rel_error = rel_error;
  d.precisions[Mode::bf16].smoke.ms = ms;
  return d;
}

pp::Report node(std::vector<pp::DeviceReport> devices) {
  pp::Report r = sample();
  r.devices = std::move(devices);
  r.requirements.clear();
  r.exit_reason = "no requirement given; nothing failed";
  return r;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

// GPUs of the same model with the same verdicts share a table: it names them, their PCI bus ids
// and free memory briefly, and shows each mode's largest error and longest time.
TEST(TextPrinter, IdenticalGpusShareATableWithTheirLargestErrorAndLongestTime) {
  const std::string text =
      render(node({h200(0, 1e-3, 0.2), h200(1, 4e-3, 0.3), h200(2, 2e-3, 0.9)}), pp::Format::text);
  EXPECT_NE(
      text.find("GPU 0-2 NVIDIA H200 ×3 · cc 9.0 Hopper · 132 SMs · 144.0 GiB (138.0-140.0 GiB\n"
                "      free) · 0000:{17,18,19}:00.0 · kernels sm_90 · selected\n"),
      std::string::npos)
      << text;
  EXPECT_EQ(count(text, "  mode "), 1U) << text;
  EXPECT_NE(
      text.find("  mode          hardware     status        max error  tolerance  max time\n"
                "  bf16          native       native         4.00e-03    1.0e-02    0.9 ms\n"),
      std::string::npos)
      << text;
}

// A GPU whose verdict differs, or another model, has a table of its own; the others still share.
TEST(TextPrinter, AGpuWhoseVerdictDiffersHasATableOfItsOwn) {
  std::vector<pp::DeviceReport> gpus = {h200(0), h200(1), h200(2), h200(3), h200(4)};
  gpus[2].precisions[Mode::bf16].status = Status::failed;
  gpus[2].precisions[Mode::bf16].reason = "wrong result: relative error 0.5";
  gpus[4].name = gpus[4].gpu->name = "NVIDIA H100";
  const std::string text = render(node(gpus), pp::Format::text);
  EXPECT_NE(text.find("\nGPU 0,1,3 NVIDIA H200 ×3 · "), std::string::npos) << text;
  EXPECT_NE(text.find("\nGPU 2 NVIDIA H200 · "), std::string::npos) << text;
  EXPECT_NE(text.find("\nGPU 4 NVIDIA H100 · "), std::string::npos) << text;
  EXPECT_EQ(count(text, "  mode "), 3U) << text;
  EXPECT_NE(text.find("  bf16          native       failed"), std::string::npos) << text;
  EXPECT_NE(text.find("  bf16: wrong result: relative error 0.5\n"), std::string::npos) << text;
}

// A reason is said once: with the modes it explains, after the first table it explains; later
// tables, the requirements and the recommendation point back to it or leave it out.
TEST(TextPrinter, EachReasonIsSaidOnce) {
  const std::string why = "no PyTorch was found, so no kernel ran";
  std::vector<pp::DeviceReport> gpus = {h200(0), h200(1)};
  for (pp::DeviceReport& d : gpus) {
    for (Mode mode : {Mode::fp8_e4m3, Mode::fp8_e5m2}) {
      pp::PrecisionResult p;
      p.hardware = pp::Hardware::native;
      p.reason = why;
      d.precisions.set(mode, p);
    }
    d.recommendation = {
        pp::DType::fp32, false,
        "it has fp8_e4m3 in hardware, but here it is not_tested (" + why + "): train in fp32"};
  }
  gpus[1].precisions[Mode::bf16].status = Status::failed;
  gpus[1].precisions[Mode::bf16].reason = "wrong result";
  pp::Report r = node(gpus);
  r.requirements.push_back({Mode::fp8_e4m3, "GPU 1", false, Status::not_tested, why});
  const std::string text = render(r, pp::Format::text);
  EXPECT_EQ(count(text, why), 1U) << text;
  EXPECT_EQ(count(text, "FP4 needs cc 10.0+"), 1U) << text;
  EXPECT_NE(text.find("  fp8_e4m3, fp8_e5m2: " + why + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  fp8_e4m3, fp8_e5m2: as for GPU 0 above\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  unsupported nvfp4: as for GPU 0 above\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  recommendation: fp32 (it has fp8_e4m3 in hardware, but here it is "
                      "not_tested:\n    train in fp32)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("NOT MET (not_tested): as for GPU 0 above\n"), std::string::npos) << text;
}

namespace {

pp::DeviceReport a_cpu(bool selected) {
  pp::DeviceReport cpu;
  cpu.kind = pp::DeviceKind::cpu;
  cpu.name = "AMD EPYC";
  cpu.selected = selected;
  cpu.cpu = pp::CpuInfo{"AMD EPYC", "x86_64", 8, 4, std::nullopt, {"avx2"}};
  pp::PrecisionResult bf16 = native(2e-3, 1e-2);
  bf16.hardware = pp::Hardware::emulated;
  bf16.status = Status::emulated;
  bf16.reason = "no AVX512-BF16: slower than FP32";
  cpu.precisions = {{Mode::fp32, native(2e-7, 1e-5)},
                    {Mode::tf32, unsupported("no TF32 on CPUs")},
                    {Mode::bf16, bf16},
                    {Mode::nvfp4, unsupported("no FP4 on CPUs")},
                    {Mode::mxfp4, unsupported("no FP4 on CPUs")}};
  cpu.recommendation = {pp::DType::fp32, false, "this CPU has no native BF16 or FP16"};
  return cpu;
}

}  // namespace

// A device reported beside gated ones, not gated itself, is summarised in a line or two; where
// nothing is gated, it has its table.
TEST(TextPrinter, ADeviceNotGatedBesideGatedOnesIsSummarised) {
  const std::string text = render(node({h200(0), a_cpu(false)}), pp::Format::text);
  EXPECT_NE(text.find("\nCPU   AMD EPYC · x86_64 · 8 threads · reported, not gated: native fp32 ·\n"
                      "      emulated bf16 · 3 unsupported · recommendation fp32\n\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(count(text, "  mode "), 1U) << text;
  const std::string alone = render(node({a_cpu(false)}), pp::Format::text);
  EXPECT_NE(alone.find("  bf16          emulated     emulated       2.00e-03"), std::string::npos)
      << alone;
  EXPECT_NE(alone.find("  unsupported nvfp4, mxfp4: no FP4 on CPUs\n"), std::string::npos) << alone;
}

// A run in which no kernel ran says so on its last line, with the gate a CI step would use and
// what it would give; a run in which one ran does not.
TEST(TextPrinter, ARunInWhichNoKernelRanSaysSoOnItsLastLine) {
  auto last_line = [](const std::string& text) {
    const std::size_t end = text.find_last_not_of('\n');
    std::size_t start = text.rfind("\n", end);
    // A wrapped last line: from the line that does not start with spaces.
    while (start != std::string::npos && text.compare(start + 1, 4, "    ") == 0) {
      start = text.rfind("\n", start - 1);
    }
    return text.substr(start + 1);
  };
  EXPECT_EQ(last_line(render(node({h200(0)}), pp::Format::text)),
            "exit 0: no requirement given; nothing failed\n");
  pp::DeviceReport gpu = h200(0);
  pp::PrecisionResult& bf16 = gpu.precisions[Mode::bf16];
  bf16.status = Status::not_tested;
  bf16.smoke = {};
  bf16.failure = pp::ErrorKind::unavailable;
  bf16.reason = "no engine";
  EXPECT_EQ(last_line(render(node({gpu}), pp::Format::text)),
            "no kernel ran: nothing here is proven. --require bf16 gates a CI step: exit 0\n"
            "    only where a bf16 kernel runs and is right (here: exit 3).\n");
  pp::Report quick = node({gpu});
  quick.run.quick = true;
  quick.devices[0].precisions[Mode::bf16].failure = pp::ErrorKind::none;
  EXPECT_NE(last_line(render(quick, pp::Format::text))
                .find("without --quick, exit 0 only where a bf16 kernel runs and is right; under\n"
                      "    --quick the hardware alone meets it (here: exit 0)."),
            std::string::npos);
  // No GPU: the CPU is there to be gated, by its best native precision.
  pp::Report cpu_only = node({a_cpu(false)});
  for (auto [mode, p] : cpu_only.devices[0].precisions) {
    if (p.status == Status::unsupported) continue;
    p.smoke = {};
    p.status = Status::not_tested;
    p.failure = pp::ErrorKind::unavailable;
    p.reason = "no engine";
  }
  EXPECT_NE(last_line(render(cpu_only, pp::Format::text))
                .find("--device cpu --require fp32 gates a CI\n    step: exit 0 only where an fp32 "
                      "kernel runs and is right (here: exit 3)."),
            std::string::npos)
      << render(cpu_only, pp::Format::text);
}

// Peer access alike between every pair of GPUs is one line; links that differ are listed by kind.
TEST(TextPrinter, PeerAccessAlikeBetweenEveryPairIsOneLine) {
  pp::Report r = node({h200(0), h200(1), h200(2)});
  pp::CollectivesReport c;
  c.devices = {0, 1, 2};
  for (int from = 0; from < 3; ++from) {
    for (int to = 0; to < 3; ++to) {
      if (from != to) c.peers.push_back({from, to, true, 0, true});
    }
  }
  r.collectives = c;
  EXPECT_NE(render(r, pp::Format::text)
                .find("  peer access between every pair of the 3 GPUs: yes, performance rank 0, "
                      "native\n    atomics\n"),
            std::string::npos)
      << render(r, pp::Format::text);
  r.collectives->peers.back() = {2, 1, false, std::nullopt, false};
  const std::string text = render(r, pp::Format::text);
  EXPECT_NE(text.find("  peer access yes, performance rank 0, native atomics: GPU 0->1, 0->2, "
                      "1->0,\n    1->2, 2->0\n  peer access no: GPU 2->1\n"),
            std::string::npos)
      << text;
}

// A fix said for an earlier diagnostic is pointed back to, not said again.
TEST(TextPrinter, AFixSaidForAnEarlierDiagnosticIsPointedBackTo) {
  pp::Report r = sample();
  r.diagnostics.push_back({"another-one", pp::Severity::warning, "it happened", "enable it"});
  const std::string text = render(r, pp::Format::text);
  EXPECT_EQ(count(text, "fix: enable it"), 1U) << text;
  EXPECT_NE(text.find("           fix: as for tf32-off-by-default above\n"), std::string::npos)
      << text;
}

// In a group each GPU's soak is its own (a row per GPU and mode, its telemetry); the benchmark
// shows each mode's slowest GPU and says how far apart they are. Every line fits 80 columns.
TEST(TextPrinter, AGroupsSoakIsPerGpuAndItsBenchTheSlowest) {
  std::vector<pp::DeviceReport> gpus = {h200(0), h200(1)};
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    pp::BenchResult b;
    b.outcome.ran = b.outcome.ok = true;
    b.outcome.size = 8192;
    b.outcome.tflops = i == 0 ? 800.0 : 600.0;
    b.outcome.ms = i == 0 ? 1.4 : 1.8;
    b.peak_tflops = 989.4;
    b.peak_source = "datasheet: NVIDIA H200";
    gpus[i].precisions[Mode::bf16].bench = b;
    pp::SoakReport soak;
    pp::SoakOutcome o;
    o.ran = o.ok = true;
    o.iterations = 1000 + static_cast<std::int64_t>(i);
    o.tflops = 700.0;
    o.seconds = 30.0;
    soak.modes = {{Mode::bf16, o}};
    pp::SoakTelemetry t;
    t.samples = 60;
    t.max_temperature_c = 58 + static_cast<int>(i);
    soak.telemetry = t;
    gpus[i].soak = soak;
  }
  const std::string text = render(node(gpus), pp::Format::text);
  EXPECT_NE(text.find("  bf16                600 "), std::string::npos) << text;
  EXPECT_NE(text.find("  each row the slowest of the 2 GPUs; more than 5 % apart: bf16 600 (GPU 1) "
                      "to\n    800 (GPU 0)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  bf16            0      1000          0"), std::string::npos) << text;
  EXPECT_NE(text.find("  bf16            1      1001          0"), std::string::npos) << text;
  EXPECT_NE(text.find("  telemetry GPU 1: 60 samples · up to 59 °C"), std::string::npos) << text;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(pp::visible_width(line), 80U) << line;
  }
}

// Markdown says each reason once, with the devices and modes it explains.
TEST(MarkdownPrinter, EachReasonOnceWithTheDevicesAndModesItExplains) {
  std::vector<pp::DeviceReport> gpus = {h200(0), h200(1), h200(2), h200(3)};
  gpus[3].precisions.set(Mode::mxfp4, unsupported("FP4 needs cc 10.0+"));
  const std::string md = render(node(gpus), pp::Format::markdown);
  EXPECT_NE(md.find("- **GPU 0-2 nvfp4** (unsupported): FP4 needs cc 10.0+\n"
                    "- **GPU 3 nvfp4, mxfp4** (unsupported): FP4 needs cc 10.0+\n"),
            std::string::npos)
      << md;
}
