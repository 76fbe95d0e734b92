// The probe in an image it was not built in: that image's PyTorch read from its files (a fake
// tree built for the tests: torch/version.py, the nvidia-* wheels' headers, a libtorch_cuda.so
// that nvcc compiled for sm_80, sm_90 and compute_90), its verdicts under --quick and arch, and a
// full run whose engine loads that PyTorch's own LibTorch (docs/images.md).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "binary.hpp"
#include "fakes.hpp"
#include "strings/strings.hpp"
#include "process/process.hpp"

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
// for GPUs, and LibTorch's TF32 override off in every session; the report's stack is the image's,
// with the library the engine loaded and the release it said it is.
TEST(Image, AFullRunsWorkersLoadTheImagesLibTorch) {
  const std::string log = ppt::make_temp_dir() + "/engine.log";
  std::vector<std::string> env = image_env(ppt::kFakeH200);
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
  // The CPU's plan joins the GPUs' session where device nodes let it start ahead.
  const std::string cpu_session = ppt::machine_has_gpu_nodes()
                                      ? "cpu --worker gpu --libtorch " + lib + "libtorch_cuda.so"
                                      : "cpu --worker cpu --libtorch " + lib + "libtorch_cpu.so";
  EXPECT_NE(logged.find(cpu_session + " tf32=-"), std::string::npos) << logged;
  EXPECT_NE(logged.find("cuda --worker gpu --libtorch " + lib + "libtorch_cuda.so tf32=-"),
            std::string::npos)
      << logged;
  EXPECT_EQ(logged.find("tf32=1"), std::string::npos) << logged;  // no session has the override
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
  std::vector<std::string> below = ppt::fake_driver_env(ppt::kFakeH200);
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
  std::vector<std::string> env = ppt::fake_driver_env(ppt::kFakeH200);
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
  std::vector<std::string> env = image_env(ppt::kFakeH200);
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
  std::vector<std::string> other = image_env(ppt::kFakeH200);
  other.emplace_back("FAKE_ENGINE=abi:2.10.0");
  const nlohmann::json m =
      nlohmann::json::parse(ppt::run_probe_binary({"--format", "json", "--no-amp"}, other).out);
  said = false;
  for (const auto& d : m["diagnostics"]) said = said || d["code"] == "libtorch-version-mismatch";
  EXPECT_TRUE(said) << m["diagnostics"].dump();
}

// Libraries of one release under another's version.py: the release that ran is the one reported,
// in every output (the JSON's stack, the text header, Markdown, Prometheus' label), the files'
// claim stays in image_stack, and the mismatch is said with both. --quick loads nothing: there the
// files' release stands.
TEST(Image, TheReleaseTheEngineLoadedIsTheOneReported) {
  const std::string dir = ppt::make_temp_dir();
  std::vector<std::string> env = image_env(ppt::kFakeH200);
  env.emplace_back("FAKE_ENGINE=abi:2.10.0");
  const ppt::Run r =
      ppt::run_probe_binary({"--format", "json", "--no-amp", "--text", dir + "/r.txt", "--markdown",
                             dir + "/r.md", "--prom", dir + "/r.prom"},
                            env);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stack"]["libtorch_version"], "2.10.0") << r.out;
  EXPECT_EQ(j["stack"]["abi_version"], "2.10.0");
  EXPECT_EQ(j["image_stack"]["libtorch_version"], "2.9.1+cu128");
  std::string said;
  for (const auto& d : j["diagnostics"]) {
    if (d["code"] == "libtorch-version-mismatch") said = d["message"];
  }
  EXPECT_NE(said.find("torch/version.py says 2.9.1+cu128, but the library the engine loaded"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("says it is 2.10.0"), std::string::npos) << said;
  EXPECT_NE(ppt::read_all(dir + "/r.txt").find("\nLibTorch 2.10.0 ("), std::string::npos)
      << ppt::read_all(dir + "/r.txt");
  EXPECT_NE(ppt::read_all(dir + "/r.md").find("2.10.0 (CUDA"), std::string::npos)
      << ppt::read_all(dir + "/r.md");
  const std::string prom = ppt::read_all(dir + "/r.prom");
  EXPECT_NE(prom.find("libtorch=\"2.10.0\""), std::string::npos) << prom;
  EXPECT_EQ(prom.find("2.9.1"), std::string::npos) << prom;
  // Where the two agree, the files' fuller name stands (its local version, +cu128).
  const nlohmann::json agree = nlohmann::json::parse(
      ppt::run_probe_binary({"--format", "json", "--no-amp"}, image_env(ppt::kFakeH200)).out);
  EXPECT_EQ(agree["stack"]["libtorch_version"], "2.9.1+cu128");
  const nlohmann::json quick =
      nlohmann::json::parse(ppt::run_probe_binary({"--quick", "--format", "json"}, env).out);
  EXPECT_EQ(quick["stack"]["libtorch_version"], "2.9.1+cu128");
}

// A PRECISION_PROBE_TORCH this user may not reach is said as permission denied, with the place
// that denies it, not as "no PyTorch there" (run as nobody: root passes every permission).
TEST(Image, APrecisionProbeTorchThisUserMayNotReadIsPermissionDenied) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run the probe as another user (nobody)";
  if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "no setpriv (util-linux)";
  const std::string dir = ppt::make_temp_dir();  // 0700, root's
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  std::filesystem::create_directories(dir + "/torch");
  std::ofstream(dir + "/torch/version.py") << "__version__ = '2.11.0+cu130'\n";
  const std::string open_dir = ppt::make_temp_dir();
  ASSERT_EQ(::chmod(open_dir.c_str(), 0755), 0);
  std::filesystem::create_directories(open_dir + "/torch");
  const std::string unreadable = open_dir + "/torch/version.py";
  std::ofstream(unreadable) << "__version__ = '2.11.0+cu130'\n";
  ASSERT_EQ(::chmod(unreadable.c_str(), 0600), 0);
  struct Case {
    std::string torch;
    std::string before;  // what the line says before the denial
    std::string where;   // what denies it
    std::string verb;
  };
  for (const Case& c :
       {Case{dir + "/torch", "", dir, "enter"}, Case{dir, "", dir, "read"},
        Case{open_dir + "/torch", "no version in " + open_dir + "/torch: ", unreadable, "read"}}) {
    const precision_probe::ProcessOutput out = precision_probe::run_process(
        {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", PP_BINARY,
         "--quick", "--format", "json"},
        ppt::probe_environment({"PRECISION_PROBE_TORCH=" + c.torch}), "", std::chrono::seconds(30));
    EXPECT_EQ(out.exit_code, 2) << c.torch << ": " << out.err;
    using precision_probe::printable_path;
    EXPECT_EQ(out.err, "precision-probe: error: PRECISION_PROBE_TORCH=" + printable_path(c.torch) +
                           ": " + c.before + "permission denied: " + printable_path(c.where) +
                           " (this user, uid 65534, may not " + c.verb + " it)\n");
    EXPECT_EQ(out.err.find("no PyTorch there"), std::string::npos);
    EXPECT_EQ(nlohmann::json::parse(out.out)["exit_code"], 2) << out.out;
  }
}

// --- Files that could hang a reader: a FIFO in the tree, a python3 that never answers ------------

namespace {

// A copy of the fake stack `stack` (tests/CMakeLists.txt) under `dir`, with a FIFO made at `fifo`
// (relative to the copy) in place of the file that was there.
void copy_stack_with_fifo(const std::string& stack, const std::string& dir,
                          const std::string& fifo) {
  std::filesystem::create_directories(dir);
  std::filesystem::copy(std::string(PP_FAKE_STACKS) + "/" + stack, dir,
                        std::filesystem::copy_options::recursive);
  const std::string path = dir + "/" + fifo;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::filesystem::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
}

bool has_diagnostic(const nlohmann::json& j, const std::string& code) {
  for (const auto& d : j["diagnostics"]) {
    if (d["code"] == code) return true;
  }
  return false;
}

// The environment of an image whose PyTorch is found through the python3 of `bin` alone.
std::vector<std::string> python_env(const std::string& bin, const std::string& home) {
  std::vector<std::string> env = ppt::fake_driver_env(ppt::kFakeH200);
  env.insert(env.end(), {"PRECISION_PROBE_TORCH", "LD_LIBRARY_PATH",
                         "PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home});
  return env;
}

// The fake python3 (tests/cli/fake_python.cpp, an ELF) as `bin`/python3, told `mode`.
void install_fake_python(const std::string& bin, const std::string& mode) {
  std::filesystem::create_directories(bin);
  std::filesystem::copy_file(PP_FAKE_PYTHON, bin + "/python3");
  std::ofstream(bin + "/fake-python-mode") << mode << '\n';
}

// The PID the hanging fake python3 wrote, once it has started (0 if it never did).
pid_t wait_until_started(const std::string& bin) {
  for (int i = 0; i < 2000; ++i) {
    const std::string pid = ppt::read_all(bin + "/fake-python-started");
    if (!pid.empty()) return static_cast<pid_t>(std::stol(pid));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

}  // namespace

namespace {

// The fake H200 and the image's PyTorch at `tree` (PRECISION_PROBE_TORCH).
std::vector<std::string> h200_with_torch(const std::string& tree) {
  std::vector<std::string> env = ppt::fake_driver_env(ppt::kFakeH200);
  env.push_back("PRECISION_PROBE_TORCH=" + tree);
  return env;
}

// The three commands that read the image's PyTorch: --quick, arch and a full run.
const std::vector<std::vector<std::string>> kThreeReaders = {
    {"--quick", "--timeout", "2"}, {"arch", "9.0"}, {"--timeout", "2"}};

}  // namespace

// A FIFO named libtorch_cuda.so (no writer: a blocking open waits for ever) is refused, named, and
// costs nothing: --quick, arch and a full run each end at once with a valid report.
TEST(Image, AFifoInPlaceOfLibtorchCudaIsRefusedNamedAndHoldsNothing) {
  const std::string tree = ppt::make_temp_dir() + "/T";
  copy_stack_with_fifo("cuda", tree, "torch/lib/libtorch_cuda.so");
  const std::vector<std::string> env = h200_with_torch(tree);
  const std::string fifo = tree + "/torch/lib/libtorch_cuda.so";
  for (const std::vector<std::string>& args : kThreeReaders) {
    std::vector<std::string> argv = args;
    argv.insert(argv.end(), {"--format", "json"});
    const ppt::Run r = ppt::run_probe_binary(argv, env, 30);
    const std::string what = args[0];
    ASSERT_EQ(r.exit_code, 0) << what << ": " << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["image_stack"]["refused"], nlohmann::json::array({fifo + " (a FIFO)"})) << what;
    EXPECT_EQ(j["stack"]["cuda_built"], false) << what;  // not loaded either
    EXPECT_EQ(j["image_stack"]["arch_note"],
              "built for CUDA 13.0, but " + fifo + " is not a regular file (refused)");
    if (what == "arch") {  // offline: no diagnostics; the GPU's kernels say it
      EXPECT_EQ(j["devices"][0]["kernels"]["reason"], j["image_stack"]["arch_note"]);
    } else {
      EXPECT_TRUE(has_diagnostic(j, "torch-file-refused")) << what << ": " << j["diagnostics"];
    }
    bool available = false;
    const std::string problem = ppt::validate_against_schema(r.out, available);
    EXPECT_TRUE(problem.empty()) << what << ": " << problem;
  }
}

// A FIFO named version.py: the PyTorch that PRECISION_PROBE_TORCH names has no version that can be
// read, which is bad input (exit 2, one line naming the FIFO, a JSON document under --format json).
TEST(Image, AFifoInPlaceOfVersionPyIsAUsageErrorThatNamesIt) {
  const std::string tree = ppt::make_temp_dir() + "/T";
  copy_stack_with_fifo("cuda", tree, "torch/version.py");
  const std::vector<std::string> env = h200_with_torch(tree);
  // The variable's value as the probe names a path (a long one shortened: a long TMPDIR).
  const std::string line =
      "precision-probe: error: PRECISION_PROBE_TORCH=" + precision_probe::printable_path(tree) +
      ": no version in " + tree + "/torch: " + tree +
      "/torch/version.py (a FIFO) is not a regular file, refused unread\n";
  for (const std::vector<std::string>& args : kThreeReaders) {
    std::vector<std::string> argv = args;
    argv.insert(argv.end(), {"--format", "json"});
    const ppt::Run r = ppt::run_probe_binary(argv, env, 30);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_EQ(r.err, line) << args[0];
    EXPECT_EQ(nlohmann::json::parse(r.out)["exit_code"], 2) << args[0];
  }
}

// The same trees found through the python3 on PATH: from its prefix (a stub script, never run),
// and from the prefix the interpreter itself gives (an ELF, asked with -I -S).
TEST(Image, AFifoInATreeFoundThroughPython3IsRefusedToo) {
  const std::string dir = ppt::make_temp_dir();
  const std::string site = "/lib/python3.12/site-packages";
  copy_stack_with_fifo("cuda", dir + "/venv" + site, "torch/version.py");
  std::filesystem::create_directories(dir + "/venv/bin");
  std::ofstream(dir + "/venv/bin/python3") << "#!/bin/sh\nexit 1\n";
  std::filesystem::permissions(dir + "/venv/bin/python3", std::filesystem::perms::owner_all);
  const ppt::Run stub =
      ppt::run_probe_binary({"--quick", "--timeout", "2", "--require", "bf16", "--format", "json"},
                            python_env(dir + "/venv/bin", dir), 30);
  EXPECT_EQ(stub.exit_code, 3) << stub.err;  // the stack is not known: the requirement cannot be
  const nlohmann::json s = nlohmann::json::parse(stub.out);
  const std::string version_py = dir + "/venv" + site + "/torch/version.py";
  EXPECT_EQ(s["image_stack"]["found_by"], "python3 (" + dir + "/venv/bin/python3)");
  EXPECT_EQ(s["image_stack"]["refused"], nlohmann::json::array({version_py + " (a FIFO)"}));
  EXPECT_NE(s["stack"]["error"].get<std::string>().find(version_py + " (a FIFO)"),
            std::string::npos);
  EXPECT_TRUE(has_diagnostic(s, "torch-file-refused"));

  copy_stack_with_fifo("cuda", dir + "/other" + site, "torch/lib/libtorch_cuda.so");
  install_fake_python(dir + "/bin", "prefix " + dir + "/other");
  const ppt::Run asked = ppt::run_probe_binary({"--quick", "--timeout", "2", "--format", "json"},
                                               python_env(dir + "/bin", dir), 30);
  EXPECT_EQ(asked.exit_code, 0) << asked.err;
  const nlohmann::json a = nlohmann::json::parse(asked.out);
  EXPECT_EQ(a["image_stack"]["found_by"], "python3 (" + dir + "/bin/python3)");
  EXPECT_EQ(a["image_stack"]["libtorch_version"], "2.11.0+cu130");
  EXPECT_EQ(
      a["image_stack"]["refused"],
      nlohmann::json::array({dir + "/other" + site + "/torch/lib/libtorch_cuda.so (a FIFO)"}));
}

// PRECISION_PROBE_PYTHON (what the pip-installed launcher gives): that Python's torch is read
// before the python3 on PATH's, that interpreter asked for its prefixes through the reader's second
// reading; a value that names no interpreter is exit 2, in JSON too.
TEST(Image, PrecisionProbePythonsTorchComesBeforePython3sAndABadOneIsAUsageError) {
  const std::string dir = ppt::make_temp_dir();
  const std::string site = "/lib/python3.12/site-packages";
  std::filesystem::create_directories(dir + "/usr" + site);
  std::filesystem::copy(std::string(PP_FAKE_STACKS) + "/cpu", dir + "/usr" + site,
                        std::filesystem::copy_options::recursive);
  std::filesystem::create_directories(dir + "/usr/bin");
  std::ofstream(dir + "/usr/bin/python3") << "#!/bin/sh\nexit 1\n";  // a script: not asked
  std::filesystem::permissions(dir + "/usr/bin/python3", std::filesystem::perms::owner_all);
  std::filesystem::create_directories(dir + "/other" + site);
  std::filesystem::copy(std::string(PP_FAKE_STACKS) + "/cuda", dir + "/other" + site,
                        std::filesystem::copy_options::recursive);
  std::filesystem::create_directories(dir + "/venv/bin");
  std::filesystem::copy_file(PP_FAKE_PYTHON, dir + "/venv/bin/python");
  std::ofstream(dir + "/venv/bin/fake-python-mode") << "prefix " << dir << "/other\n";
  std::vector<std::string> env = python_env(dir + "/usr/bin", dir);
  const ppt::Run path =
      ppt::run_probe_binary({"--quick", "--timeout", "5", "--format", "json"}, env, 30);
  EXPECT_EQ(nlohmann::json::parse(path.out)["image_stack"]["libtorch_version"], "2.11.0+cpu");
  env.push_back("PRECISION_PROBE_PYTHON=" + dir + "/venv/bin/python");
  const ppt::Run named =
      ppt::run_probe_binary({"--quick", "--timeout", "5", "--format", "json"}, env, 30);
  EXPECT_EQ(named.exit_code, 0) << named.err;
  const nlohmann::json j = nlohmann::json::parse(named.out);
  EXPECT_EQ(j["image_stack"]["found_by"], "PRECISION_PROBE_PYTHON (" + dir + "/venv/bin/python)");
  EXPECT_EQ(j["image_stack"]["libtorch_version"], "2.11.0+cu130");
  env.back() = "PRECISION_PROBE_PYTHON=" + dir + "/venv/bin/python9";
  const ppt::Run bad = ppt::run_probe_binary({"--quick", "--format", "json"}, env, 30);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "precision-probe: error: PRECISION_PROBE_PYTHON=" +
                         precision_probe::printable_path(dir + "/venv/bin/python9") +
                         ": no such file\n");
  EXPECT_EQ(nlohmann::json::parse(bad.out)["exit_code"], 2);
  std::filesystem::remove_all(dir);
}

// A python3 that never answers (as one on a hung network mount would not): the reading is cut at
// the run's time, exit 5, said so, and nothing it started is left running.
TEST(Image, APython3ThatNeverAnswersCostsTheRunsTimeAndNoMore) {
  const std::string dir = ppt::make_temp_dir();
  install_fake_python(dir + "/bin", "hang");
  const auto start = std::chrono::steady_clock::now();
  // 1.8 s: time enough, on a loaded machine, for the reader to reach the python3 it then waits
  // on, and under the 2 s the probe gives python3 itself.
  const ppt::Run r = ppt::run_probe_binary({"--quick", "--timeout", "1.8", "--format", "json"},
                                           python_env(dir + "/bin", dir), 30);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  EXPECT_EQ(r.exit_code, 5) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["image_stack"]["read_failure"], "timed_out");
  EXPECT_EQ(j["exit_reason"],
            "the image's PyTorch files were not read within the run's time (1.8 s, --timeout): " +
                dir + "/bin/python3 had not said where its packages are");
  const pid_t python = wait_until_started(dir + "/bin");
  ASSERT_GT(python, 0);
  EXPECT_EQ(::kill(python, 0), -1);  // killed and reaped
}

// SIGTERM while the image is read: exit 5, "interrupted", not a PyTorch that has no version.
TEST(Image, ASignalWhileTheImageIsReadIsExit5) {
  const std::string dir = ppt::make_temp_dir();
  install_fake_python(dir + "/bin", "hang");
  precision_probe::ChildProcess probe;
  const auto started = probe.start({PP_BINARY, "--quick", "--format", "json"},
                                   ppt::probe_environment(python_env(dir + "/bin", dir)), "");
  ASSERT_TRUE(started) << started.error();
  const pid_t python = wait_until_started(dir + "/bin");
  ASSERT_GT(python, 0) << "the python3 was never asked";
  ASSERT_EQ(::kill(probe.pid(), SIGTERM), 0);
  std::string out;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(probe.stdout_fd(), buffer, sizeof buffer)) > 0) {
    out.append(buffer, static_cast<std::size_t>(n));
  }
  const int status = probe.wait();
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal instead of exiting";
  EXPECT_EQ(WEXITSTATUS(status), 5);
  const nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["exit_reason"], "interrupted by SIGTERM; the report is partial");
  EXPECT_EQ(j["image_stack"]["read_failure"], "not_run");
  EXPECT_EQ(j["image_stack"]["error"],
            "the image's PyTorch files were being read when the run was interrupted by SIGTERM");
  EXPECT_EQ(ppt::gated_again(out), 5);  // read back, the interrupt is in the report
  EXPECT_EQ(::kill(python, 0), -1);     // killed and reaped
}
