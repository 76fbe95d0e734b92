// precision-probe-engine: the worker the probe starts, one per device. It links no LibTorch: it
// loads the image's own (the probe's finder names it) and reaches it through its stable C ABI.
//   --worker cpu|gpu --libtorch LIB     read a plan on stdin, answer in JSON lines (worker.hpp)
//   --describe --libtorch LIB [--cuda]  load LIB and print the stack it is
//   --version

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

#include "engine/host/cpus.hpp"
#include "version/build_info.hpp"
#include "engine/torch/stderr_log.hpp"
#include "engine/torch/torch.hpp"
#include "engine/worker.hpp"

namespace eng = precision_probe::engine;

namespace {

// A worker (or a --describe) never outlives the probe that started it, even one killed with
// SIGKILL: the kernel kills the worker when the probe's thread that started it ends. A probe
// already gone (between the start and this line) ends the worker at once.
void end_with_the_probe() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read before any thread of the worker's own starts
  const char* parent = std::getenv("PRECISION_PROBE_PARENT");
  if (parent != nullptr && std::to_string(::getppid()) != parent) std::_Exit(1);
}

// The CPUs this process may use: its affinity mask and its cgroup's CPU quota.
// PRECISION_PROBE_ENGINE_CGROUP_ROOT, a test knob: the cgroup tree read instead of /sys/fs/cgroup.
precision_probe::CpuLimits cpu_limits() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): no other thread yet
  const char* root = std::getenv("PRECISION_PROBE_ENGINE_CGROUP_ROOT");
  return root != nullptr && *root != '\0' ? precision_probe::read_cpu_limits(root)
                                          : precision_probe::read_cpu_limits();
}

#if defined(__aarch64__)
constexpr bool kOneDnnWritesPerfMap = true;  // ONEDNN_JIT_PROFILE's default there: Linux perf's
#else
constexpr bool kOneDnnWritesPerfMap = false;
#endif

// What LibTorch's libraries read from the environment, set before any thread starts and before
// LibTorch loads: LibTorch sizes its OpenMP pool from the affinity mask or the cores and never
// reads a cgroup's CPU quota (under a pod's CPU limit of 1 on a 16-CPU node its pools of 16
// threads, spinning between parallel regions, are throttled: docs/engine.md, "Under a CPU
// quota"), and oneDNN on AArch64 writes /tmp/perf-PID.map for its JIT kernels unless told not to.
void settle_libtorchs_environment(const precision_probe::CpuLimits& limits) {
  // NOLINTBEGIN(concurrency-mt-unsafe): no other thread yet
  const auto get = [](const char* n) { return std::getenv(n); };
  for (const auto& settings : {precision_probe::openmp_settings(limits, get),
                               precision_probe::onednn_settings(kOneDnnWritesPerfMap, get)}) {
    for (const auto& [name, value] : settings) ::setenv(name.c_str(), value.c_str(), 1);
  }
  // NOLINTEND(concurrency-mt-unsafe)
}

int usage() {
  std::cerr << "usage: precision-probe-engine --worker cpu|gpu --libtorch LIB | --describe "
               "--libtorch LIB [--cuda] | --version\n"
               "(started by precision-probe; not meant to be run by hand)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string verb = argc > 1 ? argv[1] : "";
  if (verb == "--version" && argc == 2) {
    std::cout << "precision-probe-engine " << precision_probe::build_info::kVersion
              << " (loads the image's LibTorch " << eng::kFloorRelease.to_string()
              << " or later through its stable C ABI; tested to "
              << eng::kNewestTestedRelease.to_string() << ")\n";
    return 0;
  }
  eng::WorkerArgs args;
  if (verb == "--worker" && argc == 5 && std::string(argv[3]) == "--libtorch") {
    const std::string kind = argv[2];
    if (kind != "cpu" && kind != "gpu") return usage();
    args.kind =
        kind == "gpu" ? precision_probe::DeviceKind::cuda : precision_probe::DeviceKind::cpu;
    args.libtorch = argv[4];
    end_with_the_probe();
    args.cpus = cpu_limits();
    precision_probe::set_usable_cpus(args.cpus);
    settle_libtorchs_environment(args.cpus);
    // A bench's copies of one GPU, each in a context of its own (PRECISION_PROBE_BENCH_GPU_COPIES):
    // LibTorch's caching allocator keeps blocks per device, not per context, so it must not cache.
    // Set before any thread of the session starts.
    // NOLINTNEXTLINE(concurrency-mt-unsafe)
    const char* copies = std::getenv("PRECISION_PROBE_BENCH_GPU_COPIES");
    if (copies != nullptr && std::atoi(copies) > 1) {  // NOLINT(cert-err34-c): checked by the probe
      ::setenv("PYTORCH_NO_CUDA_MEMORY_CACHING", "1", 1);  // NOLINT(concurrency-mt-unsafe)
    }
    try {
      return eng::run_worker(args);
    } catch (const std::exception& e) {
      std::cerr << "precision-probe-engine: error: " << e.what() << '\n';
      eng::forward_stderr();  // fd 2 may still be the captured log: pass it on
      return 4;
    }
  }
  if (verb == "--describe" && (argc == 4 || argc == 5) && std::string(argv[2]) == "--libtorch") {
    args.libtorch = argv[3];
    if (argc == 5 && std::string(argv[4]) != "--cuda") return usage();
    args.kind = argc == 5 ? precision_probe::DeviceKind::cuda : precision_probe::DeviceKind::cpu;
    end_with_the_probe();
    settle_libtorchs_environment(cpu_limits());  // its stack's cpu_threads as a worker's
    return eng::describe(args);
  }
  return usage();
}
