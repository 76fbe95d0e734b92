#include "binary.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fakes.hpp"
#include "strings/strings.hpp"

namespace precision_probe::testing {

namespace {
// The probe ignores SIGPIPE process-wide (main_entry); the test programs that use its process
// code do the same, so that a child that exits without reading its input is an EPIPE.
const bool kSigpipeIgnored = [] {
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}();
}  // namespace

std::vector<std::string> probe_environment(const std::vector<std::string>& env) {
  std::vector<std::string> overrides = {
      "PRECISION_PROBE_ENGINE=" PP_FAKE_ENGINE,
      // The image's PyTorch the tests mean unless they say another: a CUDA 13.0 build of 2.11
      // (tests/CMakeLists.txt's fake stacks), never what the machine has installed.
      "PRECISION_PROBE_TORCH=" PP_FAKE_STACKS "/cuda",
      "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
      "PRECISION_PROBE_LIBCUDA=libcuda-not-here.so.1",
      "PRECISION_PROBE_LIBNVML=libnvidia-ml-not-here.so.1",
      "CUDA_VISIBLE_DEVICES",
      "NVIDIA_VISIBLE_DEVICES",
      "NO_COLOR",
      "PRECISION_PROBE_NODE_NAME",
      // Never the kubelet's /dev/termination-log, where a test machine is a pod.
      "KUBERNETES_SERVICE_HOST",
  };
  // Later entries win: the caller's overrides replace the defaults above.
  overrides.insert(overrides.end(), env.begin(), env.end());
  return environment_with(overrides);
}

Run run_probe_binary(const std::vector<std::string>& args, std::vector<std::string> env,
                     int timeout_s) {
  std::vector<std::string> argv = {PP_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessOutput out =
      run_process(argv, probe_environment(env), "", std::chrono::seconds(timeout_s));
  Run r;
  r.exit_code = out.exit_code;
  r.out = out.out;
  r.err = out.err;
  r.term_signal = out.term_signal;
  // Every report a test makes is gated again from its JSON to the exit code it says.
  if (const std::optional<int> again = gated_again(r.out)) {
    const auto said = nlohmann::json::parse(r.out).at("exit_code");
    EXPECT_EQ(*again, said) << "the report read back is gated to another exit code: " << r.out;
  }
  return r;
}

std::vector<std::string> with(std::vector<std::string> env, const std::vector<std::string>& more) {
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

std::vector<std::string> fake_driver_env(const std::string& gpus) {
  return {"PRECISION_PROBE_LIBCUDA=" PP_FAKE_DRIVER, "PRECISION_PROBE_LIBNVML=" PP_FAKE_DRIVER,
          "FAKE_NVIDIA_GPUS=" + gpus};
}

std::string fake_stack(const std::string& name) {
  return "PRECISION_PROBE_TORCH=" PP_FAKE_STACKS "/" + name;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {
// The test program's temporary directories, removed with everything in them when it exits.
struct TempDirs {
  std::vector<std::string> dirs;
  TempDirs() = default;
  TempDirs(const TempDirs&) = delete;
  TempDirs& operator=(const TempDirs&) = delete;
  TempDirs(TempDirs&&) = delete;
  TempDirs& operator=(TempDirs&&) = delete;
  ~TempDirs() {
    for (const std::string& dir : dirs) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }
};
TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}
}  // namespace

bool alive(const std::string& pid) {
  if (pid.empty()) return false;
  const std::string stat = read_all("/proc/" + pid + "/stat");
  const std::size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

bool gone_soon(const std::string& pid) {
  for (int i = 0; i < 100 && alive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return !alive(pid);
}

std::vector<std::string> pids_in(const std::string& file) {
  std::vector<std::string> pids;
  std::istringstream in(read_all(file));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) pids.push_back(line);
  }
  return pids;
}

std::vector<std::string> outliving(const std::string& file) {
  std::vector<std::string> left;
  for (const std::string& pid : pids_in(file)) {
    if (!gone_soon(pid)) left.push_back(pid);
  }
  return left;
}

Expected<std::string> without_threads(const std::function<std::string()>& work) {
  int fds[2];
  if (::pipe(fds) != 0) return Unexpected{"pipe failed"};
  const pid_t child = ::fork();
  if (child < 0) return Unexpected{"fork failed"};
  if (child == 0) {
    ::close(fds[0]);
    if (::getuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(10);
    const struct rlimit one { 1, 1 };
    if (::setrlimit(RLIMIT_NPROC, &one) != 0) ::_exit(11);
    if (::fork() != -1) ::_exit(12);  // it must fail now, or the test shows nothing
    const std::string got = work();
    const bool written =
        ::write(fds[1], got.data(), got.size()) == static_cast<ssize_t>(got.size());
    ::_exit(written ? 0 : 13);
  }
  ::close(fds[1]);
  std::string got;
  char chunk[4096];
  for (ssize_t n; (n = ::read(fds[0], chunk, sizeof chunk)) > 0;) got.append(chunk, n);
  ::close(fds[0]);
  int status = 0;
  if (::waitpid(child, &status, 0) != child) return Unexpected{"waitpid failed"};
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return got;
  const char* why = !WIFEXITED(status)          ? "the child was killed"
                    : WEXITSTATUS(status) == 10 ? "root's child could not become nobody"
                    : WEXITSTATUS(status) == 11 ? "RLIMIT_NPROC could not be set"
                    : WEXITSTATUS(status) == 12 ? "the child could still start a process"
                                                : "the child did not write its answer";
  return Unexpected{why};
}

std::string make_temp_dir() {
  // An empty TMPDIR is unset, as mktemp(1) takes it (not "/pp-test-...", in the root).
  const char* base = std::getenv("TMPDIR");
  std::string templ =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/pp-test-XXXXXX";
  std::vector<char> name(templ.begin(), templ.end());
  name.push_back('\0');
  // Never "": a test joins paths to it and writes there ("" + "/usr/bin/python3" is the system's
  // python3, which a test whose temporary directory was deleted under it once overwrote).
  if (::mkdtemp(name.data()) == nullptr) {
    throw std::runtime_error("make_temp_dir: mkdtemp(" + templ + "): " + error_string(errno));
  }
  temp_dirs().dirs.emplace_back(name.data());
  return name.data();
}

std::string validate_against_schema(const std::string& json_text, bool& available) {
  const std::string python = PP_SCHEMA_PYTHON;
  available = !python.empty();
  if (!available) return "";
  const std::string script =
      "import json, sys, jsonschema\n"
      "schema = json.load(open(sys.argv[1]))\n"
      "jsonschema.Draft7Validator.check_schema(schema)\n"
      "jsonschema.validate(json.loads(sys.stdin.read()), schema)\n";
  const ProcessOutput out =
      run_process({python, "-c", script, PP_SOURCE_DIR "/docs/report.schema.json"},
                  environment_with({}), json_text, std::chrono::seconds(60));
  if (out.exit_code == 0) return "";
  return out.err.empty() ? "validator failed to run" : out.err;
}

}  // namespace precision_probe::testing

namespace precision_probe::testing {

std::string promtool_problems(const std::string& exposition, bool& available) {
  const std::string promtool = PP_PROMTOOL;
  available = !promtool.empty();
  if (!available) return "";
  // dcgm-exporter's names, and only those, spelled in snake_case for promtool's lint.
  std::string text = exposition;
  for (const auto& [name, snake] :
       {std::pair{"UUID=", "uuid="}, std::pair{"modelName=", "model_name="},
        std::pair{"Hostname=", "hostname="},
        std::pair{"DCGM_FI_DRIVER_VERSION=", "dcgm_fi_driver_version="}}) {
    for (const char* before : {"{", ","}) {
      const std::string from = std::string(before) + name;
      const std::string to = std::string(before) + snake;
      for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
        text.replace(at, from.size(), to);
        at += to.size();
      }
    }
  }
  const PromtoolCheck check = promtool_check(text, available);
  if (check.exit_code == 0) return "";
  return "promtool exited " + std::to_string(check.exit_code) + ": " + check.output;
}

PromtoolCheck promtool_check(const std::string& exposition, bool& available) {
  const std::string promtool = PP_PROMTOOL;
  available = !promtool.empty();
  if (!available) return {};
  const ProcessOutput out = run_process({promtool, "check", "metrics"}, environment_with({}),
                                        exposition, std::chrono::seconds(60));
  return {out.exit_code, out.out + out.err};
}

bool machine_has_gpu_nodes() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
        name.find_first_not_of("0123456789", 6) == std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace precision_probe::testing
