#include "engine/host/cpus.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "strings/strings.hpp"

namespace precision_probe {

namespace {

// QUOTA over PERIOD in whole CPUs, rounded up, at most UINT_MAX; nullopt for v2's "max", v1's -1,
// or what is not a positive integer.
std::optional<unsigned> whole_cpus(std::string_view quota, std::string_view period) {
  const std::optional<std::int64_t> q = parse_int(quota);
  const std::optional<std::int64_t> p = parse_int(period);
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
  const std::int64_t cpus = *q / *p + (*q % *p != 0 ? 1 : 0);
  return static_cast<unsigned>(std::min<std::int64_t>(cpus, std::numeric_limits<unsigned>::max()));
}

// The quota of one cgroup directory, v2's or v1's.
std::optional<unsigned> quota_of(const std::string& dir, bool v2, const FileReader& read) {
  if (v2) {
    const std::vector<std::string> words = split(trim(read(dir + "/cpu.max").value_or("")), ' ');
    if (words.size() != 2) return std::nullopt;
    return whole_cpus(words[0], words[1]);
  }
  return whole_cpus(trim(read(dir + "/cpu.cfs_quota_us").value_or("")),
                    trim(read(dir + "/cpu.cfs_period_us").value_or("")));
}

bool under_root(const std::string& path) { return (path + "/").find("/../") == std::string::npos; }

}  // namespace

std::optional<unsigned> cgroup_cpu_limit(std::string_view proc_self_cgroup,
                                         const std::string& cgroup_root, const FileReader& read) {
  // A hybrid host keeps the cpu controller in v1: v1's where a line names it, else v2's.
  const CgroupPaths paths = cgroup_paths(proc_self_cgroup, "cpu");
  const bool v2 = !paths.v1;
  const std::optional<std::string>& leaf = v2 ? paths.v2 : paths.v1;
  if (!leaf || !under_root(*leaf)) return std::nullopt;
  const std::string root = v2 ? cgroup_root : cgroup_root + "/cpu";
  std::optional<unsigned> limit;
  // Up to the root: a container without a cgroup namespace sees its host path, and its own
  // cgroup mounted as the root.
  for (std::string path = *leaf;; path = directory_of(path)) {
    if (const std::optional<unsigned> cpus = quota_of(path == "/" ? root : root + path, v2, read)) {
      limit = limit ? std::min(*limit, *cpus) : *cpus;
    }
    if (path == "/") break;
  }
  return limit;
}

namespace {

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The affinity mask's count; nullopt where it cannot be read.
std::optional<unsigned> affinity_count() {
  const std::vector<int> cpus = affinity_cpus();
  if (cpus.empty()) return std::nullopt;
  return static_cast<unsigned>(cpus.size());
}

}  // namespace

std::vector<int> affinity_cpus() {
  for (int cpus = CPU_SETSIZE; cpus <= (1 << 20); cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(cpus);
    if (set == nullptr) return {};
    const std::size_t size = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(size, set);
    const int rc = ::sched_getaffinity(0, size, set);
    const int error = errno;
    std::vector<int> in_mask;
    for (int cpu = 0; rc == 0 && cpu < cpus; ++cpu) {
      if (CPU_ISSET_S(static_cast<std::size_t>(cpu), size, set)) in_mask.push_back(cpu);
    }
    CPU_FREE(set);
    if (rc == 0) return in_mask;
    if (error != EINVAL) return {};  // EINVAL: the set is smaller than the kernel's
  }
  return {};
}

std::vector<int> cpus_to_keep(const std::vector<int>& mask, int current, unsigned quota) {
  if (quota == 0 || quota >= mask.size()) return {};
  const auto at = std::find(mask.begin(), mask.end(), current);
  const std::size_t first = at == mask.end() ? 0 : static_cast<std::size_t>(at - mask.begin());
  std::vector<int> kept;
  for (std::size_t i = 0; i < quota; ++i) kept.push_back(mask[(first + i) % mask.size()]);
  std::sort(kept.begin(), kept.end());
  return kept;
}

std::string keep_to_cpus(const std::vector<int>& cpus, int tid) {
  if (cpus.empty()) return "no CPU to keep to";
  const int highest = *std::max_element(cpus.begin(), cpus.end());
  if (highest < 0) return "no CPU to keep to";
  const int count = std::max(CPU_SETSIZE, highest + 1);
  cpu_set_t* set = CPU_ALLOC(count);
  if (set == nullptr) return "no memory for a CPU set";
  const std::size_t size = CPU_ALLOC_SIZE(count);
  CPU_ZERO_S(size, set);
  for (int cpu : cpus) {
    if (cpu >= 0) CPU_SET_S(static_cast<std::size_t>(cpu), size, set);
  }
  const int rc = ::sched_setaffinity(tid, size, set);
  const int error = errno;
  CPU_FREE(set);
  return rc == 0 ? "" : std::string(std::strerror(error));  // NOLINT(concurrency-mt-unsafe)
}

std::string set_every_thread_to(const std::vector<int>& cpus) {
  std::error_code error;
  std::string first_refusal;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", error)) {
    const std::optional<std::int64_t> tid = parse_int(entry.path().filename().string());
    if (!tid) continue;
    std::string refused = keep_to_cpus(cpus, static_cast<int>(*tid));
    if (!refused.empty() && refused != std::strerror(ESRCH) && first_refusal.empty()) {  // NOLINT
      first_refusal = std::move(refused);  // ESRCH: the thread ended meanwhile
    }
  }
  if (error) return "/proc/self/task: " + error.message();
  return first_refusal;
}

CpuLimits read_cpu_limits(const std::string& cgroup_root) {
  CpuLimits limits;
  limits.affinity = affinity_count().value_or(std::max(1U, std::thread::hardware_concurrency()));
  if (const std::optional<std::string> cgroup = read_text("/proc/self/cgroup")) {
    limits.quota = cgroup_cpu_limit(*cgroup, cgroup_root, read_text);
  }
  return limits;
}

unsigned usable_of(const CpuLimits& limits) {
  return std::max(1U, std::min(limits.affinity, limits.quota.value_or(limits.affinity)));
}

unsigned count_usable_cpus() { return usable_of(read_cpu_limits()); }

namespace {
// Set in the environment `get` reads: empty is unset.
bool is_set(const EnvReader& get, const char* name) {
  const char* value = get(name);
  return value != nullptr && *value != '\0';
}
}  // namespace

std::vector<std::pair<std::string, std::string>> openmp_settings(const CpuLimits& limits,
                                                                 const EnvReader& get) {
  std::vector<std::pair<std::string, std::string>> settings;
  if (usable_of(limits) >= limits.affinity) return settings;
  if (!is_set(get, "OMP_NUM_THREADS") && !is_set(get, "MKL_NUM_THREADS")) {
    settings.emplace_back("OMP_NUM_THREADS", std::to_string(usable_of(limits)));
  }
  if (!is_set(get, "OMP_WAIT_POLICY") && !is_set(get, "GOMP_SPINCOUNT")) {
    settings.emplace_back("OMP_WAIT_POLICY", "PASSIVE");
  }
  return settings;
}

std::vector<std::pair<std::string, std::string>> onednn_settings(bool writes_perf_map,
                                                                 const EnvReader& get) {
  if (!writes_perf_map || is_set(get, "ONEDNN_JIT_PROFILE") || is_set(get, "DNNL_JIT_PROFILE")) {
    return {};
  }
  return {{"ONEDNN_JIT_PROFILE", "0"}};
}

namespace {
std::atomic<unsigned> g_usable{0};  // 0: not read yet
}  // namespace

unsigned usable_cpus() {
  unsigned cpus = g_usable.load();
  if (cpus == 0) {
    cpus = count_usable_cpus();
    unsigned unread = 0;
    if (!g_usable.compare_exchange_strong(unread, cpus)) cpus = unread;  // another's read stands
  }
  return cpus;
}

void set_usable_cpus(const CpuLimits& limits) {
  unsigned unread = 0;
  (void)g_usable.compare_exchange_strong(unread, usable_of(limits));  // once: a count read stands
}

}  // namespace precision_probe
