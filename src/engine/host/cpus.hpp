#pragma once
// How many CPUs the engine's own parallel work may use: the CPUs this process may run on (its
// affinity mask: taskset, a cpuset) and no more than its cgroup's CPU quota gives (cgroup v2's
// cpu.max, v1's cpu.cfs_quota_us over cpu.cfs_period_us, of its cgroup and every cgroup above it:
// a container's `--cpus 1`, a pod's CPU limit of 1). std::thread's hardware_concurrency counts
// the machine's CPUs, which a pinned or throttled engine cannot use: on one CPU, threads beside
// each other only take turns (docs/engine.md, "On one CPU").

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace precision_probe {

// A file's text, or nullopt where it cannot be read.
using FileReader = std::function<std::optional<std::string>(const std::string& path)>;

// The CPU quota of the cgroup named in `proc_self_cgroup` (/proc/self/cgroup's text) and of every
// cgroup above it, read through `read` under `cgroup_root`: v2's "0::PATH" line and
// ROOT/PATH/cpu.max ("max 100000" or "QUOTA PERIOD"), else v1's cpu controller line
// ("N:cpu,cpuacct:PATH") and ROOT/cpu/PATH/cpu.cfs_quota_us and cpu.cfs_period_us (a quota of -1
// is none). The smallest, rounded up to whole CPUs, at least 1; nullopt where none is set, none can
// be read, or the path is not one under the root (a ".." segment: outside the cgroup namespace).
std::optional<unsigned> cgroup_cpu_limit(std::string_view proc_self_cgroup,
                                         const std::string& cgroup_root, const FileReader& read);

// What limits this process's CPUs: its affinity mask's count (of any size) and, where a cgroup
// sets one, its CPU quota in whole CPUs.
struct CpuLimits {
  unsigned affinity = 1;
  std::optional<unsigned> quota;
};

// This process's limits, its cgroups read under `cgroup_root`.
CpuLimits read_cpu_limits(const std::string& cgroup_root = "/sys/fs/cgroup");

// The CPUs a process with these limits may use: the mask's count, at most the quota, at least 1.
unsigned usable_of(const CpuLimits& limits);

// The CPUs this process may use now: usable_of(read_cpu_limits()).
unsigned count_usable_cpus();

// count_usable_cpus(), read once for the process.
unsigned usable_cpus();

// A variable of the environment, null where unset.
using EnvReader = std::function<const char*(const char* name)>;

// What the engine sets in its environment for LibTorch's OpenMP pool before LibTorch loads, where a
// cgroup quota allows fewer CPUs than the affinity mask (a pod's CPU limit: LibTorch sizes its pool
// from the mask or the cores and never reads a quota): OMP_NUM_THREADS, the usable count (the
// quota rounded up to whole CPUs), unless
// OMP_NUM_THREADS or MKL_NUM_THREADS is set; OMP_WAIT_POLICY=PASSIVE, unless it or GOMP_SPINCOUNT
// is set (a thread that spins between parallel regions spends the quota the others need). Empty
// is unset. Nothing where no quota limits.
std::vector<std::pair<std::string, std::string>> openmp_settings(const CpuLimits& limits,
                                                                 const EnvReader& get);

}  // namespace precision_probe
