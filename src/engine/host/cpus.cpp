#include "engine/host/cpus.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

namespace precision_probe {

namespace {

// A positive decimal of the whole text, or nullopt.
std::optional<double> positive(const std::string& text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used != text.size() || !std::isfinite(v) || v <= 0.0) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// QUOTA over PERIOD in whole CPUs, rounded up, within 1 and UINT_MAX.
std::optional<unsigned> whole_cpus(const std::string& quota, const std::string& period) {
  const std::optional<double> q = positive(quota);
  const std::optional<double> p = positive(period);
  if (!q || !p) return std::nullopt;  // v2's "max", v1's -1, or not a number
  const double cpus = std::ceil(*q / *p);
  if (cpus >= static_cast<double>(std::numeric_limits<unsigned>::max())) {
    return std::numeric_limits<unsigned>::max();
  }
  return static_cast<unsigned>(std::max(1.0, cpus));
}

std::string first_word(const std::optional<std::string>& text) {
  std::istringstream in(text.value_or(""));
  std::string word;
  in >> word;
  return word;
}

// The quota of one cgroup directory, v2's or v1's.
std::optional<unsigned> quota_of(const std::string& dir, bool v2, const FileReader& read) {
  if (v2) {
    std::istringstream in(read(dir + "/cpu.max").value_or(""));
    std::string quota;
    std::string period;
    if (!(in >> quota >> period)) return std::nullopt;
    return whole_cpus(quota, period);
  }
  return whole_cpus(first_word(read(dir + "/cpu.cfs_quota_us")),
                    first_word(read(dir + "/cpu.cfs_period_us")));
}

// The cgroup path of the CPU's controller and whether it is v2's: v1's cpu controller where a line
// names it (a hybrid host keeps the controller there), else v2's "0::" line.
std::optional<std::pair<std::string, bool>> cpu_cgroup(std::string_view proc_self_cgroup) {
  std::optional<std::pair<std::string, bool>> v2;
  std::istringstream lines{std::string(proc_self_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    const std::size_t a = line.find(':');
    const std::size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
    if (controllers.find(",cpu,") != std::string::npos) return std::pair(line.substr(b + 1), false);
    if (line.substr(0, a) == "0" && controllers == ",,") v2 = std::pair(line.substr(b + 1), true);
  }
  return v2;
}

bool under_root(const std::string& path) {
  return !path.empty() && path[0] == '/' && (path + "/").find("/../") == std::string::npos;
}

}  // namespace

std::optional<unsigned> cgroup_cpu_limit(std::string_view proc_self_cgroup,
                                         const std::string& cgroup_root, const FileReader& read) {
  const auto cgroup = cpu_cgroup(proc_self_cgroup);
  if (!cgroup || !under_root(cgroup->first)) return std::nullopt;
  const auto& [leaf, v2] = *cgroup;
  const std::string root = v2 ? cgroup_root : cgroup_root + "/cpu";
  std::optional<unsigned> limit;
  // Up to the root: a container without a cgroup namespace sees its host path, and its own
  // cgroup mounted as the root.
  for (std::string path = leaf;;) {
    if (const std::optional<unsigned> cpus = quota_of(path == "/" ? root : root + path, v2, read)) {
      limit = limit ? std::min(*limit, *cpus) : *cpus;
    }
    if (path == "/") break;
    const std::size_t slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return limit;
}

namespace {

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The affinity mask's count, in a set as large as the kernel's CPUs need; nullopt where it cannot
// be read.
std::optional<unsigned> affinity_count() {
  for (int cpus = CPU_SETSIZE; cpus <= (1 << 20); cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(cpus);
    if (set == nullptr) return std::nullopt;
    const std::size_t size = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(size, set);
    const int rc = ::sched_getaffinity(0, size, set);
    const int error = errno;
    const int count = rc == 0 ? CPU_COUNT_S(size, set) : 0;
    CPU_FREE(set);
    if (rc == 0) return static_cast<unsigned>(std::max(1, count));
    if (error != EINVAL) return std::nullopt;  // EINVAL: the set is smaller than the kernel's
  }
  return std::nullopt;
}

}  // namespace

unsigned count_usable_cpus() {
  unsigned n = affinity_count().value_or(std::max(1U, std::thread::hardware_concurrency()));
  if (const std::optional<std::string> cgroup = read_text("/proc/self/cgroup")) {
    if (const auto limit = cgroup_cpu_limit(*cgroup, "/sys/fs/cgroup", read_text)) {
      n = std::min(n, *limit);
    }
  }
  return std::max(1U, n);
}

unsigned usable_cpus() {
  static const unsigned cpus = count_usable_cpus();
  return cpus;
}

}  // namespace precision_probe
