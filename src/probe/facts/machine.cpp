#include "probe/facts/machine.hpp"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "strings/strings.hpp"
#include "probe/facts/cpu.hpp"

namespace precision_probe {

namespace {

std::string os_pretty_name(const System& system) {
  const auto text = system.read_file("/etc/os-release");
  if (!text) return "";
  for (const std::string& line : split(*text, '\n')) {
    if (starts_with(line, "PRETTY_NAME=")) {
      std::string value = line.substr(12);
      value.erase(std::remove(value.begin(), value.end(), '"'), value.end());
      return value;
    }
  }
  return "";
}

bool in_container(const System& system) {
  if (system.exists("/.dockerenv") || system.exists("/run/.containerenv")) return true;
  if (system.getenv("KUBERNETES_SERVICE_HOST") || system.getenv("container")) return true;
  const auto cgroup = system.read_file("/proc/1/cgroup").value_or("");
  for (const char* marker : {"docker", "kubepods", "containerd", "libpod", "lxc"}) {
    if (cgroup.find(marker) != std::string::npos) return true;
  }
  return false;
}

DeviceNodes read_device_nodes(const System& system) {
  DeviceNodes nodes;
  nodes.all = system.list_dir("/dev", "nvidia");
  for (const std::string& n : nodes.all) {
    if (is_gpu_device_node(n)) nodes.gpus.push_back(n);
    if (n == "nvidia-caps" || n == "nvidia-modeset") continue;
    if (!system.accessible("/dev/" + n)) nodes.inaccessible.push_back("/dev/" + n);
  }
  nodes.ctl = system.exists("/dev/nvidiactl");
  return nodes;
}

constexpr const char* kNodeNameVariable = "PRECISION_PROBE_NODE_NAME";

// A host name of RFC 1123 (as Kubernetes' node names, which are its lower-case subset): labels of
// 1 to 63 letters, digits and '-', neither first nor last, joined by '.'; 253 characters at most.
bool is_node_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  std::size_t label = 0;
  char previous = '.';
  for (const char c : name) {
    if (c == '.') {
      if (label == 0 || previous == '-') return false;
      label = 0;
    } else {
      const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (!alnum && (c != '-' || label == 0)) return false;
      if (++label > 63) return false;
    }
    previous = c;
  }
  return previous != '.' && previous != '-';
}

// The variable's value where it names a node; nothing where it is unset, empty or not a name.
std::optional<std::string> node_name_set(const System& system) {
  std::optional<std::string> value = system.getenv(kNodeNameVariable);
  if (!value || !is_node_name(*value)) return std::nullopt;
  return value;
}

}  // namespace

std::string node_name_problem(const System& system) {
  const std::optional<std::string> value = system.getenv(kNodeNameVariable);
  if (!value || value->empty() || is_node_name(*value)) return "";
  return fmt::format(
      "{}='{}' is not a node name (RFC 1123: letters, digits and '-' in labels of 1 to 63 "
      "characters joined by '.', 253 at most; Kubernetes' spec.nodeName is one)",
      kNodeNameVariable, printable(*value));
}

HostInfo collect_host(const System& system) {
  HostInfo host;
  host.hostname = system.hostname();
  host.node_name = node_name_set(system).value_or(host.hostname);
  host.os = os_pretty_name(system);
  host.kernel = system.kernel_release();
  host.machine = system.machine();
  host.container = in_container(system);
  return host;
}

bool torch_not_looked_for(const System& system) {
  return system.getenv("PRECISION_PROBE_TORCH").value_or("") == "none";
}

MachineFacts read_machine(const System& system) {
  MachineFacts m;
  m.host = collect_host(system);
  m.cpu = parse_cpuinfo(system.read_file("/proc/cpuinfo").value_or(""), system.machine());
  m.nodes = read_device_nodes(system);
  m.driver_module = system.exists("/proc/driver/nvidia/version");
  m.driver_version_text = system.read_file("/proc/driver/nvidia/version");
  m.cuda_visible_devices = system.getenv("CUDA_VISIBLE_DEVICES");
  m.nvidia_visible_devices = system.getenv("NVIDIA_VISIBLE_DEVICES");
  m.torch_not_looked_for = torch_not_looked_for(system);
  m.tf32_override = system.getenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE").value_or("") == "1";
  m.compat_libcuda = !system.list_dir("/usr/local/cuda/compat", "libcuda.so").empty();
  return m;
}

std::map<unsigned int, ProcessSeen> read_processes(const System& system,
                                                   const std::vector<unsigned int>& pids) {
  const std::string self = std::to_string(::getpid());
  std::map<unsigned int, ProcessSeen> seen;
  for (unsigned int pid : pids) {
    if (seen.count(pid) != 0) continue;
    const std::string proc = "/proc/" + std::to_string(pid);
    const std::string stat = system.read_file(proc + "/stat").value_or("");
    const std::size_t paren = stat.rfind(')');
    // Field 4 of /proc/PID/stat is the parent's PID.
    const auto fields = paren == std::string::npos ? std::vector<std::string>{}
                                                   : split(stat.substr(paren + 2), ' ');
    ProcessSeen p;
    p.ours = fields.size() > 1 && fields[1] == self;
    p.name = trim(system.read_file(proc + "/comm").value_or(""));
    seen[pid] = p;
  }
  return seen;
}

}  // namespace precision_probe
