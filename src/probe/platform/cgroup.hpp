#pragma once
// The memory controller of the probe's own cgroup: how many of its processes an OOM killer ended,
// and its limit. Read to tell an engine session the OOM killer ended from one killed otherwise.

#include <cstdint>
#include <optional>
#include <string>

#include "probe/platform/system.hpp"

namespace precision_probe {

struct CgroupMemory {
  std::string events;                  // the file `oom_kill` was read from
  std::uint64_t oom_kills = 0;         // processes of the cgroup any OOM killer ended
  std::optional<std::uint64_t> limit;  // bytes; nullopt where there is none
};

// cgroup v2 (`memory.events`, `memory.max`) or v1's memory controller (`memory.oom_control`,
// `memory.limit_in_bytes`; kernels from 4.13 count `oom_kill`), at the path /proc/self/cgroup
// names under /sys/fs/cgroup, else at the mount's root (a container's own cgroup, where the path
// is the host's). nullopt where neither says `oom_kill`.
std::optional<CgroupMemory> read_cgroup_memory(const System& system);

}  // namespace precision_probe
