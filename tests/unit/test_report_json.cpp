// The report's JSON both ways (the public API of include/precision_probe/report_json.hpp): what
// report_to_json writes, read_report_json reads back to the same document, for reports of every
// shape the probe makes; and it refuses what is not a report, saying where.

#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "fakes.hpp"
#include "precision_probe/report_json.hpp"
#include "probe/run/probe.hpp"
#include "probe/verdicts/exit_codes.hpp"

namespace pp = precision_probe;
using pp::Mode;

namespace {

const pp::testing::FakeGpu kH200{"NVIDIA H200", {9, 0}, 132, 141};
const pp::testing::FakeGpu kT4{"Tesla T4", {7, 5}, 40, 15};

struct Machine {
  pp::testing::FakeSystem system;
  pp::testing::FakeDriver driver = pp::testing::no_driver();
  pp::testing::FakeEngine engine;
  pp::StackInfo image = pp::testing::cuda_stack();  // the image's PyTorch
  pp::Options options;

  Machine() {
    system.files["/proc/cpuinfo"] = pp::testing::cpuinfo_with_flags("Test CPU", "avx2 fma", 4);
    options.seed = 42;
  }
  pp::Report run() {
    return pp::run_probe(options,
                         pp::ProbeDeps{system, driver, engine, pp::testing::image_of(&image)});
  }
};

// Written, read, written again: the same document.
void expect_round_trip(const pp::Report& report) {
  const std::string written = pp::report_to_json(report);
  const pp::Expected<pp::Report> read = pp::read_report_json(written);
  ASSERT_TRUE(read) << read.error();
  EXPECT_EQ(pp::report_to_json(*read), written);
}

}  // namespace

TEST(ReportJson, EveryShapeOfReportReadsBackToTheSameDocument) {
  Machine h200;
  h200.driver = pp::testing::driver_with({kH200, kH200});
  h200.options.bench = true;
  h200.options.nccl = true;
  h200.options.require = {Mode::bf16, Mode::amp_fp16};
  expect_round_trip(h200.run());

  Machine t4;
  t4.driver = pp::testing::driver_with({kT4});
  t4.options.require = {Mode::bf16};
  expect_round_trip(t4.run());

  Machine quick;
  quick.driver = pp::testing::driver_with({kH200});
  quick.options.quick = true;
  expect_round_trip(quick.run());

  Machine cpu_only;
  cpu_only.image = pp::testing::cpu_stack();
  cpu_only.options.require = {Mode::fp8_e4m3};  // nothing can meet it: device "none"
  cpu_only.options.devices = *pp::parse_device_selection("gpu");
  const pp::Report none = cpu_only.run();
  ASSERT_FALSE(none.requirements.empty());
  EXPECT_EQ(none.requirements[0].device, "");
  expect_round_trip(none);

  expect_round_trip(pp::usage_error_report("--device: GPU 5 does not exist", h200.system));

  pp::Report rerun = quick.run();
  rerun.devices.front().engine_rerun =
      pp::EngineRerun{"the engine worker was killed (SIGKILL)", "SIGKILL", "", std::nullopt};
  expect_round_trip(rerun);
  const pp::Expected<pp::Report> read = pp::read_report_json(pp::report_to_json(rerun));
  ASSERT_TRUE(read) << read.error();
  ASSERT_TRUE(read->devices.front().engine_rerun.has_value());
  EXPECT_EQ(read->devices.front().engine_rerun->signal, "SIGKILL");
  EXPECT_FALSE(read->devices.back().engine_rerun.has_value());
}

TEST(ReportJson, TheReadReportHasTheValues) {
  Machine m;
  m.driver = pp::testing::driver_with({kH200});
  m.options.require = {Mode::bf16};
  const pp::Report original = m.run();
  const pp::Expected<pp::Report> read = pp::read_report_json(pp::report_to_json(original));
  ASSERT_TRUE(read) << read.error();
  EXPECT_EQ(read->exit_code, original.exit_code);
  ASSERT_EQ(read->devices.size(), original.devices.size());
  const pp::DeviceReport& gpu = read->devices.front();
  EXPECT_EQ(gpu.kind, pp::DeviceKind::cuda);
  ASSERT_TRUE(gpu.gpu && gpu.gpu->cc);
  EXPECT_EQ(gpu.gpu->cc->to_string(), "9.0");
  ASSERT_NE(gpu.find(Mode::bf16), nullptr);
  EXPECT_EQ(gpu.find(Mode::bf16)->status, pp::Status::native);
  ASSERT_NE(gpu.find(Mode::amp_bf16), nullptr);
  ASSERT_TRUE(gpu.find(Mode::amp_bf16)->amp.has_value());
  EXPECT_EQ(gpu.find(Mode::amp_bf16)->amp->matmul_dtype, pp::DType::bf16);
  EXPECT_EQ(read->driver.cuda_version, original.driver.cuda_version);
  EXPECT_EQ(read->run.command, pp::Command::probe);
}

TEST(ReportJson, WhatIsNotAReportIsRefusedWithWhere) {
  const auto refused = [](const std::string& text) {
    const pp::Expected<pp::Report> r = pp::read_report_json(text);
    EXPECT_FALSE(r) << text;
    return r ? std::string() : r.error();
  };
  EXPECT_EQ(refused("{"),
            "not a JSON document (at byte 1 (line 1, column 2): the text ends before the document "
            "does)");
  EXPECT_EQ(refused("{\n  \"schema_version\": 2,\n  \"tool\": {}\n} x"),
            "not a JSON document (at byte 40 (line 4, column 3): text after the document's end)");
  EXPECT_NE(refused("[1,2]").find("not a precision-probe report"), std::string::npos);
  EXPECT_NE(refused(R"({"schema_version":9,"tool":{}})").find("schema_version 9"),
            std::string::npos);
  Machine m;
  m.driver = pp::testing::driver_with({kH200});
  nlohmann::json j = nlohmann::json::parse(pp::report_to_json(m.run()));
  j["devices"][0]["gpu"]["sm_count"] = "many";
  EXPECT_NE(refused(j.dump()).find("devices[0].gpu.sm_count: expected an integer"),
            std::string::npos);
  j["devices"][0]["gpu"]["sm_count"] = 132;
  j["devices"][0]["precisions"]["fp16"]["status"] = "great";
  EXPECT_NE(refused(j.dump()).find("devices[0].precisions.fp16.status: unknown value 'great'"),
            std::string::npos);
  // A text of the document is shown escaped, a NUL and what follows it too.
  j["devices"][0]["precisions"]["fp16"]["status"] = std::string("\x1b[31mEVIL\0more", 14);
  EXPECT_NE(refused(j.dump()).find("unknown value '\\x1b[31mEVIL\\x00more'"), std::string::npos)
      << refused(j.dump());
  // Fields it does not know are ignored: a newer report with more fields still reads.
  j["devices"][0]["precisions"]["fp16"]["status"] = "native";
  j["a_field_from_the_future"] = {1, 2, 3};
  j["devices"][0]["gpu"]["another"] = true;
  EXPECT_TRUE(pp::read_report_json(j.dump()));
}

// The exit code is the one field a report cannot be without (missing, it would read as 0, a
// success), and it is one of the probe's.
TEST(ReportJson, AReportWithoutAnExitCodeOfTheProbeIsRefused) {
  Machine m;
  m.driver = pp::testing::driver_with({kH200});
  nlohmann::json j = nlohmann::json::parse(pp::report_to_json(m.run()));
  ASSERT_TRUE(pp::read_report_json(j.dump()));
  const auto refused = [&j] {
    const pp::Expected<pp::Report> r = pp::read_report_json(j.dump(), pp::ReadDepth::verdicts);
    return r ? std::string("read") : r.error();
  };
  j.erase("exit_code");
  EXPECT_EQ(refused(), "exit_code: missing: every report says one");
  j["exit_code"] = nullptr;
  EXPECT_EQ(refused(), "exit_code: missing: every report says one");
  j["exit_code"] = 7;
  EXPECT_EQ(refused(), "exit_code: 7 is not an exit code of the probe (0 to 6)");
  j["exit_code"] = -1;
  EXPECT_EQ(refused(), "exit_code: -1 is not an exit code of the probe (0 to 6)");
  j["exit_code"] = 3.0;
  EXPECT_EQ(refused(), "exit_code: expected an integer");
  for (int code = 0; code <= pp::kLastExitCode; ++code) {
    j["exit_code"] = code;
    EXPECT_EQ(refused(), "read") << code;
  }
  // The schema version is an integer, and said as written where it is not.
  j["schema_version"] = 3.0;
  EXPECT_EQ(refused(), "schema_version 3.0 (not an integer), this reader reads 4 (and 1 to 3)");
}

// A report's lists take memory by their items' structs, not their text: a device is 15 KiB, so a
// few hundred kilobytes of empty devices would take gigabytes. What a document may take is bounded.
TEST(ReportJson, AReportWhoseListsWouldTakeTooMuchMemoryIsRefused) {
  Machine m;
  m.driver = pp::testing::driver_with({kH200});
  nlohmann::json j = nlohmann::json::parse(pp::report_to_json(m.run()));
  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) many.push_back(nlohmann::json::object());
  j["devices"] = many;
  const pp::Expected<pp::Report> r = pp::read_report_json(j.dump(), pp::ReadDepth::verdicts);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(),
            "devices: a list of 100000 items, more than the memory a document may take allows");
  // A node's worth of devices is read.
  j["devices"] = nlohmann::json::array();
  for (int i = 0; i < 64; ++i) j["devices"].push_back(nlohmann::json::object());
  EXPECT_TRUE(pp::read_report_json(j.dump(), pp::ReadDepth::verdicts));
}

// ReadDepth::verdicts (what `summarize` reads): what it names is read as a full read reads it, the
// details keep their defaults and are not checked, and a text that is not JSON is refused anyway.
TEST(ReportJson, AReadOfTheVerdictsReadsThemAndLeavesTheDetails) {
  Machine m;
  m.driver = pp::testing::driver_with({kH200, kH200});
  m.options.bench = true;
  m.options.soak_s = 1.0;
  m.options.require = {Mode::bf16};
  const std::string text = pp::report_to_json(m.run());
  const pp::Expected<pp::Report> full = pp::read_report_json(text);
  const pp::Expected<pp::Report> verdicts = pp::read_report_json(text, pp::ReadDepth::verdicts);
  ASSERT_TRUE(full) << full.error();
  ASSERT_TRUE(verdicts) << verdicts.error();
  EXPECT_EQ(verdicts->report_id, full->report_id);
  EXPECT_EQ(verdicts->host.hostname, full->host.hostname);
  EXPECT_EQ(verdicts->exit_reason, full->exit_reason);
  EXPECT_EQ(verdicts->driver.status, full->driver.status);
  ASSERT_EQ(verdicts->requirements.size(), full->requirements.size());
  ASSERT_EQ(verdicts->devices.size(), full->devices.size());
  int benches = 0, soaks = 0, smokes = 0, amps = 0;
  for (std::size_t i = 0; i < full->devices.size(); ++i) {
    const pp::DeviceReport& f = full->devices[i];
    const pp::DeviceReport& v = verdicts->devices[i];
    EXPECT_EQ(v.label(), f.label());
    EXPECT_EQ(v.selected, f.selected);
    EXPECT_EQ(v.gpu.has_value(), f.gpu.has_value());
    if (f.gpu && v.gpu) {
      EXPECT_EQ(v.gpu->uuid, f.gpu->uuid);
    }
    ASSERT_EQ(v.precisions.size(), f.precisions.size());
    for (const auto& [mode, fp] : f.precisions) {
      ASSERT_TRUE(v.precisions.contains(mode)) << pp::mode_key(mode);
      const pp::PrecisionResult& vp = v.precisions.at(mode);
      EXPECT_EQ(vp.status, fp.status);
      EXPECT_EQ(vp.hardware, fp.hardware);
      EXPECT_EQ(vp.reason, fp.reason);
      ASSERT_EQ(vp.bench.has_value(), fp.bench.has_value());
      if (fp.bench) {
        EXPECT_EQ(vp.bench->outcome.ran, fp.bench->outcome.ran);
        EXPECT_EQ(vp.bench->outcome.tflops, fp.bench->outcome.tflops);
        EXPECT_EQ(vp.bench->outcome.sustained_tflops, fp.bench->outcome.sustained_tflops);
        ++benches;
      }
      // The details: run and checked in the report, left at their defaults by this read.
      if (fp.smoke.ran) {
        EXPECT_FALSE(vp.smoke.ran) << pp::mode_key(mode);
        ++smokes;
      }
      if (fp.amp && fp.amp->ran) {
        EXPECT_FALSE(vp.amp.has_value()) << pp::mode_key(mode);
        ++amps;
      }
    }
    ASSERT_EQ(v.soak.has_value(), f.soak.has_value());
    if (f.soak && v.soak) {
      ASSERT_EQ(v.soak->modes.size(), f.soak->modes.size());
      for (const auto& [mode, fo] : f.soak->modes) {
        ASSERT_TRUE(v.soak->modes.contains(mode)) << pp::mode_key(mode);
        EXPECT_EQ(v.soak->modes.at(mode).tflops, fo.tflops);
        EXPECT_EQ(v.soak->modes.at(mode).mismatches, fo.mismatches);
        ++soaks;
      }
      EXPECT_FALSE(v.soak->telemetry.has_value());
    }
  }
  EXPECT_GT(benches, 0);
  EXPECT_GT(soaks, 0);
  EXPECT_GT(smokes, 0);
  EXPECT_GT(amps, 0);
  EXPECT_FALSE(full->stack.libtorch_version.empty());
  EXPECT_TRUE(verdicts->stack.libtorch_version.empty());
  EXPECT_TRUE(verdicts->diagnostics.empty());

  // A benchmark's details are read by a full read only.
  nlohmann::json j = nlohmann::json::parse(text);
  ASSERT_TRUE(j["devices"][0]["bench"].contains("bf16"));
  j["devices"][0]["bench"]["bf16"]["timer"] = "cuda events";
  j["devices"][0]["bench"]["bf16"]["peak_source"] = "datasheet";
  const auto bf16_bench = [&](pp::ReadDepth depth) {
    const pp::Expected<pp::Report> r = pp::read_report_json(j.dump(), depth);
    return r ? *r->devices[0].find(Mode::bf16)->bench : pp::BenchResult{};
  };
  EXPECT_EQ(bf16_bench(pp::ReadDepth::full).outcome.timer, "cuda events");
  EXPECT_EQ(bf16_bench(pp::ReadDepth::full).peak_source, "datasheet");
  EXPECT_EQ(bf16_bench(pp::ReadDepth::verdicts).outcome.timer, "");
  EXPECT_EQ(bf16_bench(pp::ReadDepth::verdicts).peak_source, "");
  // A detail of the wrong type: refused by a full read, not looked at by this one.
  j["devices"][0]["precisions"]["bf16"]["smoke"]["ms"] = "slow";
  EXPECT_FALSE(pp::read_report_json(j.dump()));
  EXPECT_TRUE(pp::read_report_json(j.dump(), pp::ReadDepth::verdicts));
  // A verdict of the wrong type, or a text that is not JSON where the details are, is refused.
  j["devices"][0]["precisions"]["bf16"]["status"] = 7;
  EXPECT_FALSE(pp::read_report_json(j.dump(), pp::ReadDepth::verdicts));
  std::string broken = text;
  const std::size_t smoke = broken.find("\"smoke\": {");
  ASSERT_NE(smoke, std::string::npos);
  broken.insert(smoke + 10, ",");
  const pp::Expected<pp::Report> refused = pp::read_report_json(broken, pp::ReadDepth::verdicts);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("not a JSON document"), std::string::npos) << refused.error();
}

// Schema 1 named NVFP4 "fp4": a report of then is read with the key of now, and nothing else
// changes.
TEST(ReportJson, ASchemaOneReportIsReadWithFp4AsNvfp4) {
  Machine m;
  m.driver = pp::testing::driver_with({kH200});
  m.options.require = {Mode::nvfp4};
  const pp::Report report = m.run();
  std::string old_text = pp::report_to_json(report);
  for (std::size_t at = 0; (at = old_text.find("\"nvfp4\"", at)) != std::string::npos;) {
    old_text.replace(at, 7, "\"fp4\"");
  }
  nlohmann::json old = nlohmann::json::parse(old_text);
  old["schema_version"] = 1;
  old_text = old.dump();
  ASSERT_EQ(old_text.find("\"nvfp4\""), std::string::npos);
  ASSERT_NE(old.at("devices").at(0).at("precisions").find("fp4"),
            old.at("devices").at(0).at("precisions").end());
  const pp::Expected<pp::Report> read = pp::read_report_json(old_text);
  ASSERT_TRUE(read) << read.error();
  EXPECT_EQ(read->schema_version, pp::kSchemaVersion);
  // The same document (the keys of a section may come in another order).
  EXPECT_EQ(nlohmann::json::parse(pp::report_to_json(*read)),
            nlohmann::json::parse(pp::report_to_json(report)));
  // Free text that reads "fp4" is not a mode: it is left as it was.
  old["host"]["hostname"] = "fp4";
  const pp::Expected<pp::Report> named = pp::read_report_json(old.dump());
  ASSERT_TRUE(named) << named.error();
  EXPECT_EQ(named->host.hostname, "fp4");
  // Schema 1 had no "nvfp4" (its NVFP4 was "fp4"): a report naming both would say two things of
  // one mode, and is refused.
  old["host"]["hostname"] = "node";
  old["devices"][0]["precisions"]["nvfp4"] = old["devices"][0]["precisions"]["fp4"];
  const pp::Expected<pp::Report> both = pp::read_report_json(old.dump());
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error(), "devices[0].precisions.nvfp4: not a mode of this section");
  old["devices"][0]["precisions"].erase("nvfp4");
  ASSERT_TRUE(pp::read_report_json(old.dump()));
  // A version this reader does not know is still refused.
  old["schema_version"] = pp::kSchemaVersion + 1;
  EXPECT_FALSE(pp::read_report_json(old.dump()));
}

// Schema 2 did not write the run's inputs of the exit decision: a report of then is read, with
// whether GPUs were selected taken from its --device.
TEST(ReportJson, ASchemaTwoReportIsReadWithGpusSelectedFromItsDevices) {
  Machine m;
  m.options.devices = *pp::parse_device_selection("cpu");
  nlohmann::json j = nlohmann::json::parse(pp::report_to_json(m.run()));
  ASSERT_EQ(j.at("run").at("gpus_selected"), false);
  j["schema_version"] = 2;
  for (const char* added : {"gpus_selected", "unavailable_selection", "interrupted"}) {
    j["run"].erase(added);
  }
  const pp::Expected<pp::Report> cpu = pp::read_report_json(j.dump());
  ASSERT_TRUE(cpu) << cpu.error();
  EXPECT_FALSE(cpu->run.gpus_selected);
  EXPECT_EQ(cpu->schema_version, pp::kSchemaVersion);
  j["run"]["devices"] = "cpu,1";
  const pp::Expected<pp::Report> named = pp::read_report_json(j.dump());
  ASSERT_TRUE(named) << named.error();
  EXPECT_TRUE(named->run.gpus_selected);
}

// Schema 3 said `failed` for what a signal, the run's deadline or a stack without kernels cut off;
// read, they get schema 4's statuses from the failure and the probe's own reasons, and a failed
// check stays failed.
TEST(ReportJson, ASchemaThreeReportIsReadIntoSchemaFoursStatuses) {
  Machine m;
  m.driver = pp::testing::driver_with({kH200});
  nlohmann::json j = nlohmann::json::parse(pp::report_to_json(m.run()));
  j["schema_version"] = 3;
  nlohmann::json& p = j["devices"][0]["precisions"];
  const auto set = [&p](const char* mode, const char* failure, const char* reason) {
    p[mode]["status"] = "failed";
    p[mode]["failure"] = failure;
    p[mode]["reason"] = reason;
  };
  set("fp32", "timed_out", "interrupted by SIGTERM");
  set("fp16", "timed_out", "timed out after 60 s (--timeout)");
  set("bf16", "environment", "CUDA error: no kernel image is available for execution");
  set("int8", "timed_out", "timed out: a check did not finish within 45 s (--check-timeout)");
  set("tf32", "wrong_result", "wrong result: relative error 0.5 exceeds the tolerance 0.005");
  const pp::Expected<pp::Report> read = pp::read_report_json(j.dump());
  ASSERT_TRUE(read) << read.error();
  const auto status = [&read](Mode mode) { return read->devices.at(0).find(mode)->status; };
  EXPECT_EQ(status(Mode::fp32), pp::Status::interrupted);
  EXPECT_EQ(read->devices.at(0).find(Mode::fp32)->failure, pp::ErrorKind::interrupted);
  EXPECT_EQ(status(Mode::fp16), pp::Status::out_of_time);
  EXPECT_EQ(status(Mode::bf16), pp::Status::cannot_run);
  EXPECT_EQ(status(Mode::int8), pp::Status::failed);  // a hang past --check-timeout
  EXPECT_EQ(status(Mode::tf32), pp::Status::failed);
  // Schema 4 is read as written: its statuses are its own.
  j["schema_version"] = 4;
  const pp::Expected<pp::Report> as_four = pp::read_report_json(j.dump());
  ASSERT_TRUE(as_four) << as_four.error();
  EXPECT_EQ(as_four->devices.at(0).find(Mode::fp32)->status, pp::Status::failed);
  j["schema_version"] = 5;
  EXPECT_FALSE(pp::read_report_json(j.dump()));
}

// Every input of the exit decision is in the JSON: a report read back is gated again to the exit
// code it says, whichever way the run ended (but a failed delivery's exit 6, decided once the
// report existed; the CLI tests gate every report the binary prints, interrupted ones included).
TEST(ReportJson, EveryReportIsGatedAgainToTheExitCodeItSays) {
  struct Case {
    const char* what;
    int code;
    std::function<void(Machine&)> set;
  };
  const auto gpus = [](Machine& m) { m.driver = pp::testing::driver_with({kH200, kH200}); };
  const auto crashed = [](Machine& m) {
    m.driver = pp::testing::driver_with({kH200});
    m.driver.nvml.fault = pp::QueryFault::crashed;
    m.driver.nvml.fault_message = "the NVML query crashed (SIGSEGV)";
    m.system.paths = {"/dev/nvidiactl", "/dev/nvidia0"};
  };
  const auto worker_problem = [](pp::ErrorKind kind) {
    return [kind](Machine& m) {
      m.driver = pp::testing::driver_with({kH200});
      m.engine.answer = [kind, base = m.engine.answer](const pp::WorkerPlan& plan) {
        pp::WorkerResult r = base(plan);
        if (plan.kind == pp::DeviceKind::cuda) {
          r.smoke.clear();
          r.finished = false;
          r.problem = kind;
          r.problem_message = "the worker " + std::string(pp::to_string(kind));
        }
        return r;
      };
    };
  };
  const std::vector<Case> cases = {
      {"two H200s, bf16 required", 0,
       [&](Machine& m) {
         gpus(m);
         m.options.require = {Mode::bf16};
       }},
      {"bf16 required of a T4", 1,
       [](Machine& m) {
         m.driver = pp::testing::driver_with({kT4});
         m.options.require = {Mode::bf16};
       }},
      {"a --device that does not exist", 2,
       [&](Machine& m) {
         gpus(m);
         m.options.devices = *pp::parse_device_selection("5");
       }},
      {"a malformed PRECISION_PROBE_INJECT_FAULT", 2,
       [](Machine& m) {
         m.options.soak_s = 1.0;
         m.system.env["PRECISION_PROBE_INJECT_FAULT"] = "bf16:never";
       }},
      {"--device 0 and no GPU", 3,
       [](Machine& m) { m.options.devices = *pp::parse_device_selection("0"); }},
      {"no engine, a GPU mode required", 3,
       [](Machine& m) {
         m.driver = pp::testing::driver_with({kH200});
         m.engine.is_installed = false;
         m.options.require = {Mode::bf16};
       }},
      {"--quick, a GPU mode required, no PyTorch known", 3,
       [](Machine& m) {
         m.driver = pp::testing::driver_with({kH200});
         m.image.available = false;
         m.options.quick = true;
         m.options.require = {Mode::bf16};
       }},
      {"--nccl with no usable GPU", 3, [](Machine& m) { m.options.nccl = true; }},
      {"a driver that crashed", 3, crashed},
      {"a driver that crashed, the CPU alone gated", 0,
       [&](Machine& m) {
         crashed(m);
         m.options.devices = *pp::parse_device_selection("cpu");
       }},
      {"a driver that hangs", 5,
       [&](Machine& m) {
         crashed(m);
         m.driver.nvml.fault = pp::QueryFault::hung;
       }},
      {"a worker that timed out", 5, worker_problem(pp::ErrorKind::timed_out)},
      {"a worker that crashed", 4, worker_problem(pp::ErrorKind::crashed)},
      {"silent data corruption in the soak", 4,
       [](Machine& m) {
         m.driver = pp::testing::driver_with({kH200});
         m.options.soak_s = 1.0;
         m.engine.answer = [base = m.engine.answer](const pp::WorkerPlan& plan) {
           pp::WorkerResult r = base(plan);
           for (auto [mode, o] : r.soak) {
             o.ok = false;
             o.mismatches = 2;
             o.error = "2 of 100 results differed from the golden one";
           }
           return r;
         };
       }},
  };
  for (const Case& c : cases) {
    Machine m;
    c.set(m);
    const pp::Report r = m.run();
    EXPECT_EQ(r.exit_code, c.code) << c.what << ": " << r.exit_reason;
    EXPECT_EQ(pp::testing::gated_again(r), r.exit_code) << c.what << ": " << r.exit_reason;
  }
  // The offline answer, gated and not.
  for (const char* cc : {"9.0", "7.5"}) {
    Machine m;
    m.options.command = pp::Command::arch;
    m.options.arch_cc = cc;
    m.options.require = {Mode::bf16};
    const pp::Report arch = pp::run_arch(
        m.options, pp::ProbeDeps{m.system, m.driver, m.engine, pp::testing::image_of(&m.image)});
    EXPECT_EQ(arch.exit_code, std::string(cc) == "9.0" ? 0 : 1) << cc;
    EXPECT_EQ(pp::testing::gated_again(arch), arch.exit_code) << cc;
  }
  // An internal error's report, as the program makes it.
  pp::Report internal = pp::usage_error_report("internal error: out of memory", Machine().system);
  internal.error->kind = pp::FailureKind::internal;
  internal.exit_code = pp::exit_code::kCheckFailed;
  EXPECT_EQ(pp::testing::gated_again(internal), pp::exit_code::kCheckFailed);
}
