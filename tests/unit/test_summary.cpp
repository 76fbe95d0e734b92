// `precision-probe summarize`: reports of many nodes read through the public report API and
// summarised; what a fleet's view must find (verdicts per model and mode, outliers, stale,
// unreadable and unknown reports, requirements) and the exit code with the gate's precedence.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "binary.hpp"
#include "fakes.hpp"
#include "precision_probe/report_json.hpp"
#include "probe/fleet/fleet_reader.hpp"
#include "probe/fleet/summary.hpp"
#include "probe/fleet/summary_printers.hpp"
#include "probe/run/probe.hpp"
#include "strings/strings.hpp"

namespace pp = precision_probe;
using pp::Mode;
using pp::Status;

namespace {

const pp::testing::FakeGpu kH200{"NVIDIA H200", {9, 0}, 132, 141};
const pp::testing::FakeGpu kT4{"Tesla T4", {7, 5}, 40, 15};
constexpr std::int64_t kNow = 1796115600000;  // 2026-12-01T09:00:00Z

// A node's report as the probe makes it (fake driver and engine), named and dated.
pp::Report node_report(const std::string& host, const std::vector<pp::testing::FakeGpu>& gpus,
                       std::int64_t age_s = 60) {
  pp::testing::FakeSystem system;
  system.files["/proc/cpuinfo"] = pp::testing::cpuinfo_with_flags("Test CPU", "avx2 fma", 4);
  pp::testing::FakeDriver driver = pp::testing::driver_with(gpus);
  pp::testing::FakeEngine engine;
  pp::Options options;
  options.seed = 7;
  const pp::StackInfo image = pp::testing::cuda_stack();
  pp::Report r =
      pp::run_probe(options, pp::ProbeDeps{system, driver, engine, pp::testing::image_of(&image)});
  r.host.hostname = host;
  r.host.node_name = host;
  r.started_at = pp::format_utc_timestamp(kNow / 1000 - age_s);
  return r;
}

pp::DeviceReport& gpu(pp::Report& r, int index) {
  for (pp::DeviceReport& d : r.devices) {
    if (d.kind == pp::DeviceKind::cuda && d.index == index) return d;
  }
  throw std::runtime_error("no such GPU");
}

void set_bench(pp::Report& r, int index, Mode mode, double tflops) {
  pp::BenchResult b;
  b.outcome.ran = true;
  b.outcome.ok = true;
  b.outcome.tflops = tflops;
  b.outcome.sustained_tflops = tflops;
  gpu(r, index).find(mode)->bench = b;
}

pp::FleetReadOptions threaded(unsigned threads) {
  pp::FleetReadOptions o;
  o.threads = threads;
  return o;
}

// The reports' records, each read back through the JSON as the command reads them, named r0.json...
pp::FleetInputs inputs_of(const std::vector<pp::Report>& reports,
                          const std::vector<Mode>& require) {
  pp::FleetInputs inputs;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto read = pp::read_report_json(pp::report_to_json(reports[i]));
    EXPECT_TRUE(read) << read.error();
    inputs.nodes.push_back(
        pp::node_record(*read, "r" + std::to_string(i) + ".json", i, require, *inputs.texts));
  }
  return inputs;
}

pp::FleetSummary summarize(const std::vector<pp::Report>& reports, pp::SummaryOptions o = {}) {
  if (o.now_ms == 0) o.now_ms = kNow;
  return pp::summarize(inputs_of(reports, o.require), o);
}

// --soak on a GPU that found `mismatches` results unlike the golden one in `mode`, and the mode
// failed for it, as verdicts/soak judges it.
void soak_mismatch(pp::Report& r, int index, Mode mode, std::int64_t mismatches) {
  pp::DeviceReport& d = gpu(r, index);
  if (!d.soak) d.soak = pp::SoakReport{};
  d.soak->seconds = 10;
  pp::SoakOutcome o;
  o.ran = true;
  o.iterations = 40;
  o.mismatches = mismatches;
  o.ok = mismatches == 0;
  o.error = mismatches > 0 ? "2 of 40 results differed from the golden one" : "";
  d.soak->modes.set(mode, o);
  if (mismatches > 0) {
    pp::PrecisionResult* p = d.find(mode);
    p->status = Status::failed;
    p->failure = pp::ErrorKind::wrong_result;
    p->reason = "soak: " + o.error;
  }
}

pp::FileIdentity identity(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

const pp::ModeSummary* mode_summary(const pp::FleetSummary& s, Mode mode) {
  for (const pp::ModeSummary& m : s.modes) {
    if (m.mode == mode) return &m;
  }
  return nullptr;
}

std::string write_file(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(Summary, CountsEachModelsGpusPerModeAndGroupsWhatIsNotNative) {
  const pp::FleetSummary s = summarize(
      {node_report("a", {kH200, kH200}), node_report("b", {kH200, kT4}), node_report("c", {kT4})});
  EXPECT_EQ(s.reports, 3);
  EXPECT_EQ(s.nodes, 3);
  EXPECT_EQ(s.gpus, 5);
  ASSERT_EQ(s.models.size(), 2U);
  EXPECT_EQ(s.models[0].model, "NVIDIA H200");
  EXPECT_EQ(s.models[0].nodes, 2);
  EXPECT_EQ(s.models[0].gpus, 3);
  EXPECT_EQ(s.models[1].model, "Tesla T4");
  EXPECT_EQ(s.models[1].gpus, 2);
  const pp::ModeSummary* bf16 = mode_summary(s, Mode::bf16);
  ASSERT_NE(bf16, nullptr);
  EXPECT_EQ(bf16->count(Status::native), 3);
  EXPECT_EQ(bf16->count(Status::emulated), 2);
  ASSERT_EQ(bf16->not_native.size(), 1U);
  const pp::NotNativeGroup& g = bf16->not_native[0];
  EXPECT_EQ(g.status, Status::emulated);
  EXPECT_NE(g.reason.find("cc 7.5"), std::string::npos);
  EXPECT_EQ(g.nodes, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(g.gpus, 2);
  ASSERT_EQ(g.devices.size(), 2U);
  EXPECT_EQ(g.devices[0].rfind("b GPU 1 (GPU-", 0), 0U) << g.devices[0];
  EXPECT_FALSE(g.whole_nodes);  // b's H200 is native
  EXPECT_EQ(s.exit_code, 0) << s.exit_reason;
  // The CPU is not counted among the GPUs.
  int counted = 0;
  for (int n : bf16->gpus_by_status) counted += n;
  EXPECT_EQ(counted, 5);
}

TEST(Summary, TheNewerOfTwoReportsOfAHostCounts) {
  pp::Report old = node_report("a", {kT4}, 7200);
  pp::Report now = node_report("a", {kH200}, 60);
  for (const auto& order : {std::vector<pp::Report>{old, now}, std::vector<pp::Report>{now, old}}) {
    const pp::FleetSummary s = summarize(order);
    EXPECT_EQ(s.nodes, 1);
    ASSERT_EQ(s.models.size(), 1U);
    EXPECT_EQ(s.models[0].model, "NVIDIA H200");
    ASSERT_EQ(s.superseded.size(), 1U);
    EXPECT_EQ(s.superseded[0].node, "a");
  }
}

// In Kubernetes without hostNetwork each pod has its own hostname: a node is known by its node name
// (PRECISION_PROBE_NODE_NAME), so a replaced pod's report supersedes its predecessor's; a report
// written before node_name existed is known by its hostname.
TEST(Summary, ANodeIsKnownByItsNodeNameNotItsPodsHostname) {
  pp::Report old = node_report("precision-probe-x7k2p", {kT4}, 7200);
  old.host.node_name = "gpu-07";
  pp::Report now = node_report("precision-probe-9qzmd", {kH200}, 60);
  now.host.node_name = "gpu-07";
  pp::Report other = node_report("precision-probe-5b8wc", {kH200}, 60);
  other.host.node_name = "gpu-08";
  for (const auto& order :
       {std::vector<pp::Report>{old, now, other}, std::vector<pp::Report>{now, other, old}}) {
    const pp::FleetSummary s = summarize(order);
    EXPECT_EQ(s.reports, 3);
    EXPECT_EQ(s.nodes, 2);
    ASSERT_EQ(s.models.size(), 1U);
    EXPECT_EQ(s.models[0].model, "NVIDIA H200");
    EXPECT_EQ(s.models[0].nodes, 2);
    ASSERT_EQ(s.superseded.size(), 1U);
    EXPECT_EQ(s.superseded[0].node, "gpu-07");
  }
  // A report of before (no node_name in its JSON) is its hostname's.
  pp::Report before = node_report("gpu-07", {kT4}, 7200);
  nlohmann::json j = nlohmann::json::parse(pp::report_to_json(before));
  j["host"].erase("node_name");
  const auto read = pp::read_report_json(j.dump());
  ASSERT_TRUE(read) << read.error();
  EXPECT_EQ(read->host.node_name, "");
  EXPECT_EQ(read->host.node(), "gpu-07");
  pp::FleetInputs inputs = inputs_of({now}, {});
  inputs.nodes.push_back(pp::node_record(*read, "before.json", 1, {}, *inputs.texts));
  pp::SummaryOptions o;
  o.now_ms = kNow;
  const pp::FleetSummary s = pp::summarize(std::move(inputs), o);
  EXPECT_EQ(s.nodes, 1);
  ASSERT_EQ(s.superseded.size(), 1U);
  EXPECT_EQ(s.superseded[0].node, "gpu-07");
}

TEST(Summary, AReportOlderThanMaxAgeOrOfNoKnownAgeIsStaleAndExits3) {
  pp::Report undated = node_report("c", {kH200});
  undated.started_at.clear();
  pp::SummaryOptions o;
  o.max_age_s = 24 * 3600;
  const pp::FleetSummary s = summarize(
      {node_report("a", {kH200}, 3600), node_report("b", {kH200}, 3 * 86400), undated}, o);
  ASSERT_EQ(s.stale.size(), 2U);
  EXPECT_EQ(s.stale[0].node, "b");
  EXPECT_NE(s.stale[0].why.find("(3d ago)"), std::string::npos) << s.stale[0].why;
  EXPECT_EQ(s.stale[1].node, "c");
  EXPECT_EQ(s.exit_code, 3);
  // Without --max-age, age is not judged.
  EXPECT_EQ(summarize({node_report("b", {kH200}, 3 * 86400)}).exit_code, 0);
}

TEST(Summary, AGatedDeviceThatFailedIsExit4AndAnUngatedOneIsNot) {
  pp::Report bad = node_report("bad", {kH200, kH200});
  pp::PrecisionResult* p = gpu(bad, 1).find(Mode::bf16);
  p->status = Status::failed;
  p->reason = "relative error 3.1e-01 exceeds 1.0e-02";
  pp::FleetSummary s = summarize({node_report("ok", {kH200}), bad});
  ASSERT_EQ(s.failed.size(), 1U);
  EXPECT_EQ(s.failed[0].node, "bad");
  EXPECT_EQ(s.failed[0].device, "GPU 1");
  EXPECT_EQ(s.failed[0].what, "bf16 failed: relative error 3.1e-01 exceeds 1.0e-02");
  EXPECT_EQ(s.exit_code, 4);
  gpu(bad, 1).selected = false;
  s = summarize({bad});
  EXPECT_TRUE(s.failed.empty());
  EXPECT_EQ(s.exit_code, 0);
  EXPECT_EQ(mode_summary(s, Mode::bf16)->count(Status::failed),
            1);  // still counted: it is what the GPU did
}

TEST(Summary, AReportThatExited3Or5LeavesItsNodeUnknown) {
  pp::Report hung = node_report("hung", {kH200});
  hung.exit_code = 5;
  hung.exit_reason = "the NVIDIA driver did not answer within 45 s";
  const pp::FleetSummary s = summarize({hung, node_report("ok", {kH200})});
  ASSERT_EQ(s.unknown.size(), 1U);
  EXPECT_EQ(s.unknown[0].node, "hung");
  EXPECT_NE(s.unknown[0].why.find("exited 5"), std::string::npos);
  EXPECT_EQ(s.exit_code, 3);
}

TEST(Summary, AReportOfBadInputLeavesItsNodeUnknownAndNoReportAtAllIsExit3) {
  pp::Report bad = node_report("bad", {kH200});
  bad.exit_code = 2;
  bad.exit_reason = "--device: '5' is not a device";
  EXPECT_EQ(summarize({bad}).exit_code, 3);
  const pp::FleetSummary none = summarize({});
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_EQ(none.exit_reason, "no report was read: no node is known");
}

TEST(Summary, AGpuTenPercentBelowItsModelsMedianIsAnOutlier) {
  std::vector<pp::Report> reports;
  const std::vector<double> bf16 = {700, 690, 710, 560, 640};  // 560: -20 %; 640: -8.6 %
  for (std::size_t i = 0; i < bf16.size(); ++i) {
    reports.push_back(node_report("n" + std::to_string(i), {kH200}));
    set_bench(reports.back(), 0, Mode::bf16, bf16[i]);
  }
  reports.push_back(node_report("t4", {kT4}));  // another model: another median
  set_bench(reports.back(), 0, Mode::bf16, 20);
  const pp::FleetSummary s = summarize(reports);
  ASSERT_EQ(s.outliers.size(), 1U);
  EXPECT_EQ(s.outliers[0].node, "n3");
  EXPECT_EQ(s.outliers[0].source, "bench");
  EXPECT_EQ(s.outliers[0].mode, Mode::bf16);
  EXPECT_DOUBLE_EQ(s.outliers[0].tflops, 560);
  EXPECT_DOUBLE_EQ(s.outliers[0].median, 690);
  EXPECT_EQ(s.outliers[0].peers, 5);
  EXPECT_EQ(s.exit_code, 0);  // an outlier is a finding, not a failure
}

TEST(Summary, RequiredModesAreJudgedByTheGateAndMissingOnesNamed) {
  pp::Report no_amp = node_report("no-amp", {kH200});
  for (pp::DeviceReport& d : no_amp.devices) d.precisions.erase(Mode::amp_bf16);
  pp::SummaryOptions o;
  o.require = {Mode::bf16, Mode::amp_bf16};
  pp::FleetSummary s =
      summarize({node_report("h200", {kH200}), node_report("t4", {kT4}), no_amp}, o);
  ASSERT_EQ(s.unmet.size(), 2U);  // the T4's bf16 and amp_bf16: emulated
  EXPECT_EQ(s.unmet[0].node, "t4");
  EXPECT_EQ(s.unmet[0].status, Status::emulated);
  ASSERT_EQ(s.missing.size(), 1U);
  EXPECT_EQ(s.missing[0].node, "no-amp");
  EXPECT_EQ(s.missing[0].mode, Mode::amp_bf16);
  EXPECT_EQ(s.exit_code, 1);
  o.require = {Mode::bf16};
  EXPECT_EQ(summarize({node_report("h200", {kH200})}, o).exit_code, 0);
}

// What summarize --require judges of a node, read as the command reads it (ReadDepth::verdicts), is
// what the run judged of the same requirements: every input of the gate is in the report.
TEST(Summary, ARunsOwnRequirementsAreJudgedAsTheRunJudgedThem) {
  struct Run {
    const char* what;
    std::vector<pp::testing::FakeGpu> gpus;
    bool quick = false;
    bool stack_known = true;
    bool engine = true;
  };
  for (const Run& run :
       {Run{"an H200", {kH200}}, Run{"a T4", {kT4}}, Run{"--quick on an H200", {kH200}, true},
        Run{"--quick, no PyTorch known", {kH200}, true, false},
        Run{"no engine", {kH200}, false, true, false}, Run{"no GPU", {}}}) {
    pp::testing::FakeSystem system;
    system.files["/proc/cpuinfo"] = pp::testing::cpuinfo_with_flags("Test CPU", "avx2 fma", 4);
    pp::testing::FakeDriver driver =
        run.gpus.empty() ? pp::testing::no_driver() : pp::testing::driver_with(run.gpus);
    pp::testing::FakeEngine engine;
    engine.is_installed = run.engine;
    pp::Options options;
    options.quick = run.quick;
    options.require = {Mode::bf16, Mode::fp8_e4m3, Mode::amp_bf16};
    pp::StackInfo image = pp::testing::cuda_stack();
    image.available = run.stack_known;
    const pp::Report report = pp::run_probe(
        options, pp::ProbeDeps{system, driver, engine, pp::testing::image_of(&image)});
    const auto read = pp::read_report_json(pp::report_to_json(report), pp::ReadDepth::verdicts);
    ASSERT_TRUE(read) << read.error();
    pp::TextPool texts;
    const pp::NodeRecord node = pp::node_record(*read, "r.json", 0, options.require, texts);
    ASSERT_EQ(node.requirements.size(), report.requirements.size()) << run.what;
    for (std::size_t i = 0; i < node.requirements.size(); ++i) {
      const pp::RequirementResult& judged = node.requirements[i].result;
      const pp::RequirementResult& ran = report.requirements[i];
      EXPECT_EQ(judged.met, ran.met) << run.what << ", " << pp::mode_key(ran.mode);
      EXPECT_EQ(judged.status, ran.status) << run.what << ", " << pp::mode_key(ran.mode);
      EXPECT_EQ(judged.failure, ran.failure) << run.what << ", " << pp::mode_key(ran.mode);
      EXPECT_EQ(judged.reason, ran.reason) << run.what << ", " << pp::mode_key(ran.mode);
      EXPECT_EQ(judged.device, ran.device) << run.what << ", " << pp::mode_key(ran.mode);
    }
  }
}

TEST(Summary, TheMostSevereWins3Then4Then1) {
  pp::Report failed = node_report("failed", {kH200});
  gpu(failed, 0).find(Mode::fp16)->status = Status::failed;
  pp::SummaryOptions o;
  o.require = {Mode::bf16};
  o.max_age_s = 3600;
  EXPECT_EQ(summarize({failed, node_report("stale", {kH200}, 7200)}, o).exit_code, 3);
  EXPECT_EQ(summarize({failed, node_report("t4", {kT4})}, o).exit_code, 4);
  EXPECT_EQ(summarize({node_report("t4", {kT4})}, o).exit_code, 1);
}

// A device's failures are listed in its report's order, the mode table's, whatever order its
// JSON named them in (the first is the exit's reason).
TEST(Summary, FailuresAreListedInTheOrderOfTheirReport) {
  pp::Report r = node_report("vm", {kH200});
  for (const Mode mode : {Mode::bf16, Mode::fp16}) {
    gpu(r, 0).find(mode)->status = Status::failed;
    gpu(r, 0).find(mode)->reason = std::string(pp::mode_key(mode)) + " wrong";
  }
  std::string text = pp::report_to_json(r);
  // bf16 named before fp16 in the document.
  const std::size_t fp16 = text.find("\"fp16\": {");
  const std::size_t bf16 = text.find("\"bf16\": {");
  ASSERT_LT(fp16, bf16);
  const std::size_t bf16_end = text.find("\"fp8_e4m3\": {", bf16);
  ASSERT_NE(bf16_end, std::string::npos);
  std::string bf16_entry = text.substr(bf16, bf16_end - bf16);
  text.erase(bf16, bf16_end - bf16);
  text.insert(fp16, bf16_entry);
  const pp::Expected<pp::Report> read = pp::read_report_json(text);
  ASSERT_TRUE(read) << read.error();
  const pp::FleetSummary s = summarize({*read});
  ASSERT_EQ(s.failed.size(), 2U);
  EXPECT_EQ(s.failed[0].what, "fp16 failed: fp16 wrong");
  EXPECT_EQ(s.failed[1].what, "bf16 failed: bf16 wrong");
  EXPECT_NE(s.exit_reason.find("first: vm GPU 0: fp16 failed"), std::string::npos) << s.exit_reason;
}

// Where no thread can be started (RLIMIT_NPROC reached), the reading and the summary run on the
// one thread there is and say the same as with every core (in binary.hpp's child, run as nobody
// where the test runs as root: what it reads is readable by all).
TEST(Summary, WithoutASecondThreadTheSummaryIsTheSame) {
  const std::string dir = pp::testing::make_temp_dir();
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  for (const char* host : {"a", "b", "c"}) {
    pp::Report r = node_report(host, {kH200, kH200});
    set_bench(r, 0, Mode::bf16, 700.0);
    set_bench(r, 1, Mode::bf16, host == std::string("c") ? 400.0 : 710.0);
    const std::string path = write_file(dir, std::string(host) + ".json", pp::report_to_json(r));
    ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  }
  const auto view = [&](int threads) {
    pp::FleetSummary s =
        pp::summarize(pp::read_fleet_reports({dir}, -1, threaded(threads)), {{}, {}, kNow});
    s.duration_ms = 0;
    return pp::print_summary(s, pp::SummaryFormat::json);
  };
  const std::string expected = view(4);
  ASSERT_NE(expected.find("\"outliers\""), std::string::npos);
  const pp::Expected<std::string> got = pp::testing::without_threads([&view] { return view(4); });
  ASSERT_TRUE(got) << got.error();
  EXPECT_EQ(*got, expected);
}

TEST(Summary, ReadsFilesDirectoriesAndJsonLinesAndNamesWhatItCannotRead) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string a = write_file(dir, "a.json", pp::report_to_json(node_report("a", {kH200})));
  write_file(dir, "b.json", pp::report_to_json(node_report("b", {kT4})));
  const std::string cut = pp::report_to_json(node_report("cut", {kH200}));
  write_file(dir, "cut.json", cut.substr(0, cut.size() / 2));
  write_file(dir, "notes.txt", "not a report and not read: only *.json in a directory");
  write_file(dir, ".hidden.json", "not read: a dot file");
  ASSERT_EQ(::mkdir((dir + "/sub.json").c_str(), 0700), 0);              // not a file: not read
  ASSERT_EQ(::mkfifo((dir + "/fifo.json").c_str(), 0600), 0);            // would block: refused
  ASSERT_EQ(::symlink("a.json", (dir + "/link.json").c_str()), 0);       // a link to a file: a.json
  ASSERT_EQ(::symlink("sub.json", (dir + "/dirlink.json").c_str()), 0);  // to a directory: not
  ASSERT_EQ(::symlink("gone", (dir + "/dangling.json").c_str()), 0);     // to nothing: not
  // JSON Lines on a pipe: one compact report a line, blank lines skipped.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string lines =
      nlohmann::json::parse(pp::report_to_json(node_report("c", {kH200}))).dump() +
      "\n\n{\"schema_version\": 2}\n";
  ASSERT_EQ(::write(fds[1], lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
  ::close(fds[1]);
  const pp::FleetInputs in =
      pp::read_fleet_reports({dir, "-", dir + "/missing.json", a}, fds[0], threaded(2));
  ::close(fds[0]);
  // a, b, c: a.json once, however often it is found (through the link, named again).
  ASSERT_EQ(in.nodes.size(), 3U);
  EXPECT_EQ(in.nodes[0].hostname, "a");
  EXPECT_EQ(in.nodes[0].source, a);
  EXPECT_EQ(in.nodes[1].hostname, "b");
  EXPECT_EQ(in.nodes[2].hostname, "c");
  EXPECT_EQ(in.nodes[2].source, "-:1");
  ASSERT_EQ(in.unreadable.size(), 4U);
  EXPECT_EQ(in.unreadable[0].source, dir + "/cut.json");
  EXPECT_EQ(in.unreadable[0].error.rfind("not a JSON document (at byte ", 0), 0U)
      << in.unreadable[0].error;
  // A FIFO is refused by name, opened without blocking (no writer ever comes).
  EXPECT_EQ(in.unreadable[1].source, dir + "/fifo.json");
  EXPECT_EQ(in.unreadable[1].error.rfind("a FIFO, not a regular file: not read", 0), 0U)
      << in.unreadable[1].error;
  EXPECT_EQ(in.unreadable[2].source, "-:3");
  EXPECT_EQ(in.unreadable[2].error, "not a precision-probe report (no schema_version or tool)");
  EXPECT_EQ(in.unreadable[3].source, dir + "/missing.json");
  EXPECT_EQ(in.unreadable[3].error, "No such file or directory");
  const pp::FleetSummary s = pp::summarize(in, {{}, std::nullopt, kNow});
  EXPECT_EQ(s.nodes, 3);
  EXPECT_TRUE(s.superseded.empty());  // no report supersedes itself
  EXPECT_EQ(s.exit_code, 3);          // unreadable reports leave nodes unknown
}

TEST(Summary, ASchemaOneReportIsReadAsTheProbeReadsIt) {
  nlohmann::json j = nlohmann::json::parse(pp::report_to_json(node_report("old", {kH200})));
  j["schema_version"] = 1;
  for (auto& d : j["devices"]) {
    if (!d.contains("precisions") || !d["precisions"].contains("nvfp4")) continue;
    d["precisions"]["fp4"] = d["precisions"]["nvfp4"];
    d["precisions"].erase("nvfp4");
  }
  const std::string dir = pp::testing::make_temp_dir();
  const pp::FleetInputs in =
      pp::read_fleet_reports({write_file(dir, "old.json", j.dump())}, -1, {});
  ASSERT_EQ(in.nodes.size(), 1U) << (in.unreadable.empty() ? "" : in.unreadable[0].error);
  const pp::FleetSummary s = pp::summarize(in, {{}, std::nullopt, kNow});
  const pp::ModeSummary* nvfp4 = mode_summary(s, Mode::nvfp4);
  ASSERT_NE(nvfp4, nullptr);
  EXPECT_EQ(nvfp4->count(Status::unsupported), 1);
}

TEST(Summary, PrintersSayTheVerdictsAndJsonCarriesEveryList) {
  pp::SummaryOptions o;
  o.require = {Mode::bf16};
  pp::FleetSummary s = summarize({node_report("h200", {kH200}), node_report("t4", {kT4})}, o);
  s.tool_version = "0.1.0";
  const std::string text = pp::print_summary(s, pp::SummaryFormat::text);
  EXPECT_NE(text.find("  Tesla T4                             1        1\n"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find("\nrequirements not met (--require bf16)\n  bf16 t4 GPU 0: emulated\n      cc 7.5"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("\nexit 1: "), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(pp::print_summary(s, pp::SummaryFormat::json));
  EXPECT_EQ(j["summary_schema_version"], pp::kSummarySchemaVersion);
  EXPECT_EQ(j["modes"]["bf16"]["native"], 1);
  EXPECT_EQ(j["modes"]["bf16"]["emulated"], 1);
  EXPECT_EQ(j["modes"]["bf16"]["not_native"][0]["nodes"], nlohmann::json::array({"t4"}));
  EXPECT_EQ(j["modes"]["bf16"]["not_native"][0]["whole_nodes"], true);
  EXPECT_EQ(j["modes"]["bf16"]["not_native"][0]["devices"], nlohmann::json::array());
  EXPECT_EQ(j["unmet"][0]["device"], "GPU 0");
  EXPECT_EQ(j["exit_code"], 1);
  for (const char* key :
       {"outliers", "failed", "missing", "stale", "unknown", "unreadable", "superseded"}) {
    EXPECT_TRUE(j[key].is_array()) << key;
  }
  const std::string md = pp::print_summary(s, pp::SummaryFormat::markdown);
  EXPECT_NE(md.find("| bf16 | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| mode | native | emulated | unsupported | failed | cannot run | refused | "
                    "out of time | interrupted | not tested |"),
            std::string::npos)
      << md;
}

// Schema 4's statuses of checks that were kept from proving anything are counted each, never as
// failed: the text's last column holds them together and a line says which they are.
TEST(Summary, WhatWasCutOffOrCannotRunIsCountedApartFromFailed) {
  pp::Report cut = node_report("cut", {kH200});
  pp::Report image = node_report("image", {kH200});
  pp::PrecisionResult& interrupted = *gpu(cut, 0).find(Mode::bf16);
  interrupted.status = Status::interrupted;
  interrupted.failure = pp::ErrorKind::interrupted;
  interrupted.reason = "interrupted by SIGTERM";
  pp::PrecisionResult& no_image = *gpu(image, 0).find(Mode::bf16);
  no_image.status = Status::cannot_run;
  no_image.failure = pp::ErrorKind::environment;
  no_image.reason = "CUDA error: no kernel image is available for execution on the device";
  pp::FleetSummary s = summarize({cut, image, node_report("ok", {kH200})});
  const pp::ModeSummary* bf16 = mode_summary(s, Mode::bf16);
  ASSERT_NE(bf16, nullptr);
  EXPECT_EQ(bf16->count(Status::native), 1);
  EXPECT_EQ(bf16->count(Status::interrupted), 1);
  EXPECT_EQ(bf16->count(Status::cannot_run), 1);
  EXPECT_EQ(bf16->count(Status::failed), 0);
  EXPECT_TRUE(s.failed.empty());
  const nlohmann::json j = nlohmann::json::parse(pp::print_summary(s, pp::SummaryFormat::json));
  EXPECT_EQ(j["modes"]["bf16"]["interrupted"], 1);
  EXPECT_EQ(j["modes"]["bf16"]["cannot_run"], 1);
  EXPECT_EQ(j["modes"]["bf16"]["failed"], 0);
  const std::string text = pp::print_summary(s, pp::SummaryFormat::text);
  EXPECT_NE(text.find("  bf16                 1         0            0        0           2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("not proved, over all modes: 1 cannot_run, 1 interrupted"), std::string::npos)
      << text;
}

// Issue 30: a report dated in 2099 won over today's, which exited 4, and the summary said 0. One
// dated more than 5 minutes ahead of the summary's clock is a finding of its own and never counts
// over a report of its host that is not; alone, it counts, and --max-age cannot know its age.
TEST(Summary, AReportDatedInTheFutureNeverHidesANewerFailure) {
  pp::Report future = node_report("gpu-07", {kH200});
  future.started_at = "2099-01-01T00:00:00.000Z";
  pp::Report today = node_report("gpu-07", {kH200}, 60);
  gpu(today, 0).find(Mode::bf16)->status = Status::failed;
  gpu(today, 0).find(Mode::bf16)->reason = "relative error 3.1e-01 exceeds 1.0e-02";
  today.exit_code = 4;
  for (const bool future_first : {true, false}) {
    const pp::FleetSummary s =
        future_first ? summarize({future, today}) : summarize({today, future});
    const std::string future_source = future_first ? "r0.json" : "r1.json";
    const std::string today_source = future_first ? "r1.json" : "r0.json";
    EXPECT_EQ(s.exit_code, 4) << s.exit_reason;
    EXPECT_EQ(s.nodes, 1);
    ASSERT_EQ(s.failed.size(), 1U);
    EXPECT_EQ(s.failed[0].node, "gpu-07");
    EXPECT_TRUE(s.superseded.empty());  // neither is "older": the failure is not listed as such
    ASSERT_EQ(s.future.size(), 1U);
    EXPECT_EQ(s.future[0].source, future_source);
    EXPECT_EQ(s.future[0].why.rfind("started 2099-01-01T00:00:00.000Z, ", 0), 0U)
        << s.future[0].why;
    EXPECT_NE(s.future[0].why.find("; not counted: " + today_source + " counts"), std::string::npos)
        << s.future[0].why;
  }
  // Alone it counts (its verdicts are what the host said), listed; under --max-age its age is not
  // known: stale, exit 3, as a report that does not say when it ran.
  pp::FleetSummary s = summarize({future});
  EXPECT_EQ(s.exit_code, 0) << s.exit_reason;
  ASSERT_EQ(s.future.size(), 1U);
  EXPECT_NE(s.future[0].why.find("the host has no other report: this one counts"),
            std::string::npos)
      << s.future[0].why;
  pp::SummaryOptions o;
  o.max_age_s = 24 * 3600;
  s = summarize({future}, o);
  EXPECT_EQ(s.exit_code, 3);
  ASSERT_EQ(s.stale.size(), 1U);
  EXPECT_NE(s.stale[0].why.find("ahead of this summary's clock: its age is not known"),
            std::string::npos)
      << s.stale[0].why;
  // Within 5 minutes ahead (clocks a little apart) a report is no finding: the newer counts.
  pp::Report ahead = node_report("gpu-07", {kH200}, -240);
  s = summarize({today, ahead});
  EXPECT_TRUE(s.future.empty());
  ASSERT_EQ(s.superseded.size(), 1U);
  EXPECT_EQ(s.superseded[0].source, "r0.json");
  EXPECT_EQ(s.exit_code, 0);
  // The JSON lists it.
  const nlohmann::json j =
      nlohmann::json::parse(pp::print_summary(summarize({future, today}), pp::SummaryFormat::json));
  EXPECT_EQ(j["future"][0]["node"], "gpu-07");
}

// The probe puts silent data corruption first; so does a fleet's summary: a soak mismatch on a
// gated device is exit 4 before a node unknown (3), which still comes before another failure (4).
TEST(Summary, ASoakMismatchOnAGatedDeviceComesBeforeEverythingElse) {
  pp::Report sdc = node_report("sdc", {kH200, kH200});
  soak_mismatch(sdc, 1, Mode::bf16, 2);
  soak_mismatch(sdc, 1, Mode::fp16, 0);
  pp::Report failed = node_report("failed", {kH200});
  gpu(failed, 0).find(Mode::fp16)->status = Status::failed;
  gpu(failed, 0).find(Mode::fp16)->reason = "relative error 3.1e-01 exceeds 1.0e-02";
  const pp::Report stale = node_report("stale", {kH200}, 7200);
  pp::SummaryOptions o;
  o.max_age_s = 3600;
  o.require = {Mode::bf16};
  pp::FleetInputs in = inputs_of({failed, stale, sdc}, o.require);
  in.unreadable.push_back({"cut.json", "not a JSON document (at byte 9: ...)"});
  o.now_ms = kNow;
  pp::FleetSummary s = pp::summarize(std::move(in), o);
  EXPECT_EQ(s.exit_code, 4);
  EXPECT_EQ(s.exit_reason,
            "silent data corruption on 1 gated device(s), first: sdc GPU 1: bf16 failed: soak: 2 "
            "of 40 results differed from the golden one");
  ASSERT_EQ(s.failed.size(), 2U);
  EXPECT_FALSE(s.failed[0].corruption);  // failed's fp16: a failure, not corruption
  EXPECT_TRUE(s.failed[1].corruption);
  const std::string text = pp::print_summary(s, pp::SummaryFormat::text);
  EXPECT_NE(text.find("\nsilent data corruption on gated devices (--soak: wrong numbers under "
                      "load)\n  sdc GPU 1 (GPU-"),
            std::string::npos)
      << text;
  EXPECT_EQ(nlohmann::json::parse(
                pp::print_summary(s, pp::SummaryFormat::json))["failed"][1]["corruption"],
            true);
  // Without it, the gate's order stands: a stale report (3) before a failure (4).
  EXPECT_EQ(summarize({failed, stale}, o).exit_code, 3);
  EXPECT_EQ(summarize({failed}, o).exit_code, 4);
  // A golden result unlike those of its like GPUs is corruption too.
  pp::Report golden = node_report("golden", {kH200, kH200, kH200});
  soak_mismatch(golden, 2, Mode::fp16, 0);
  gpu(golden, 2).soak->golden_disagreement =
      "fp16: its golden result differs from that of 2 like GPUs (GPU 0, GPU 1): it computes "
      "wrong numbers";
  pp::PrecisionResult* p = gpu(golden, 2).find(Mode::fp16);
  p->status = Status::failed;
  p->failure = pp::ErrorKind::wrong_result;
  p->reason = "soak: " + gpu(golden, 2).soak->golden_disagreement;
  s = summarize({stale, golden}, o);
  EXPECT_EQ(s.exit_code, 4) << s.exit_reason;
  EXPECT_NE(s.exit_reason.find("first: golden GPU 2: fp16 failed: soak: fp16: its golden"),
            std::string::npos)
      << s.exit_reason;
  // On a device its report did not gate, corruption is reported, and decides nothing.
  gpu(sdc, 1).selected = false;
  s = summarize({stale, sdc}, o);
  EXPECT_EQ(s.exit_code, 3) << s.exit_reason;
  EXPECT_EQ(mode_summary(s, Mode::bf16)->count(Status::failed), 1);
}

TEST(Summary, AReportThatGivesAKeyTwiceIsUnreadableWithTheKeyNamed) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string text = pp::report_to_json(node_report("dup", {kH200}));
  ASSERT_EQ(text.front(), '{');
  // Its own "exit_code": 0 comes later; Python and jq would read the last.
  const std::string path = write_file(dir, "dup.json", "{\"exit_code\": 4," + text.substr(1));
  const pp::FleetInputs in = pp::read_fleet_reports({path}, -1, {});
  EXPECT_TRUE(in.nodes.empty());
  ASSERT_EQ(in.unreadable.size(), 1U);
  EXPECT_NE(in.unreadable[0].error.find(
                "the member \"exit_code\" of the top-level object is given twice (first at byte "
                "1, line 1, column 2)"),
            std::string::npos)
      << in.unreadable[0].error;
}

// A summary among the reports (summarize --format json -o fleet/fleet.json fleet, run again) is
// skipped and named, not unreadable; the summary's own output is never read as a report: named
// among the sources it is the conflict at once, found in a directory it is replaced where it holds
// a summary, and the conflict where it holds anything else.
TEST(Summary, ASummaryAmongTheReportsIsSkippedAndTheOutputNeverReadAsOne) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string a = write_file(dir, "a.json", pp::report_to_json(node_report("a", {kH200})));
  pp::FleetSummary first = summarize({node_report("a", {kH200})});
  const std::string fleet =
      write_file(dir, "fleet.json", pp::print_summary(first, pp::SummaryFormat::json));
  write_file(dir, "error.json",
             R"({"summary_schema_version": 1, "tool": {"name": "precision-probe"}, "error": )"
             R"({"kind": "usage", "message": "x"}, "exit_code": 2, "exit_reason": "x"})");
  pp::FleetInputs in = pp::read_fleet_reports({dir}, -1, {});
  EXPECT_EQ(in.nodes.size(), 1U);
  EXPECT_TRUE(in.unreadable.empty()) << in.unreadable[0].source << ": " << in.unreadable[0].error;
  ASSERT_EQ(in.skipped.size(), 2U);
  EXPECT_EQ(in.skipped[0].source, dir + "/error.json");
  EXPECT_EQ(in.skipped[0].error, "a summary, not a report");
  EXPECT_EQ(in.skipped[1].source, fleet);
  EXPECT_TRUE(in.conflict.empty());
  const pp::FleetSummary s = pp::summarize(in, {{}, std::nullopt, kNow});
  EXPECT_EQ(s.exit_code, 0) << s.exit_reason;
  const std::string text = pp::print_summary(s, pp::SummaryFormat::text);
  EXPECT_NE(text.find("\nsummaries among the reports (skipped: not reports)\n  " + dir +
                      "/error.json\n      a summary, not a report\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(
      nlohmann::json::parse(pp::print_summary(s, pp::SummaryFormat::json))["skipped"][1]["source"],
      fleet);
  pp::FleetReadOptions o;
  o.output = identity(fleet);
  in = pp::read_fleet_reports({dir}, -1, o);
  EXPECT_TRUE(in.conflict.empty());
  ASSERT_EQ(in.skipped.size(), 2U);
  EXPECT_EQ(in.skipped[1].error, "the summary's own output (replaced by this summary)");
  // The output is a report of the directory: the conflict, whose report must not be replaced.
  o.output = identity(a);
  in = pp::read_fleet_reports({dir}, -1, o);
  EXPECT_EQ(in.conflict, a);
  // Named, by any spelling (and a hard link is the same file): found before anything is read.
  ASSERT_EQ(::link(a.c_str(), (dir + "/hard.link").c_str()), 0);
  for (const std::string& name : {dir + "/./a.json", dir + "/hard.link"}) {
    in = pp::read_fleet_reports({fleet, name}, -1, o);
    EXPECT_EQ(in.conflict, name);
    EXPECT_TRUE(in.nodes.empty() && in.skipped.empty()) << "read before the conflict was found";
  }
  // Standard input redirected from it.
  const int fd = ::open(a.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  in = pp::read_fleet_reports({"-"}, fd, o);
  ::close(fd);
  EXPECT_EQ(in.conflict, "-");
}

// Standard input as it comes: a line at a time through a pipe the test holds open (so that the
// reader cannot have read ahead to the end), and a stop that ends the wait for more.
TEST(Summary, StandardInputIsReadAsItComesAndAStopEndsTheWait) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string line =
      nlohmann::json::parse(pp::report_to_json(node_report("c", {kH200}))).dump() + "\n";
  ASSERT_EQ(::write(fds[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
  pp::FleetReadOptions o;
  // Asked while the reader waits for more: once the pipe is empty (the line was taken), stop.
  o.stop = [&] {
    int unread = -1;
    return ::ioctl(fds[0], FIONREAD, &unread) == 0 && unread == 0;
  };
  const pp::FleetInputs in = pp::read_fleet_reports({"-"}, fds[0], o);
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_TRUE(in.stopped);
  EXPECT_TRUE(in.unreadable.empty());
}

// Issue 30: summarize's outlier and requirement lines reached 160-197 columns. Every line of the
// text summary fits 80 columns, over a fleet that makes every kind of line (long hostnames, UUIDs,
// reasons and exit reasons); only a single word wider than that (a long path) stands alone.
TEST(Summary, EveryLineOfTheTextSummaryFitsEightyColumns) {
  const std::string rack = ".rack-17.row-c.datacenter-west.example.com";  // 43 characters
  std::vector<pp::Report> reports;
  for (int i = 0; i < 4; ++i) {
    reports.push_back(node_report("node-000" + std::to_string(i) + rack, {kH200, kT4}));
    set_bench(reports.back(), 0, Mode::bf16, i == 3 ? 500.0 : 700.0);  // an outlier
  }
  pp::PrecisionResult* p = gpu(reports[0], 0).find(Mode::fp16);  // a failure with a long reason
  p->status = Status::failed;
  p->reason =
      "relative error 3.1e-01 exceeds the tolerance 1.0e-02 of fp16 on a 4096 x 4096 "
      "matmul against the float64 reference (seed 7)";
  soak_mismatch(reports[1], 0, Mode::bf16, 2);                        // corruption
  reports.push_back(node_report("node-0004" + rack, {kH200}, 7200));  // stale
  reports.push_back(node_report("node-0005" + rack, {kH200}));        // unknown: exited 5
  reports.back().exit_code = 5;
  reports.back().exit_reason =
      "the NVIDIA driver did not answer within 45 s (--check-timeout); "
      "read the kernel log for Xid errors";
  reports.push_back(node_report("node-0006" + rack, {kH200}));  // in the future
  reports.back().started_at = "2099-01-01T00:00:00.000Z";
  reports.push_back(node_report("node-0001" + rack, {kH200, kT4}, 600));  // superseded
  pp::Report no_amp = node_report("node-0007" + rack, {kH200});           // missing verdict
  for (pp::DeviceReport& d : no_amp.devices) d.precisions.erase(Mode::amp_bf16);
  reports.push_back(no_amp);
  pp::SummaryOptions o;
  o.require = {Mode::bf16, Mode::amp_bf16};
  o.max_age_s = 3600;
  o.now_ms = kNow;
  pp::FleetInputs in = inputs_of(reports, o.require);
  const std::string long_path =
      "/var/lib/precision-probe/reports/" + std::string(70, 'n') + ".json";
  in.unreadable.push_back({long_path,
                           "not a JSON document (at byte 123: a text without its "
                           "closing quote)"});
  in.skipped.push_back({"/var/lib/precision-probe/reports/fleet.json", "a summary, not a report"});
  pp::FleetSummary s = pp::summarize(std::move(in), o);
  s.tool_version = "0.1.0-dev+g7b4b8ab";
  const std::string text = pp::print_summary(s, pp::SummaryFormat::text);
  for (const char* heading :
       {"not native", "silent data corruption", "throughput outliers", "failed checks",
        "requirements not met", "stale reports", "nodes whose state is unknown",
        "reports dated in the future", "reports that could not be read", "summaries among",
        "older reports of the same host"}) {
    EXPECT_NE(text.find("\n" + std::string(heading)), std::string::npos) << heading << "\n" << text;
  }
  bool alone = false;
  for (const std::string& line : pp::split(text, '\n')) {
    const std::string word = pp::trim(line);
    if (pp::visible_width(line) > 80 && word.find(' ') == std::string::npos) {
      alone = true;  // a single word wider than a line, on a line of its own
      continue;
    }
    EXPECT_LE(pp::visible_width(line), 80U) << line;
    EXPECT_TRUE(line.empty() || line.back() != ' ') << "'" << line << "'";
  }
  EXPECT_TRUE(alone) << "the long path was not on a line of its own";
  EXPECT_NE(text.find("\n  " + long_path + "\n"), std::string::npos) << text;
}

// A start time the calendar does not have (2026-02-31, once read as 3 March) is no time: under
// --max-age its report is of no known age, stale, and the message says why.
TEST(Summary, AStartTimeOfAnImpossibleDateIsOfNoKnownAge) {
  pp::Report r = node_report("feb", {kH200});
  r.started_at = "2026-02-31T00:00:00.000Z";
  pp::SummaryOptions o;
  o.max_age_s = 400 * 86400;  // 3 March would be within it
  const pp::FleetSummary s = summarize({r}, o);
  EXPECT_EQ(s.exit_code, 3);
  ASSERT_EQ(s.stale.size(), 1U);
  EXPECT_EQ(s.stale[0].why,
            "its started_at '2026-02-31T00:00:00.000Z' is not a time (RFC 3339 in UTC, a date the "
            "calendar has)");
}
