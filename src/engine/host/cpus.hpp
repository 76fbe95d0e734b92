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

// The CPUs this process may use, read once: usable_of() the limits given to set_usable_cpus()
// before any thread starts and before the first call (the engine's, read at its start, under a
// test's cgroup root where one is named), else count_usable_cpus() at the first call.
unsigned usable_cpus();
void set_usable_cpus(const CpuLimits& limits);

// This process's affinity mask as CPU numbers, ascending, in a set as large as the kernel's CPUs
// need; empty where it cannot be read.
std::vector<int> affinity_cpus();

// The CPUs a GPU session's engine keeps to under a CPU quota below its mask (docs/engine.md,
// "Under a CPU quota": nice orders the threads of one run queue, and with every CPU of the mask
// the CPU's checks at nice 19 run beside the GPU's on other CPUs and spend the quota they need):
// `quota` CPUs of `mask` (ascending), the one this thread runs on (`current`) first, then those
// after it, wrapping around. Empty where the quota does not limit below the mask.
std::vector<int> cpus_to_keep(const std::vector<int>& mask, int current, unsigned quota);

// This thread (or thread `tid`), and the threads it starts from now on, kept to `cpus`
// (sched_setaffinity); the kernel's reason where it refused ("" when done).
std::string keep_to_cpus(const std::vector<int>& cpus, int tid = 0);

// Every thread of this process (/proc/self/task) set to `cpus`, as keep_to_cpus sets one: a
// thread started meanwhile may keep the mask it inherited. The first refusal's reason ("" when
// every thread was set).
std::string set_every_thread_to(const std::vector<int>& cpus);

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

// What the engine sets in its environment for LibTorch's oneDNN before LibTorch loads, where
// oneDNN's default writes a perf map of its JIT kernels (`writes_perf_map`: AArch64, where
// ONEDNN_JIT_PROFILE defaults to Linux perf's integration): ONEDNN_JIT_PROFILE=0, unless it or
// DNNL_JIT_PROFILE (its older name) is set, since every engine would otherwise leave a
// /tmp/perf-PID.map behind. Empty is unset. Nothing on x86_64 (its default, VTune's, writes
// nothing).
std::vector<std::pair<std::string, std::string>> onednn_settings(bool writes_perf_map,
                                                                 const EnvReader& get);

}  // namespace precision_probe
