#pragma once
// How many CPUs the engine's own parallel work may use: the CPUs this process may run on (its
// affinity mask: taskset, a cpuset) and no more than its cgroup's CPU quota gives (cgroup v2's
// cpu.max of its cgroup and every cgroup above it: a pod's `cpu: 1`). std::thread's
// hardware_concurrency counts the machine's CPUs, which a pinned or throttled engine cannot use:
// on one CPU, threads beside each other only take turns (docs/engine.md, "On one CPU").

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace precision_probe {

// A file's text, or nullopt where it cannot be read.
using FileReader = std::function<std::optional<std::string>(const std::string& path)>;

// The CPU quota of the cgroup named in `proc_self_cgroup` (/proc/self/cgroup's text; its v2 line,
// "0::/path") and of every cgroup above it, read through `read` from `cgroup_root`/PATH/cpu.max
// ("max 100000" or "QUOTA PERIOD"): the smallest, rounded up to whole CPUs, at least 1; nullopt
// where none is set or none can be read.
std::optional<unsigned> cgroup_cpu_limit(std::string_view proc_self_cgroup,
                                         const std::string& cgroup_root, const FileReader& read);

// The CPUs this process may use: the affinity mask's count, at most the cgroup's quota, at least 1.
// Read once.
unsigned usable_cpus();

}  // namespace precision_probe
