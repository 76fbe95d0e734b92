#include "probe/platform/cgroup.hpp"

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

// A limit file's bytes: "max" (v2) or v1's "unlimited" (the largest page-aligned value) is none.
std::optional<std::uint64_t> limit_of(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  const std::optional<std::int64_t> bytes = parse_int(trim(*text));
  if (!bytes || *bytes <= 0 || *bytes >= (std::int64_t{1} << 62)) return std::nullopt;
  return static_cast<std::uint64_t>(*bytes);
}

struct Layout {
  std::string root;    // where the hierarchy is mounted
  std::string events;  // the file that counts oom_kill
  std::string limit;
};

std::optional<CgroupMemory> read_at(const System& system, const Layout& layout,
                                    const std::string& path) {
  for (const std::string& dir : {layout.root + (path == "/" ? "" : path), layout.root}) {
    const std::optional<std::string> events = system.read_file(dir + "/" + layout.events);
    const std::optional<std::uint64_t> kills = events ? keyed(*events, "oom_kill") : std::nullopt;
    if (!kills) continue;
    return CgroupMemory{dir + "/" + layout.events, *kills,
                        limit_of(system.read_file(dir + "/" + layout.limit))};
  }
  return std::nullopt;
}

}  // namespace

std::optional<CgroupMemory> read_cgroup_memory(const System& system) {
  const std::optional<std::string> cgroups = system.read_file("/proc/self/cgroup");
  if (!cgroups) return std::nullopt;
  std::optional<std::string> v1;
  std::optional<std::string> v2;
  for (const std::string& line : split(*cgroups, '\n')) {
    // ID:CONTROLLERS:PATH; the path may hold ':' itself.
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (path.empty() || path[0] != '/') continue;
    if (line.substr(0, first) == "0" && controllers.empty()) v2 = path;
    for (const std::string& c : split(controllers, ',')) {
      if (c == "memory") v1 = path;
    }
  }
  // A hybrid machine's v2 hierarchy has no memory controller: v1's first where it has one.
  if (v1) {
    if (auto m = read_at(system,
                         {"/sys/fs/cgroup/memory", "memory.oom_control", "memory.limit_in_bytes"},
                         *v1)) {
      return m;
    }
  }
  if (v2) return read_at(system, {"/sys/fs/cgroup", "memory.events", "memory.max"}, *v2);
  return std::nullopt;
}

}  // namespace precision_probe
