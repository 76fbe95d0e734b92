#pragma once
// The machine as a run reads it, once, before anything starts: the host, the CPU, the environment
// variables and files that the plans and the diagnostics look at, the NVIDIA device nodes. Plain
// data: what comes after takes these facts, never the System they were read from.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "precision_probe/report.hpp"
#include "probe/platform/system.hpp"

namespace precision_probe {

// The NVIDIA device nodes in /dev.
struct DeviceNodes {
  std::vector<std::string> all;   // every /dev/nvidia* ("nvidiactl", "nvidia0", "nvidia-uvm")
  std::vector<std::string> gpus;  // the GPUs' ("nvidia0", "nvidia1"), sorted
  bool ctl = false;               // /dev/nvidiactl is there
  // Of `all`, those this user may not open for reading and writing ("/dev/nvidia0");
  // nvidia-caps and nvidia-modeset are not looked at.
  std::vector<std::string> inaccessible;
};

struct MachineFacts {
  HostInfo host;
  CpuInfo cpu;
  DeviceNodes nodes;
  bool driver_module = false;                         // /proc/driver/nvidia/version is there
  std::optional<std::string> driver_version_text;     // and what it says, where it can be read
  std::optional<std::string> cuda_visible_devices;    // CUDA_VISIBLE_DEVICES as set
  std::optional<std::string> nvidia_visible_devices;  // NVIDIA_VISIBLE_DEVICES as set
  bool torch_not_looked_for = false;  // PRECISION_PROBE_TORCH=none: the hardware alone
  bool tf32_override = false;         // TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1
  bool compat_libcuda = false;        // /usr/local/cuda/compat holds a libcuda.so
};

MachineFacts read_machine(const System& system);

HostInfo collect_host(const System& system);

// What is wrong with PRECISION_PROBE_NODE_NAME, one line ("" where it is unset, empty, or a node
// name: RFC 1123, labels of letters, digits and '-' joined by '.', 253 characters at most).
// collect_host takes it only when it is right; the run refuses to start otherwise (exit 2).
std::string node_name_problem(const System& system);
// PRECISION_PROBE_TORCH=none: no PyTorch is looked for, the hardware alone answers.
bool torch_not_looked_for(const System& system);

// What /proc shows of a process that holds a GPU: its name, and whether this probe started it (a
// worker started ahead may hold a context by the time NVML lists the GPU's processes).
struct ProcessSeen {
  std::string name;
  bool ours = false;
};

// Each of `pids`, as /proc shows it now (a PID /proc does not show is seen with no name).
std::map<unsigned int, ProcessSeen> read_processes(const System& system,
                                                   const std::vector<unsigned int>& pids);

}  // namespace precision_probe
