// Workers that send what they should not, end to end: the fake engine's lines changed by
// FAKE_ENGINE_PATCH. Their figures are checked, not believed: none of these runs passes a gate.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "binary.hpp"

namespace pp = precision_probe;
using nlohmann::json;
using pp::testing::fake_driver_env;
using pp::testing::kFakeH200;
using pp::testing::run_probe_binary;

namespace {

const std::string kTwoH200 = std::string(kFakeH200) + ";" + kFakeH200;

pp::testing::Run run_patched(const std::vector<std::string>& args, const std::string& gpus,
                             const std::string& patch) {
  std::vector<std::string> env = fake_driver_env(gpus);
  env.push_back("FAKE_ENGINE_PATCH=" + patch);
  std::vector<std::string> with_json = args;
  with_json.insert(with_json.end(), {"--format", "json"});
  return run_probe_binary(with_json, env);
}

}  // namespace

TEST(HostileWorkers, AnNcclCheckWithoutItsAllReducesFails) {
  // No all-reduce at all, one of three, or over the wrong number of GPUs: never a pass.
  for (const std::string& patch :
       {std::string(R"({"collective":null})"), std::string(R"({"collective":{"ranks":5}})")}) {
    const auto r = run_patched({"--nccl"}, kTwoH200, patch);
    EXPECT_EQ(r.exit_code, 4) << patch << "\n" << r.out;
    const json c = json::parse(r.out).at("collectives");
    EXPECT_EQ(c.at("status"), "failed") << patch;
    EXPECT_NE(c.at("reason").get<std::string>().find("all-reduce"), std::string::npos);
  }
  const auto unrun = run_patched({"--nccl"}, kTwoH200,
                                 R"({"collective":{"ran":false,"time_ms":null,)"
                                 R"("algbw_gbps":null,"busbw_gbps":null}})");
  EXPECT_EQ(unrun.exit_code, 4) << unrun.out;
}

TEST(HostileWorkers, ATrainingRunThatDidNotTrainFailsTheGate) {
  const std::vector<std::string> patches = {
      R"({"amp":{"loss_rel_diff":-1,"loss_end":null,"fp32_loss_end":null,"params_changed":false}})",
      R"({"amp":{"loss_start":0.5,"loss_end":2.3,"params_changed":false}})",
      R"({"amp":{"fp32_loss_end":0,"loss_rel_diff":null}})",
  };
  for (const std::string& patch : patches) {
    const auto r = run_patched({"--device", "0", "--require", "amp_bf16"}, kFakeH200, patch);
    EXPECT_EQ(r.exit_code, 4) << patch << "\n" << r.out;
    const json amp = json::parse(r.out).at("devices").at(0).at("amp").at("amp_bf16");
    EXPECT_EQ(amp.at("status"), "failed") << patch;
  }
}

TEST(HostileWorkers, FiguresFromABenchmarkThatDidNotRunChangeNoVerdict) {
  // An fp32 benchmark that says it did not run, with an absurd throughput: bf16 stays native.
  const auto r =
      run_patched({"--device", "0", "--bench", "--bench-size", "1024", "--require", "bf16"},
                  kFakeH200, R"({"bench":{"ran":false,"size":1,"reps":-1,"ms":-5,"tflops":1e9}})");
  const json gpu = json::parse(r.out).at("devices").at(0);
  EXPECT_NE(gpu.at("precisions").at("bf16").at("status"), "emulated") << r.out;
  EXPECT_EQ(gpu.at("bench").at("fp32").at("ok"), false);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 1) << "a hostile benchmark must not read as emulated bf16";
}
