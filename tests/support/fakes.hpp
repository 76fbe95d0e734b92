#pragma once
// Fakes of the hardware and OS interfaces, for unit tests.

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "probe/driver/driver.hpp"
#include "probe/run/engine_client.hpp"
#include "probe/platform/system.hpp"

namespace precision_probe::testing {

class FakeSystem : public System {
 public:
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;
  std::set<std::string> paths;                 // exist
  std::set<std::string> inaccessible;          // exist but not read/write
  std::map<std::string, std::string> denials;  // a path -> where permission is denied on it
  std::string host = "testhost";
  std::string arch = "x86_64";
  bool terminal = false;

  std::optional<std::string> getenv(const std::string& name) const override {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> read_file(const std::string& path) const override {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  }
  bool exists(const std::string& path) const override {
    return paths.count(path) != 0 || files.count(path) != 0;
  }
  bool accessible(const std::string& path) const override {
    return exists(path) && inaccessible.count(path) == 0;
  }
  std::string denied(const std::string& path) const override {
    const auto it = denials.find(path);
    return it != denials.end() ? it->second : "";
  }
  std::vector<std::string> list_dir(const std::string& dir,
                                    const std::string& prefix) const override {
    std::vector<std::string> names;
    for (const std::string& p : paths) {
      if (p.rfind(dir + "/", 0) != 0) continue;
      const std::string name = p.substr(dir.size() + 1);
      if (name.find('/') == std::string::npos && name.rfind(prefix, 0) == 0) names.push_back(name);
    }
    return names;
  }
  std::string hostname() const override { return host; }
  std::string machine() const override { return arch; }
  std::string kernel_release() const override { return "6.1.0-test"; }
  bool stdout_is_terminal() const override { return terminal; }
  int terminal_columns() const override { return terminal ? columns : 0; }
  int columns = 100;
};

class FakeDriver : public DriverApi {
 public:
  NvmlSnapshot nvml;
  CudaSnapshot cuda;
  int nvml_calls = 0;
  int cuda_calls = 0;
  NvmlSnapshot query_nvml() override {
    ++nvml_calls;
    return nvml;
  }
  CudaSnapshot query_cuda() override {
    ++cuda_calls;
    return cuda;
  }
};

// A driver without any library: a container started without GPUs.
FakeDriver no_driver();
// A machine whose GPUs are described as {name, cc, sms, memory GiB}, seen by NVML and CUDA.
struct FakeGpu {
  std::string name;
  ComputeCapability cc;
  int sms = 0;
  int memory_gib = 0;
};
FakeDriver driver_with(const std::vector<FakeGpu>& gpus, const std::string& version = "580.159.04",
                       int cuda_version = 13000);

class FakeEngine : public Engine {
 public:
  // Called per plan; the default answers every smoke mode with a correct result, and says it
  // loaded `lib_dir`'s library as release `abi` (the image's: cuda_stack()'s).
  std::function<WorkerResult(const WorkerPlan&)> answer;
  std::string abi = "2.11.0";
  std::string lib_dir;  // use_libtorch()'s
  // Every plan run, CPU first then the GPUs in index order, then the others (the CPU's run and the
  // GPUs' may come in either order: they run at once).
  std::vector<WorkerPlan> plans_seen;
  std::vector<std::size_t> run_sizes;  // how many plans each run() call got, in the order above
  std::vector<Prestart> prestarts;     // every prestart() call

  FakeEngine();
  void prestart(const Prestart& what) override { prestarts.push_back(what); }
  std::vector<WorkerResult> run(const std::vector<WorkerPlan>& plans, Limits limits) override;
  // The plans of the calls to run(), each call's plans together.
  std::vector<std::vector<WorkerPlan>> calls;
  std::mutex mutex;
  Limits last_limits;
  bool is_installed = true;
  bool installed() const override { return is_installed; }
  // A GPU session's cuInit answer (protocol 8): none by default, as an engine that sends none.
  bool sends_cuda = false;
  std::optional<CudaSnapshot> cuda;
  std::atomic<int> cuda_answer_calls{0};  // asked from the run's cuInit thread
  bool answers_cuda() const override { return sends_cuda; }
  std::optional<CudaSnapshot> cuda_answer() override {
    ++cuda_answer_calls;
    return cuda;
  }
  void use_libtorch(const std::string& dir) override { lib_dir = dir; }
};

// A smoke outcome that passed with the given relative error.
SmokeOutcome passed(double rel_error, double tolerance = 1e-2);
// A training run that passed (loss 2.3 -> 0.5, 0.4% from fp32; loss scaling for amp_fp16).
AmpOutcome passed_amp(Mode mode);
// The image's PyTorch as the probe's finder reads it: a CUDA 13 build of 2.11 with kernels for
// sm_75..sm_120 at /image/torch.
StackInfo cuda_stack();
// A CPU-only build of 2.11 (2.11.0+cpu) at /image/torch.
StackInfo cpu_stack();
// ProbeDeps::find_torch giving `stack` (nullopt where it is not available).
std::function<std::optional<StackInfo>(const System&)> image_of(const StackInfo* stack);

// The exit code the gate gives `report` read back from its JSON (docs/report.md, "Gating a report
// again"), which must be the one it says; -1 where it cannot be read back.
int gated_again(const Report& report);
// The same for a text that may be a report's JSON (a run's stdout): nullopt where it is not one
// (text, a summary, a report cut short, a failed delivery's whose exit 6 no report carries).
std::optional<int> gated_again(const std::string& text);

// /proc/cpuinfo text for a CPU with the given flags.
std::string cpuinfo_with_flags(const std::string& model, const std::string& flags, int cores = 4);
// A real NVIDIA Grace's /proc/cpuinfo (72 Neoverse-V2 cores; tests/unit/grace-cpuinfo.txt says
// where it was recorded), without the fixture's '#' note.
std::string grace_cpuinfo();

}  // namespace precision_probe::testing
