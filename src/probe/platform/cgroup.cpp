#include "probe/platform/cgroup.hpp"

#include <unistd.h>

#include <vector>

#include "strings/strings.hpp"

namespace precision_probe {

namespace {

// The value of `key` in a file of "key value" lines (memory.events, memory.oom_control).
std::optional<std::uint64_t> keyed(const std::string& text, std::string_view key) {
  for (const std::string& line : split(text, '\n')) {
    const std::vector<std::string> words = split(trim(line), ' ');
    if (words.size() != 2 || words[0] != key) continue;
    const std::optional<std::int64_t> value = parse_int(words[1]);
    if (value && *value >= 0) return static_cast<std::uint64_t>(*value);
  }
  return std::nullopt;
}

// A limit in bytes; v1's "unlimited" (the largest page-aligned value) is none.
std::optional<std::uint64_t> limit_of(std::optional<std::uint64_t> bytes) {
  if (!bytes || *bytes == 0 || *bytes >= (std::uint64_t{1} << 62U)) return std::nullopt;
  return bytes;
}

// A limit file's: "max" (v2) is none too.
std::optional<std::uint64_t> limit_in(const std::optional<std::string>& text) {
  const std::optional<std::int64_t> bytes = text ? parse_int(trim(*text)) : std::nullopt;
  if (!bytes || *bytes < 0) return std::nullopt;
  return limit_of(static_cast<std::uint64_t>(*bytes));
}

struct Layout {
  std::string root;    // where the hierarchy is mounted
  std::string events;  // the file that counts oom_kill
  std::string limit;   // the cgroup's own limit
  bool v1 = false;     // memory.stat's hierarchical_memory_limit is the ancestors' too
};

// Whether the process is in the cgroup at `dir`: its cgroup.procs lists the process's PID (as its
// PID namespace numbers it, which is how a container reads its own cgroup).
bool holds_this_process(const System& system, const std::string& dir) {
  const std::optional<std::string> procs = system.read_file(dir + "/cgroup.procs");
  if (!procs) return false;
  const std::string pid = std::to_string(::getpid());
  for (const std::string& line : split(*procs, '\n')) {
    if (trim(line) == pid) return true;
  }
  return false;
}

// The smallest limit of the cgroup and its ancestors up to the mount's root (a Slurm step's or a
// pod's limit is often its parent's): v1 says it in memory.stat, v2 is walked up.
std::optional<std::uint64_t> effective_limit(const System& system, const Layout& layout,
                                             const std::string& dir) {
  if (layout.v1) {
    const std::optional<std::string> stat = system.read_file(dir + "/memory.stat");
    if (const auto hierarchical = stat ? keyed(*stat, "hierarchical_memory_limit") : std::nullopt) {
      return limit_of(hierarchical);
    }
    return limit_in(system.read_file(dir + "/" + layout.limit));
  }
  std::optional<std::uint64_t> smallest;
  for (std::string at = dir;; at = directory_of(at)) {
    const std::optional<std::uint64_t> limit = limit_in(system.read_file(at + "/" + layout.limit));
    if (limit && (!smallest || *limit < *smallest)) smallest = limit;
    if (at.size() <= layout.root.size()) return smallest;
  }
}

// The cgroup `path` names under the mount; where it is not there (a container without a cgroup
// namespace sees the host's path, its own cgroup mounted as the root), the mount's root, if the
// process is in it: a cgroup it is not in would say its kills are not the OOM killer's.
std::optional<CgroupMemory> read_at(const System& system, const Layout& layout,
                                    const std::string& path) {
  std::string dir = layout.root + (path == "/" ? "" : path);
  std::optional<std::string> events = system.read_file(dir + "/" + layout.events);
  if (!events && path != "/" && holds_this_process(system, layout.root)) {
    dir = layout.root;
    events = system.read_file(dir + "/" + layout.events);
  }
  const std::optional<std::uint64_t> kills = events ? keyed(*events, "oom_kill") : std::nullopt;
  if (!kills) return std::nullopt;
  return CgroupMemory{dir + "/" + layout.events, *kills, effective_limit(system, layout, dir)};
}

}  // namespace

std::optional<CgroupMemory> read_cgroup_memory(const System& system) {
  const std::optional<std::string> cgroups = system.read_file("/proc/self/cgroup");
  if (!cgroups) return std::nullopt;
  const auto [v1, v2] = cgroup_paths(*cgroups, "memory");
  // A hybrid machine's v2 hierarchy has no memory controller: v1's first where it has one.
  if (v1) {
    if (auto m = read_at(
            system, {"/sys/fs/cgroup/memory", "memory.oom_control", "memory.limit_in_bytes", true},
            *v1)) {
      return m;
    }
  }
  if (v2) return read_at(system, {"/sys/fs/cgroup", "memory.events", "memory.max", false}, *v2);
  return std::nullopt;
}

}  // namespace precision_probe
