// The probe in an image it was not built in: that image's PyTorch read from its files (a fake
// tree built for the tests: torch/version.py, the nvidia-* wheels' headers, a libtorch_cuda.so
// that nvcc compiled for sm_80, sm_90 and compute_90), its verdicts under --quick and arch, and a
// full run whose engine loads that PyTorch's own LibTorch (docs/images.md).

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "binary.hpp"
#include "common/strings.hpp"

#include <unistd.h>

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
  // mxfp8 needs the float8_e8m0fnu element type of 2.11's C ABI: this image's 2.9 lacks it.
  EXPECT_NE(j["devices"][0]["precisions"]["mxfp8"]["hardware_reason"].get<std::string>().find(
                "Blackwell"),
            std::string::npos);
}

TEST(Image, ArchAnswersForTheImagesStack) {
  if (!PP_FAKE_TORCH_HAS_CUDA) GTEST_SKIP() << "no nvcc at configure time: no fat binaries to read";
  const ppt::Run r = ppt::run_probe_binary({"arch", "7.5", "--require", "fp16"}, image_env(""));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("read from the image's files"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no kernels for sm_75"), std::string::npos) << r.out;
}

// A full run's workers load the image's own LibTorch: libtorch_cpu.so for the CPU, libtorch_cuda.so
// for GPUs, and TF32 on in the GPU's TF32 process alone; the report's stack is the image's, with
// the library the engine loaded and the release it said it is.
TEST(Image, AFullRunsWorkersLoadTheImagesLibTorch) {
  const std::string log = ppt::make_temp_dir() + "/engine.log";
  std::vector<std::string> env = image_env("NVIDIA H200:9.0:132:141");
  env.push_back("FAKE_ENGINE_LOG=" + log);
  env.emplace_back("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1");
  const ppt::Run r = ppt::run_probe_binary({"--no-amp", "--format", "json"}, env);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stack"]["source"], "image files");
  EXPECT_EQ(j["stack"]["libtorch_version"], "2.9.1+cu128");
  EXPECT_EQ(j["stack"]["abi_version"], "2.9.1");
  EXPECT_EQ(j["stack"]["library"], std::string(PP_FAKE_TORCH) + "/torch/lib/libtorch_cuda.so");
  const std::string logged = ppt::read_all(log);
  const std::string lib = std::string(PP_FAKE_TORCH) + "/torch/lib/";
  EXPECT_NE(logged.find("cpu --worker cpu --libtorch " + lib + "libtorch_cpu.so tf32=-"),
            std::string::npos)
      << logged;
  EXPECT_NE(logged.find("cuda --worker gpu --libtorch " + lib + "libtorch_cuda.so tf32=-"),
            std::string::npos)
      << logged;
  EXPECT_NE(logged.find("cuda --worker gpu --libtorch " + lib + "libtorch_cuda.so tf32=1"),
            std::string::npos)
      << logged;
  // The user's TF32 override is named: the image's fp32 matmuls run as TF32.
  bool said = false;
  for (const auto& d : j["diagnostics"]) said = said || d["code"] == "tf32-override";
  EXPECT_TRUE(said) << r.out;
  ::unlink(log.c_str());
  ::rmdir(precision_probe::directory_of(log).c_str());
}

// Below the engine's floor (2.9), or newer than the newest release it was tested with: a full run
// says so; the first runs no kernel, the second runs them, marked.
TEST(Image, AReleaseBelowTheFloorRunsNoKernelAndANewerOneRunsMarked) {
  std::vector<std::string> below = ppt::fake_driver_env("NVIDIA H200:9.0:132:141");
  below.push_back(ppt::fake_stack("old"));
  const ppt::Run old = ppt::run_probe_binary({"--require", "bf16", "--format", "json"}, below);
  EXPECT_EQ(old.exit_code, 3) << old.out;
  const nlohmann::json o = nlohmann::json::parse(old.out);
  EXPECT_EQ(o["devices"][0]["precisions"]["bf16"]["status"], "not_tested");
  EXPECT_NE(o["devices"][0]["precisions"]["bf16"]["reason"].get<std::string>().find(
                "PyTorch 2.8.0+cu128 is older than 2.9"),
            std::string::npos);
  bool said = false;
  for (const auto& d : o["diagnostics"]) said = said || d["code"] == "libtorch-too-old";
  EXPECT_TRUE(said) << old.out;
  std::vector<std::string> env = ppt::fake_driver_env("NVIDIA H200:9.0:132:141");
  env.push_back(ppt::fake_stack("new"));
  const ppt::Run next = ppt::run_probe_binary({"--require", "bf16", "--format", "json"}, env);
  EXPECT_EQ(next.exit_code, 0) << next.out;
  const nlohmann::json n = nlohmann::json::parse(next.out);
  EXPECT_EQ(n["devices"][0]["precisions"]["bf16"]["status"], "native");
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

// A LibTorch the engine cannot load (dlopen's error), or that says it is another release than
// its version.py: the report names the library and the error, every check not tested, and a
// requirement that needed them is an environment problem.
TEST(Image, ALibTorchTheEngineCannotLoadIsNamedWithDlopensError) {
  std::vector<std::string> env = image_env("NVIDIA H200:9.0:132:141");
  env.emplace_back("FAKE_ENGINE=loadfail");
  const ppt::Run r = ppt::run_probe_binary({"--require", "bf16", "--format", "json"}, env);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(j["devices"][0]["precisions"]["bf16"]["status"], "not_tested");
  EXPECT_NE(j["stack"]["load_error"].get<std::string>().find("libcudnn.so.9"), std::string::npos);
  bool said = false;
  for (const auto& d : j["diagnostics"]) {
    if (d["code"] != "libtorch-load-failed") continue;
    said = true;
    EXPECT_EQ(d["severity"], "error");
    EXPECT_NE(d["message"].get<std::string>().find("libcudnn.so.9: cannot open shared object"),
              std::string::npos);
  }
  EXPECT_TRUE(said) << r.out;
  std::vector<std::string> other = image_env("NVIDIA H200:9.0:132:141");
  other.emplace_back("FAKE_ENGINE=abi:2.10.0");
  const nlohmann::json m =
      nlohmann::json::parse(ppt::run_probe_binary({"--format", "json", "--no-amp"}, other).out);
  said = false;
  for (const auto& d : m["diagnostics"]) said = said || d["code"] == "libtorch-version-mismatch";
  EXPECT_TRUE(said) << m["diagnostics"].dump();
}
