// The probe's own cgroup's memory controller, as the engine client reads it to tell a session the
// OOM killer ended from one killed otherwise: cgroup v2, v1's memory controller (a hybrid machine
// has both), a container whose /proc/self/cgroup names the host's path, and none.

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "fakes.hpp"
#include "probe/platform/cgroup.hpp"

namespace pp = precision_probe;

TEST(Cgroup, V2ReadsItsOwnCgroupsEventsAndLimit) {
  pp::testing::FakeSystem s;
  s.files["/proc/self/cgroup"] = "0::/kubepods/pod1/probe\n";
  s.files["/sys/fs/cgroup/kubepods/pod1/probe/memory.events"] =
      "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n";
  s.files["/sys/fs/cgroup/kubepods/pod1/probe/memory.max"] = "max\n";
  s.files["/sys/fs/cgroup/kubepods/pod1/memory.max"] = "2147483648\n";  // the pod's, above
  s.files["/sys/fs/cgroup/kubepods/memory.max"] = "8589934592\n";
  s.files["/sys/fs/cgroup/memory.events"] = "oom_kill 9\n";  // the root's: not ours
  const auto m = pp::read_cgroup_memory(s);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->events, "/sys/fs/cgroup/kubepods/pod1/probe/memory.events");
  EXPECT_EQ(m->oom_kills, 2U);
  EXPECT_EQ(m->limit, std::optional<std::uint64_t>(2147483648U)) << "the smallest ancestor's";

  // In a container's own cgroup namespace: "/" is the container's cgroup; "max" is no limit.
  pp::testing::FakeSystem c;
  c.files["/proc/self/cgroup"] = "0::/\n";
  c.files["/sys/fs/cgroup/memory.events"] = "oom 0\noom_kill 0\n";
  c.files["/sys/fs/cgroup/memory.max"] = "max\n";
  const auto own = pp::read_cgroup_memory(c);
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(own->events, "/sys/fs/cgroup/memory.events");
  EXPECT_EQ(own->oom_kills, 0U);
  EXPECT_FALSE(own->limit.has_value());
}

// A hybrid machine (v1 controllers, an empty v2 hierarchy): v1's memory controller; in a container
// without a cgroup namespace the path is the host's and the mount is the container's own cgroup,
// read only where that cgroup holds this process (one it is not in would say its kills are not
// the OOM killer's).
TEST(Cgroup, V1sMemoryControllerFirstAndTheMountsRootWhereThePathIsTheHosts) {
  pp::testing::FakeSystem s;
  s.files["/proc/self/cgroup"] =
      "5:devices:/docker/abc\n4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n";
  s.files["/sys/fs/cgroup/memory/memory.oom_control"] =
      "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
  s.files["/sys/fs/cgroup/memory/memory.limit_in_bytes"] = "9223372036854771712\n";
  s.files["/sys/fs/cgroup/memory/cgroup.procs"] = "1\n77\n";
  EXPECT_FALSE(pp::read_cgroup_memory(s).has_value()) << "a root this process is not in";
  s.files["/sys/fs/cgroup/memory/cgroup.procs"] = "1\n" + std::to_string(::getpid()) + "\n77\n";
  const auto m = pp::read_cgroup_memory(s);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->events, "/sys/fs/cgroup/memory/memory.oom_control");
  EXPECT_EQ(m->oom_kills, 3U);
  EXPECT_FALSE(m->limit.has_value()) << "v1's largest value is no limit";

  s.files["/sys/fs/cgroup/memory/docker/abc/memory.oom_control"] = "oom_kill 1\n";
  s.files["/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"] = "9223372036854771712\n";
  // The limit of an ancestor too (v1 says it in memory.stat).
  s.files["/sys/fs/cgroup/memory/docker/abc/memory.stat"] =
      "cache 0\nhierarchical_memory_limit 536870912\nhierarchical_memsw_limit "
      "9223372036854771712\n";
  const auto own = pp::read_cgroup_memory(s);
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(own->events, "/sys/fs/cgroup/memory/docker/abc/memory.oom_control");
  EXPECT_EQ(own->limit, std::optional<std::uint64_t>(536870912U));
}

// Nothing that says oom_kill (a kernel before 4.13, no /sys/fs/cgroup, garbage): unknown.
TEST(Cgroup, NothingThatCountsOomKillsIsUnknown) {
  pp::testing::FakeSystem none;
  EXPECT_FALSE(pp::read_cgroup_memory(none).has_value());
  none.files["/proc/self/cgroup"] = "0::/\n";
  EXPECT_FALSE(pp::read_cgroup_memory(none).has_value());
  none.files["/sys/fs/cgroup/memory.events"] = "oom 1\n";
  EXPECT_FALSE(pp::read_cgroup_memory(none).has_value());
  none.files["/sys/fs/cgroup/memory.events"] = "oom_kill -1\noom_kill x\n";
  EXPECT_FALSE(pp::read_cgroup_memory(none).has_value());
  none.files["/proc/self/cgroup"] = "garbage\n4:memory\n";
  EXPECT_FALSE(pp::read_cgroup_memory(none).has_value());
}
