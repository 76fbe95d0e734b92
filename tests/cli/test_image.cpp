// The probe in an image it was not built in: that image's PyTorch read from its files (a fake
// tree built for the tests: torch/version.py, the nvidia-* wheels' headers, a libtorch_cuda.so
// that nvcc compiled for sm_80, sm_90 and compute_90), its verdicts under --quick and arch, and a
// full run that says which stack the checks ran against (docs/images.md).

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "binary.hpp"

namespace ppt = precision_probe::testing;

namespace {

std::vector<std::string> image_env(const std::string& gpus) {
  std::vector<std::string> env = ppt::fake_driver_env(gpus);
  env.push_back(std::string("PRECISION_PROBE_TORCH=") + PP_FAKE_TORCH);
  return env;
}

}  // namespace

TEST(Image, QuickGivesTheVerdictsOfTheImagesOwnStackWithoutAnEngine) {
  if (!PP_FAKE_TORCH_HAS_CUDA) GTEST_SKIP() << "no nvcc at configure time: no fat binaries to read";
  std::vector<std::string> env = image_env("NVIDIA H200:9.0:132:141;Tesla T4:7.5:40:15");
  env.emplace_back("PRECISION_PROBE_ENGINE=/nonexistent/precision-probe-engine");
  const ppt::Run r =
      ppt::run_probe_binary({"--quick", "--require", "bf16", "--format", "json"}, env);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& stack = j["stack"];
  EXPECT_EQ(stack["source"], "image files");
  EXPECT_EQ(stack["found_by"], "PRECISION_PROBE_TORCH");
  EXPECT_EQ(stack["libtorch_version"], "2.9.1+cu128");
  EXPECT_EQ(stack["cuda_version"], "12.8");
  EXPECT_EQ(stack["cudnn_version"], "9.10.2");
  EXPECT_EQ(stack["nccl_version"], "2.27.3");
  EXPECT_EQ(stack["arch_list"], nlohmann::json::array({"sm_80", "sm_90", "compute_90"}));
  EXPECT_EQ(j["image_stack"], stack);
  // The H200 has sm_90 kernels; the T4 (sm_75) has none in this build: exit 3, said so.
  EXPECT_EQ(j["devices"][0]["kernels"]["covered"], true);
  EXPECT_EQ(j["devices"][1]["kernels"]["covered"], false);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(j["exit_reason"].get<std::string>().find("no kernels for this GPU"), std::string::npos);
  // fp8_blockwise needs LibTorch 2.10: this image's 2.9 lacks it, whatever the GPU.
  EXPECT_NE(j["devices"][0]["precisions"]["fp8_blockwise"]["reason"].get<std::string>().find(
                "upgrade to LibTorch (PyTorch) 2.10"),
            std::string::npos);
}

TEST(Image, ArchAnswersForTheImagesStack) {
  if (!PP_FAKE_TORCH_HAS_CUDA) GTEST_SKIP() << "no nvcc at configure time: no fat binaries to read";
  const ppt::Run r = ppt::run_probe_binary({"arch", "7.5", "--require", "fp16"}, image_env(""));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("read from the image's files"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no kernels for sm_75"), std::string::npos) << r.out;
}

TEST(Image, AFullRunSaysTheChecksRanAgainstTheEnginesLibTorch) {
  const ppt::Run r =
      ppt::run_probe_binary({"--no-amp", "--format", "json"}, image_env("NVIDIA H200:9.0:132:141"));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["image_stack"]["libtorch_version"], "2.9.1+cu128");
  EXPECT_NE(j["stack"]["source"], "image files");
  bool said = false;
  for (const auto& d : j["diagnostics"]) {
    if (d["code"] != "engine-not-image-stack") continue;
    said = true;
    EXPECT_EQ(d["severity"], "warning");
    EXPECT_NE(d["message"].get<std::string>().find("not this image's PyTorch 2.9.1+cu128"),
              std::string::npos);
    EXPECT_NE(d["hint"].get<std::string>().find("--quick"), std::string::npos);
  }
  EXPECT_TRUE(said) << r.out;
}

TEST(Image, APrecisionProbeTorchThatNamesNoPyTorchIsAUsageError) {
  const ppt::Run r = ppt::run_probe_binary({"--quick", "--format", "json"},
                                           {"PRECISION_PROBE_TORCH=/nonexistent/torch"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.err,
      "precision-probe: error: PRECISION_PROBE_TORCH=/nonexistent/torch: no PyTorch there (no "
      "version.py, torch/version.py or lib/libtorch_cpu.so)\n");
  EXPECT_EQ(nlohmann::json::parse(r.out)["exit_code"], 2);
}

TEST(Image, AnEngineThatCannotRunNamesBothStacksAndWhatDidNotRun) {
  std::vector<std::string> env = image_env("NVIDIA H200:9.0:132:141");
  env.emplace_back("PRECISION_PROBE_ENGINE=/nonexistent/precision-probe-engine");
  const ppt::Run r = ppt::run_probe_binary({"--require", "bf16", "--format", "json"}, env);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(r.exit_code, 3) << r.err;  // a requirement needed the kernels
  EXPECT_EQ(j["devices"][0]["precisions"]["bf16"]["status"], "not_tested");
  bool said = false;
  for (const auto& d : j["diagnostics"]) {
    if (d["code"] != "engine-not-image-stack") continue;
    said = true;
    EXPECT_EQ(d["severity"], "error");
    const std::string message = d["message"];
    EXPECT_NE(message.find("it was built with LibTorch " +
                           j["tool"]["built_with"]["libtorch"].get<std::string>()),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("this image's PyTorch 2.9.1+cu128"), std::string::npos) << message;
    EXPECT_NE(message.find("no kernel check ran"), std::string::npos) << message;
  }
  EXPECT_TRUE(said) << r.out;
}

TEST(Image, WorkersLoadTheImagesLibTorchWhereItIsTheEnginesRelease) {
  // A tree whose version.py is this build's LibTorch (and CUDA), another whose is not.
  const std::string built = ppt::run_probe_binary({"--version"}).out;  // "... LibTorch X, CUDA Y)"
  const std::size_t at = built.find("LibTorch ") + 9;
  const std::string version = built.substr(at, built.find(',', at) - at);
  const std::size_t cuda_at = built.find("CUDA ") + 5;
  const std::string cuda = built.substr(cuda_at, built.find(')', cuda_at) - cuda_at);
  for (const bool same : {true, false}) {
    const std::string dir = ppt::make_temp_dir();
    ASSERT_EQ(::system(("mkdir -p " + dir + "/torch/lib").c_str()), 0);
    std::ofstream(dir + "/torch/version.py")
        << "__version__ = '" << (same ? version : "0.9.9")
        << "'\ncuda = " << (cuda == "none" ? "None" : "'" + cuda + "'") << "\n";
    const std::string libs = dir + "/libs.log";
    std::vector<std::string> env = ppt::fake_driver_env("");
    env.push_back("PRECISION_PROBE_TORCH=" + dir);
    env.push_back("FAKE_ENGINE_LIBS=" + libs);
    const ppt::Run r = ppt::run_probe_binary({"--device", "cpu", "--no-amp", "-q"}, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string logged = ppt::read_all(libs);
    ASSERT_FALSE(logged.empty());
    EXPECT_EQ(logged.rfind(dir + "/torch/lib", 0) == 0, same) << logged;
  }
}
