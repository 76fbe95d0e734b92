// How many CPUs the engine's own threads may use (engine/host/cpus.hpp): the affinity mask, and
// the cgroup v2 CPU quota of the process's cgroup and every cgroup above it.

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>

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

// No quota, no cgroup v2 line, a file that cannot be read or is not a quota: no limit.
TEST(Cpus, NoQuotaOrNoCgroupV2IsNoLimit) {
  EXPECT_EQ(pp::cgroup_cpu_limit("0::/a/b\n", kRoot,
                                 files({{"/sys/fs/cgroup/a/cpu.max", "max 100000\n"}})),
            std::nullopt);
  EXPECT_EQ(pp::cgroup_cpu_limit("12:cpu,cpuacct:/docker/x\n", kRoot,
                                 files({{"/sys/fs/cgroup/docker/x/cpu.max", "100000 100000"}})),
            std::nullopt)
      << "cgroup v1 alone";
  EXPECT_EQ(pp::cgroup_cpu_limit("", kRoot, files({})), std::nullopt);
  for (const char* bad : {"", "100000", "abc 100000", "100000 0", "-5 100000", "1e5x 100000"}) {
    EXPECT_EQ(pp::cgroup_cpu_limit("0::/a\n", kRoot, files({{"/sys/fs/cgroup/a/cpu.max", bad}})),
              std::nullopt)
        << '"' << bad << '"';
  }
  EXPECT_EQ(pp::cgroup_cpu_limit("1:name=systemd:/x\n0::/a\n", kRoot,
                                 files({{"/sys/fs/cgroup/a/cpu.max", "200000 100000"}})),
            2U)
      << "the v2 line among v1 lines";
}

// A process pinned to one CPU may use one, whatever the machine has; unpinned, what its mask says
// at most.
TEST(Cpus, APinnedProcessUsesTheCpusItMayRunOn) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(::sched_getaffinity(0, sizeof mask, &mask), 0);
  const unsigned allowed = static_cast<unsigned>(CPU_COUNT(&mask));
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
    if (::sched_setaffinity(0, sizeof one, &one) != 0) ::_exit(100);
    ::_exit(static_cast<int>(pp::usable_cpus()));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_GE(pp::usable_cpus(), 1U);
  EXPECT_LE(pp::usable_cpus(), allowed);
}
