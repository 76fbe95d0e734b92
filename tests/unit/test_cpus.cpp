// How many CPUs the engine's own threads may use (engine/host/cpus.hpp): the affinity mask, and
// the cgroup v2 CPU quota of the process's cgroup and every cgroup above it.

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <thread>
#include <vector>

#include "engine/host/cpus.hpp"

namespace pp = precision_probe;

namespace {

// A cgroup tree of cpu.max files under the root "/sys/fs/cgroup".
pp::FileReader files(std::map<std::string, std::string> tree) {
  return [tree = std::move(tree)](const std::string& path) -> std::optional<std::string> {
    const auto it = tree.find(path);
    if (it == tree.end()) return std::nullopt;
    return it->second;
  };
}

constexpr const char* kRoot = "/sys/fs/cgroup";

// An environment of these variables alone.
pp::EnvReader environment(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

}  // namespace

// A pod's limit sits on the pod's cgroup, above the container's: the smallest quota on the way up
// counts, rounded up to whole CPUs.
TEST(Cpus, TheSmallestQuotaOnTheWayUpCountsInWholeCpus) {
  const std::string cgroup = "0::/kubepods/pod1/ctr\n";
  EXPECT_EQ(
      pp::cgroup_cpu_limit(cgroup, kRoot,
                           files({{"/sys/fs/cgroup/kubepods/cpu.max", "max 100000\n"},
                                  {"/sys/fs/cgroup/kubepods/pod1/cpu.max", "150000 100000\n"},
                                  {"/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n"}})),
      2U);
  EXPECT_EQ(
      pp::cgroup_cpu_limit(cgroup, kRoot,
                           files({{"/sys/fs/cgroup/kubepods/pod1/cpu.max", "400000 100000\n"},
                                  {"/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "50000 100000\n"}})),
      1U)
      << "half a CPU is one to run on";
  EXPECT_EQ(pp::cgroup_cpu_limit("0::/a\n", kRoot,
                                 files({{"/sys/fs/cgroup/cpu.max", "300000 100000"},
                                        {"/sys/fs/cgroup/a/cpu.max", "max 100000"}})),
            3U)
      << "the root's own file, where there is one";
}

// No quota, a file that cannot be read or is not a quota: no limit. A quota of more CPUs than an
// unsigned counts is the largest, never 0.
TEST(Cpus, NoQuotaOrNoFileIsNoLimit) {
  EXPECT_EQ(pp::cgroup_cpu_limit("0::/a/b\n", kRoot,
                                 files({{"/sys/fs/cgroup/a/cpu.max", "max 100000\n"}})),
            std::nullopt);
  EXPECT_EQ(pp::cgroup_cpu_limit("", kRoot, files({})), std::nullopt);
  for (const char* bad : {"", "100000", "abc 100000", "100000 0", "-5 100000", "1e5x 100000",
                          "nan 100000", "inf 100000", "100000 nan"}) {
    EXPECT_EQ(pp::cgroup_cpu_limit("0::/a\n", kRoot, files({{"/sys/fs/cgroup/a/cpu.max", bad}})),
              std::nullopt)
        << '"' << bad << '"';
  }
  EXPECT_EQ(pp::cgroup_cpu_limit("0::/a\n", kRoot,
                                 files({{"/sys/fs/cgroup/a/cpu.max", "17592186044415 1000"}})),
            std::numeric_limits<unsigned>::max());
}

// A namespaced cgroup is "/": the root's own file. A path that leaves the namespace ("..") is not
// followed out of the cgroup file system.
TEST(Cpus, TheNamespacesRootAndNoPathOutOfIt) {
  EXPECT_EQ(
      pp::cgroup_cpu_limit("0::/\n", kRoot, files({{"/sys/fs/cgroup/cpu.max", "200000 100000"}})),
      2U);
  EXPECT_EQ(pp::cgroup_cpu_limit("0::/../../x\n", kRoot,
                                 files({{"/sys/fs/cgroup/../../x/cpu.max", "100000 100000"},
                                        {"/sys/fs/cgroup/cpu.max", "100000 100000"}})),
            std::nullopt);
  EXPECT_EQ(pp::cgroup_cpu_limit("0::/a/..\n", kRoot,
                                 files({{"/sys/fs/cgroup/cpu.max", "100000 100000"}})),
            std::nullopt);
  EXPECT_EQ(pp::cgroup_cpu_limit("0::/..a\n", kRoot,
                                 files({{"/sys/fs/cgroup/..a/cpu.max", "300000 100000"}})),
            3U)
      << "a cgroup named ..a is a name";
}

// cgroup v1 (and a hybrid host, whose cpu controller stays in v1): the cpu controller's line and
// its cfs quota and period, up to the root; -1 is no quota.
TEST(Cpus, CgroupV1sCfsQuota) {
  const std::string cgroup = "12:memory:/docker/x\n4:cpu,cpuacct:/docker/x\n0::/system.slice/x\n";
  EXPECT_EQ(
      pp::cgroup_cpu_limit(cgroup, kRoot,
                           files({{"/sys/fs/cgroup/cpu/docker/x/cpu.cfs_quota_us", "150000\n"},
                                  {"/sys/fs/cgroup/cpu/docker/x/cpu.cfs_period_us", "100000\n"},
                                  {"/sys/fs/cgroup/system.slice/x/cpu.max", "100000 100000"}})),
      2U);
  EXPECT_EQ(
      pp::cgroup_cpu_limit(cgroup, kRoot,
                           files({{"/sys/fs/cgroup/cpu/docker/x/cpu.cfs_quota_us", "-1\n"},
                                  {"/sys/fs/cgroup/cpu/docker/x/cpu.cfs_period_us", "100000\n"}})),
      std::nullopt);
  // No cgroup namespace: the host's path in /proc/self/cgroup, the container's own cgroup mounted
  // as the controller's root.
  EXPECT_EQ(pp::cgroup_cpu_limit(cgroup, kRoot,
                                 files({{"/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "50000"},
                                        {"/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000"}})),
            1U);
}

// A process pinned to one CPU may use one, whatever the machine has; unpinned, what its mask says
// at most. (count_usable_cpus: the count of now, in a child that pins itself.)
TEST(Cpus, APinnedProcessUsesTheCpusItMayRunOn) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(::sched_getaffinity(0, sizeof mask, &mask), 0);
  const auto allowed = static_cast<unsigned>(CPU_COUNT(&mask));
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &mask)) {
        CPU_SET(cpu, &one);
        break;
      }
    }
    unsigned counted = 0;
    if (::sched_setaffinity(0, sizeof one, &one) == 0) counted = pp::count_usable_cpus();
    const bool written = ::write(fds[1], &counted, sizeof counted) == sizeof counted;
    ::_exit(written ? 0 : 1);
  }
  ::close(fds[1]);
  unsigned pinned = 0;
  const ssize_t got = ::read(fds[0], &pinned, sizeof pinned);
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof pinned));
  EXPECT_EQ(pinned, 1U);
  EXPECT_GE(pp::count_usable_cpus(), 1U);
  EXPECT_LE(pp::count_usable_cpus(), allowed);
  EXPECT_EQ(pp::usable_cpus(), pp::count_usable_cpus()) << "the same mask, read once";
}

// Under a quota below its mask, a GPU session keeps to the quota's count of CPUs: the one it runs
// on first, then those after it in the mask, wrapping around; nothing where the quota does not
// limit (no CPU chosen).
TEST(Cpus, AQuotaBelowTheMaskKeepsToTheCpuRunOnAndThoseAfterIt) {
  using Cpus = std::vector<int>;
  const Cpus node{0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(pp::cpus_to_keep(node, 5, 1), Cpus{5});
  EXPECT_EQ(pp::cpus_to_keep(node, 5, 2), (Cpus{5, 6}));
  EXPECT_EQ(pp::cpus_to_keep(node, 7, 3), (Cpus{0, 1, 7})) << "wrapping around";
  const Cpus cpuset{2, 3, 8, 9};  // a cpuset's CPUs, not from 0
  EXPECT_EQ(pp::cpus_to_keep(cpuset, 8, 2), (Cpus{8, 9}));
  EXPECT_EQ(pp::cpus_to_keep(cpuset, 9, 2), (Cpus{2, 9}));
  EXPECT_EQ(pp::cpus_to_keep(cpuset, 5, 1), Cpus{2}) << "a CPU outside the mask: its first";
  EXPECT_EQ(pp::cpus_to_keep(cpuset, -1, 1), Cpus{2}) << "sched_getcpu failed";
  EXPECT_EQ(pp::cpus_to_keep(cpuset, 2, 4), Cpus{}) << "the quota is the mask";
  EXPECT_EQ(pp::cpus_to_keep(cpuset, 2, 6), Cpus{}) << "the mask limits";
  EXPECT_EQ(pp::cpus_to_keep(cpuset, 2, 0), Cpus{});
  EXPECT_EQ(pp::cpus_to_keep(Cpus{}, 0, 1), Cpus{}) << "the mask unread";
}

// Kept to a CPU, a thread's mask is that CPU, and so is a thread's it starts after (on a thread of
// the test's, whose own mask is left alone).
TEST(Cpus, KeepingToCpusSetsTheMaskItsLaterThreadsInherit) {
  const std::vector<int> mask = pp::affinity_cpus();
  ASSERT_FALSE(mask.empty());
  if (mask.size() < 2) GTEST_SKIP() << "one CPU in this process's mask: nothing to keep to";
  std::string refused = "not run";
  std::vector<int> kept;
  std::vector<int> inherited;
  std::thread([&] {
    refused = pp::keep_to_cpus({mask.back()});
    kept = pp::affinity_cpus();
    std::thread([&inherited] { inherited = pp::affinity_cpus(); }).join();
  }).join();
  if (refused == std::strerror(EPERM) || refused == std::strerror(ENOSYS)) {
    GTEST_SKIP() << "this sandbox refuses sched_setaffinity: " << refused;
  }
  ASSERT_EQ(refused, "");
  EXPECT_EQ(kept, std::vector<int>{mask.back()});
  EXPECT_EQ(inherited, std::vector<int>{mask.back()}) << "a thread started after";
  EXPECT_EQ(pp::affinity_cpus(), mask) << "the test's own thread";
  EXPECT_EQ(pp::keep_to_cpus({}), "no CPU to keep to");
}

// LibTorch's OpenMP pool counts the mask (or the cores), never a quota: the engine sizes it, and
// stops its threads spinning, where a quota is what limits, and nowhere else. A choice in the
// environment stands.
TEST(Cpus, LibTorchsPoolFitsTheQuotaOnlyWhereTheQuotaIsTheLimit) {
  using Settings = std::vector<std::pair<std::string, std::string>>;
  const pp::CpuLimits pod{16, 1U};  // a pod's `cpu: 1` on a 16-CPU node
  const Settings both{{"OMP_NUM_THREADS", "1"}, {"OMP_WAIT_POLICY", "PASSIVE"}};
  EXPECT_EQ(pp::openmp_settings(pod, environment({})), both);
  EXPECT_EQ(pp::openmp_settings({16, 3U}, environment({})),
            (Settings{{"OMP_NUM_THREADS", "3"}, {"OMP_WAIT_POLICY", "PASSIVE"}}));
  EXPECT_EQ(
      pp::openmp_settings(pod, environment({{"OMP_NUM_THREADS", ""}, {"OMP_WAIT_POLICY", ""}})),
      both)
      << "empty is unset";
  EXPECT_EQ(pp::openmp_settings({16, std::nullopt}, environment({})), Settings{}) << "no quota";
  EXPECT_EQ(pp::openmp_settings({16, 16U}, environment({})), Settings{}) << "the mask limits";
  EXPECT_EQ(pp::openmp_settings({4, 8U}, environment({})), Settings{}) << "the mask limits";
  EXPECT_EQ(pp::openmp_settings({1, 1U}, environment({})), Settings{})
      << "taskset: LibTorch sees it";
  const Settings passive{{"OMP_WAIT_POLICY", "PASSIVE"}};
  EXPECT_EQ(pp::openmp_settings(pod, environment({{"OMP_NUM_THREADS", "8"}})), passive)
      << "the user's count";
  EXPECT_EQ(pp::openmp_settings(pod, environment({{"MKL_NUM_THREADS", "2"}})), passive)
      << "MKL_NUM_THREADS wins in LibTorch";
  const Settings count{{"OMP_NUM_THREADS", "1"}};
  EXPECT_EQ(pp::openmp_settings(pod, environment({{"OMP_WAIT_POLICY", "active"}})), count)
      << "the user's";
  EXPECT_EQ(pp::openmp_settings(pod, environment({{"GOMP_SPINCOUNT", "1000"}})), count)
      << "the user's spin";
  EXPECT_EQ(pp::usable_of(pod), 1U);
  EXPECT_EQ(pp::usable_of({6, std::nullopt}), 6U);
  EXPECT_EQ(pp::usable_of({6, 0U}), 1U) << "at least one";
}

// oneDNN writes /tmp/perf-PID.map for its JIT kernels by default on AArch64: the engine turns that
// off there, unless the user chose (either of oneDNN's names for the variable), and sets nothing
// where the default writes no file (x86_64).
TEST(Cpus, OneDnnLeavesNoPerfMapUnlessTheUserAsks) {
  using Settings = std::vector<std::pair<std::string, std::string>>;
  const Settings off{{"ONEDNN_JIT_PROFILE", "0"}};
  EXPECT_EQ(pp::onednn_settings(true, environment({})), off);
  EXPECT_EQ(pp::onednn_settings(true, environment({{"ONEDNN_JIT_PROFILE", ""}})), off)
      << "empty is unset";
  EXPECT_EQ(pp::onednn_settings(true, environment({{"DNNL_JIT_PROFILE", ""}})), off)
      << "empty is unset";
  EXPECT_EQ(pp::onednn_settings(true, environment({{"ONEDNN_JIT_PROFILE", "2"}})), Settings{})
      << "the user's";
  EXPECT_EQ(pp::onednn_settings(true, environment({{"DNNL_JIT_PROFILE", "6"}})), Settings{})
      << "the user's, by the older name";
  EXPECT_EQ(pp::onednn_settings(false, environment({})), Settings{}) << "no perf map by default";
}
