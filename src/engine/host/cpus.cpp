#include "engine/host/cpus.hpp"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace precision_probe {

namespace {

// cpu.max's "QUOTA PERIOD" in whole CPUs (rounded up), or nullopt for "max" or a text that is not
// one.
std::optional<unsigned> quota_cpus(const std::string& text) {
  std::istringstream in(text);
  std::string quota;
  double period = 0.0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0.0) return std::nullopt;
  double q = 0.0;
  try {
    std::size_t used = 0;
    q = std::stod(quota, &used);
    if (used != quota.size() || q <= 0.0) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return static_cast<unsigned>(std::max(1.0, std::ceil(q / period)));
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

std::optional<unsigned> cgroup_cpu_limit(std::string_view proc_self_cgroup,
                                         const std::string& cgroup_root, const FileReader& read) {
  std::string path;
  bool found = false;
  std::istringstream lines{std::string(proc_self_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("0::", 0) == 0) {
      path = line.substr(3);
      found = true;
    }
  }
  if (!found || path.empty() || path[0] != '/') return std::nullopt;
  std::optional<unsigned> limit;
  while (true) {
    const std::string dir = path == "/" ? cgroup_root : cgroup_root + path;
    if (const std::optional<std::string> text = read(dir + "/cpu.max")) {
      if (const std::optional<unsigned> cpus = quota_cpus(*text)) {
        limit = limit ? std::min(*limit, *cpus) : *cpus;
      }
    }
    if (path == "/") break;
    const std::size_t slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return limit;
}

unsigned usable_cpus() {
  static const unsigned cpus = [] {
    unsigned n = std::max(1U, std::thread::hardware_concurrency());
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
      n = std::max(1, CPU_COUNT(&set));
    }
    if (const std::optional<std::string> cgroup = read_text("/proc/self/cgroup")) {
      if (const std::optional<unsigned> limit =
              cgroup_cpu_limit(*cgroup, "/sys/fs/cgroup", read_text)) {
        n = std::min(n, *limit);
      }
    }
    return n;
  }();
  return cpus;
}

}  // namespace precision_probe
