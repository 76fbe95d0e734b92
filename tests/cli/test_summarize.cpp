// `precision-probe summarize` through the real binary: reports the probe wrote, read back into a
// fleet's view; bad input, delivery and exit codes as documented (docs/summarize.md).

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "binary.hpp"

namespace ppt = precision_probe::testing;

namespace {

// A report of a node with these GPUs, written by the probe into `dir`/`name`.
std::string probe_report(const std::string& dir, const std::string& name, const std::string& gpus) {
  const std::string path = dir + "/" + name;
  const ppt::Run r = ppt::run_probe_binary({"--json", path, "-q"}, ppt::fake_driver_env(gpus));
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  return path;
}

}  // namespace

TEST(Summarize, ReadsTheProbesReportsAndGatesTheFleet) {
  const std::string dir = ppt::make_temp_dir();
  const std::string h200 = probe_report(dir, "h200.json", "NVIDIA H200:9.0:132:141");
  const std::string t4 = probe_report(dir, "t4.json", "Tesla T4:7.5:40:15");
  ppt::Run r = ppt::run_probe_binary({"summarize", h200});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\n  bf16                 1         0            0        0           0\n"),
            std::string::npos)
      << r.out;
  const std::string host = nlohmann::json::parse(ppt::read_all(t4))["host"]["hostname"];
  r = ppt::run_probe_binary({"summarize", "--require", "bf16", dir});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("\n  bf16 " + host + " GPU 0: emulated: cc 7.5"), std::string::npos)
      << r.out;
  // Both reports are of one host (the test machine's): the newer counts, the older is named.
  EXPECT_NE(r.out.find("older reports of the same host"), std::string::npos) << r.out;
  r = ppt::run_probe_binary({"summarize", "--format", "json", h200, t4});
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["nodes"], 1);
  EXPECT_EQ(j["exit_code"], r.exit_code);
  EXPECT_EQ(j["superseded"][0]["source"], h200);
}

TEST(Summarize, AnUnreadableOrStaleReportIsExit3AndNamed) {
  const std::string dir = ppt::make_temp_dir();
  const std::string h200 = probe_report(dir, "h200.json", "NVIDIA H200:9.0:132:141");
  std::ofstream(dir + "/broken.json") << "{\"schema_version\": 2, \"tool\": ";
  ppt::Run r = ppt::run_probe_binary({"summarize", dir});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.out.find("reports that could not be read\n  " + dir + "/broken.json\n"),
            std::string::npos)
      << r.out;
  nlohmann::json old = nlohmann::json::parse(ppt::read_all(h200));
  old["started_at"] = "2020-01-01T00:00:00.000Z";
  std::ofstream(dir + "/h200.json") << old.dump();
  ::unlink((dir + "/broken.json").c_str());
  r = ppt::run_probe_binary({"summarize", "--max-age", "24h", "--format", "json", dir});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["stale"][0]["node"], old["host"]["hostname"]);
  EXPECT_NE(r.err.find("precision-probe: exit 3: 1 node(s) unknown: 1 stale"), std::string::npos)
      << r.err;
}

TEST(Summarize, BadInputIsOneLineAndExit2AndJsonStaysJson) {
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"summarize"},
       "summarize: no reports given (name files, directories, or - for JSON Lines on stdin)"},
      {{"summarize", "--max-age", "24", "x.json"},
       "--max-age: '24' is not a duration (such as 90m, 24h or 7d)"},
      {{"summarize", "--format", "prometheus", "x.json"},
       "--format: 'prometheus' is not a format of summarize (text, json, markdown)"},
      {{"summarize", "--require", "bf17", "x.json"}, "--require: "},
      {{"summarize", "--bench", "x.json"}, "summarize: unknown option '--bench'"},
      {{"summarize", "-o", "-q", "x.json"}, "-o: '-q' looks like an option, not a FILE"},
      {{"summarize", "-", "-"}, "summarize: - (standard input) is named more than once"},
      {{"summarize", "--max-age", "1h", "--max-age", "2h", "x.json"},
       "--max-age is given more than once"},
      {{"--quick", "summarize", "x.json"}, "summarize comes first, its options after it"},
  };
  for (const Case& c : cases) {
    ppt::Run r = ppt::run_probe_binary(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args.back();
    EXPECT_EQ(r.err.rfind("precision-probe: error: " + c.error, 0), 0U) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const ppt::Run r = ppt::run_probe_binary({"summarize", "--format", "json"});
  EXPECT_EQ(r.exit_code, 2);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["error"]["kind"], "usage");
  EXPECT_EQ(j["exit_code"], 2);
}

TEST(Summarize, WritesItsFileAtomicallyAndAFailedDeliveryIsExit6) {
  const std::string dir = ppt::make_temp_dir();
  const std::string h200 = probe_report(dir, "h200.json", "NVIDIA H200:9.0:132:141");
  const std::string out = dir + "/fleet.md";
  ppt::Run r = ppt::run_probe_binary({"summarize", "--format", "markdown", "-o", out, h200});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(ppt::read_all(out).rfind("## precision-probe fleet: ✅ ok\n", 0), 0U)
      << ppt::read_all(out);
  r = ppt::run_probe_binary({"summarize", "-o", "/dev/full", h200});
  EXPECT_EQ(r.exit_code, 6);
  EXPECT_NE(r.err.find("the summary could not be delivered"), std::string::npos) << r.err;
  r = ppt::run_probe_binary({"summarize", "-q", h200});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  r = ppt::run_probe_binary({"summarize", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--max-age DURATION"), std::string::npos);
}
