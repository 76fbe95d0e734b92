#pragma once
// Running the built precision-probe binary from tests.

#include <functional>
#include <string>
#include <vector>

#include "precision_probe/expected.hpp"
#include "process/process.hpp"

namespace precision_probe::testing {

// FAKE_NVIDIA_GPUS entries (name:cc:SMs:GiB) of the GPUs the CLI tests fake most.
inline constexpr const char* kFakeH200 = "NVIDIA H200:9.0:132:141";
inline constexpr const char* kFakeT4 = "Tesla T4:7.5:40:15";

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
  int term_signal = 0;
};

// Runs the binary with `args` and environment overrides ("KEY=VALUE", or "KEY" to unset).
// The engine is the fake one (tests/cli/fake_engine.cpp) unless an override names another, the
// image's PyTorch the fake "cuda" stack (2.11.0+cu130) unless one names another, the driver
// libraries are made unloadable unless an override names them, and KUBERNETES_SERVICE_HOST is
// unset (no run writes the kubelet's /dev/termination-log unless a test says so). A report it
// prints as JSON is gated again from its JSON (gated_again, fakes.hpp), to the exit code it says,
// or the test fails.
Run run_probe_binary(const std::vector<std::string>& args, std::vector<std::string> env = {},
                     int timeout_s = 60);

// The whole environment run_probe_binary gives the binary (this process's, with those defaults
// and then `env` applied), for tests that start it themselves.
std::vector<std::string> probe_environment(const std::vector<std::string>& env);

// `env` with `more` after it (overrides: a later "KEY=VALUE" wins).
std::vector<std::string> with(std::vector<std::string> env, const std::vector<std::string>& more);

// The environment overrides that point the binary at the fake NVIDIA driver describing `gpus`
// ("NVIDIA H200:9.0:132:141;Tesla T4:7.5:40:15" = name:cc:SMs:GiB, separated by ';').
std::vector<std::string> fake_driver_env(const std::string& gpus);

// "PRECISION_PROBE_TORCH=..." naming one of the fake stacks of tests/CMakeLists.txt: "cuda"
// (2.11.0+cu130, sm_75 to sm_120, the default), "hopper" (the same, sm_80 and sm_90 only), "cpu"
// (2.11.0+cpu), "old" (2.8.0+cu128, below the engine's floor), "new" (2.16.0+cu132, untested).
std::string fake_stack(const std::string& name);

// Whether this machine has GPU device nodes (/dev/nvidiaN): the probe then starts the GPUs' engine
// session before the driver answers, and the CPU's plan joins it (libtorch_cuda carries the
// CPU's), fake driver or not; without them the CPU's plan gets a session of its own. A test of
// which library each plan loads expects what the machine's nodes make right.
bool machine_has_gpu_nodes();

// The whole content of a file ("" when it cannot be read).
std::string read_all(const std::string& path);

// Whether a process is still there (a zombie counts as gone: it has ended).
bool alive(const std::string& pid);

// Whether a process killed a moment ago has gone within two seconds (SIGKILL is immediate, the
// kernel's teardown of the process takes a moment, more under load).
bool gone_soon(const std::string& pid);

// The process ids a fake engine wrote to FAKE_ENGINE_PIDS, one a line.
std::vector<std::string> pids_in(const std::string& file);

// Those of the process ids in `file` (pids_in) that have not gone soon (gone_soon): empty where no
// process outlived the probe, so that a test says which did.
std::vector<std::string> outliving(const std::string& file);

// What `work` returns when it runs in a forked child that can start no thread (nor process): the
// child's RLIMIT_NPROC is 1, and root's child becomes nobody first (root's limit is not enforced),
// so what it reads must be readable by all. Where the child could still start one, or did not
// end well, why.
Expected<std::string> without_threads(const std::function<std::string()>& work);

// A fresh empty directory under the system's temp dir ($TMPDIR, else /tmp), removed with what is in
// it when the test program exits; std::runtime_error where none can be made (never "": a test
// joins paths to it).
std::string make_temp_dir();

// Validates a JSON document against docs/report.schema.json with python3-jsonschema.
// Returns "" when valid, else the validator's message. Sets `available` false when no python3
// with jsonschema was found at configure time.
std::string validate_against_schema(const std::string& json_text, bool& available);

// What `promtool check metrics` finds in an exposition ("" when nothing), the label names the
// probe shares with dcgm-exporter (UUID, modelName, Hostname, DCGM_FI_DRIVER_VERSION:
// docs/prometheus.md) first spelled in snake_case: promtool's lint refuses camelCase, which that
// exporter's own output draws too. Sets `available` false when promtool was not found at
// configure time.
std::string promtool_problems(const std::string& exposition, bool& available);

// `promtool check metrics` of the exposition as it is: its exit code (0 clean, 1 an error, 3 lint
// problems alone) and what it printed. Sets `available` as promtool_problems does.
struct PromtoolCheck {
  int exit_code = -1;
  std::string output;
};
PromtoolCheck promtool_check(const std::string& exposition, bool& available);

}  // namespace precision_probe::testing
