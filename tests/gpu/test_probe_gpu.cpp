// The whole binary on a real GPU, with the real driver and engine. Label "gpu".

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "binary.hpp"

namespace pp = precision_probe;
using nlohmann::json;

namespace {

std::vector<std::string> real_env(std::vector<std::string> more = {}) {
  std::vector<std::string> env = {"PRECISION_PROBE_ENGINE=" PP_REAL_ENGINE,
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

}  // namespace

TEST(ProbeGpu, EveryVisibleGpuIsProbedForReal) {
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
}

TEST(ProbeGpu, Bf16GateOnARealGpu) {
  int code = 0;
  const json j = probe_json({"--require", "bf16"}, code);
  if (j.at("driver").at("status") != "ok")
    GTEST_SKIP() << "no GPU: " << j.at("driver").at("message");
  const std::string cc = j.at("devices").at(0).at("gpu").at("compute_capability");
  EXPECT_EQ(code, major_of(cc) >= 8 ? 0 : 1);
}

TEST(ProbeGpu, HidingEveryDeviceIsAnEnvironmentProblem) {
  int probe_code = 0;
  const json all = probe_json({"--quick"}, probe_code);
  if (all.at("driver").at("status") != "ok") GTEST_SKIP() << "no GPU";
  int code = 0;
  const json j = probe_json({"--require", "bf16"}, code, {"CUDA_VISIBLE_DEVICES="});
  EXPECT_EQ(code, 3);
  EXPECT_EQ(j.at("driver").at("status"), "no_devices");
}
