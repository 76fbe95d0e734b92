// The real engine client (process_engine.cpp) against the fake engine binary: where every plan of a
// run goes, how many sessions (LibTorch loads) that takes, and what a session that breaks leaves.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "binary.hpp"
#include "fakes.hpp"
#include "strings/strings.hpp"
#include "probe/platform/system.hpp"
#include "probe/run/engine_client.hpp"

namespace pp = precision_probe;

namespace {

// The fake engine as the engine, its sessions logged to a file of the test's; a variable set for
// the test's length (the client starts its sessions with this process's environment).
class WithFakeEngine {
 public:
  WithFakeEngine() {
    ::setenv("PRECISION_PROBE_ENGINE", PP_FAKE_ENGINE, 1);
    ::setenv("FAKE_ENGINE_SESSIONS", sessions.c_str(), 1);
  }
  WithFakeEngine(const WithFakeEngine&) = delete;
  WithFakeEngine& operator=(const WithFakeEngine&) = delete;
  ~WithFakeEngine() {
    ::unsetenv("PRECISION_PROBE_ENGINE");
    ::unsetenv("FAKE_ENGINE_SESSIONS");
  }
  std::string sessions = pp::testing::make_temp_dir() + "/sessions";
};

pp::WorkerPlan gpu_plan(int index) {
  pp::WorkerPlan p;
  p.kind = pp::DeviceKind::cuda;
  p.index = index;
  p.ordinals = {index};
  p.cuda_visible_devices = std::to_string(index);
  p.smoke = {pp::Mode::fp32, pp::Mode::tf32, pp::Mode::bf16};
  p.seed = 1;
  return p;
}

pp::Limits limits() {
  pp::Limits l;
  l.total = std::chrono::seconds(30);
  return l;
}

}  // namespace

// Started ahead for a node whose device nodes show eight GPUs: the CPU's plan (run first, before
// the GPUs are known) and every GPU's, tf32 included, go to the GPU session: one session in all
// (LibTorch loaded once), each plan answered.
TEST(ProcessEngine, EveryPlanOfARunInOneSession) {
  const WithFakeEngine fake;
  const std::unique_ptr<pp::System> system = pp::make_real_system();
  std::unique_ptr<pp::Engine> engine = pp::make_process_engine(*system, "");
  ASSERT_TRUE(engine->installed()) << engine->not_installed_reason();
  engine->use_libtorch(PP_FAKE_TORCH_LIB);
  engine->prestart(pp::Prestart{true, 8});
  pp::WorkerPlan cpu;
  cpu.smoke = {pp::Mode::fp32};
  cpu.seed = 1;
  const std::vector<pp::WorkerResult> first = engine->run({cpu}, limits());
  std::vector<pp::WorkerPlan> plans;
  for (int i = 0; i < 8; ++i) plans.push_back(gpu_plan(i));
  const std::vector<pp::WorkerResult> gpus = engine->run(plans, limits());
  engine->finish();
  ASSERT_EQ(first.size(), 1U);
  EXPECT_TRUE(first[0].finished) << first[0].problem_message;
  EXPECT_TRUE(first[0].smoke.contains(pp::Mode::fp32));
  ASSERT_EQ(gpus.size(), 8U);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_TRUE(gpus[i].finished) << i << ": " << gpus[i].problem_message;
    EXPECT_EQ(gpus[i].smoke.size(), 3U) << i;
  }
  const std::vector<std::string> sessions = pp::split(pp::testing::read_all(fake.sessions), '\n');
  std::size_t started = 0;
  for (const std::string& s : sessions) {
    if (s.empty()) continue;
    ++started;
    EXPECT_NE(s.find("cuda --worker gpu"), std::string::npos) << s;
  }
  EXPECT_EQ(started, 1U) << pp::testing::read_all(fake.sessions);
}

namespace {

// The machine's files but a cgroup whose OOM killer count is 0 at its first read and
// `kills_after` after (as the kernel's OOM killer counts a kill), under a limit of 1 GiB.
class OomCountingSystem : public pp::testing::FakeSystem {
 public:
  explicit OomCountingSystem(int kills_after) : kills_after_(kills_after) {
    env["PRECISION_PROBE_ENGINE"] = PP_FAKE_ENGINE;
    paths.insert(PP_FAKE_ENGINE);
    files["/proc/self/cgroup"] = "0::/\n";
    files["/sys/fs/cgroup/memory.max"] = "1073741824\n";
  }
  std::optional<std::string> read_file(const std::string& path) const override {
    if (path != "/sys/fs/cgroup/memory.events") return FakeSystem::read_file(path);
    return "oom 1\noom_kill " + std::to_string(reads_++ == 0 ? 0 : kills_after_) + "\n";
  }

 private:
  int kills_after_;
  mutable int reads_ = 0;
};

// Two GPU plans (three checks each) in a session the fake engine SIGKILLs after one check.
// (`once`: the kill does not come again in the isolated sessions.)
std::vector<pp::WorkerResult> run_killed(const pp::System& system, bool once) {
  const std::string once_file = pp::testing::make_temp_dir() + "/once";
  ::setenv("FAKE_ENGINE", "killed", 1);
  if (once) ::setenv("FAKE_ENGINE_ONCE", once_file.c_str(), 1);
  std::unique_ptr<pp::Engine> engine = pp::make_process_engine(system, "");
  engine->use_libtorch(PP_FAKE_TORCH_LIB);
  std::vector<pp::WorkerResult> results = engine->run({gpu_plan(0), gpu_plan(1)}, limits());
  engine->finish();
  ::unsetenv("FAKE_ENGINE");
  ::unsetenv("FAKE_ENGINE_ONCE");
  return results;
}

pp::EngineRerun rerun_after_a_kill(const pp::System& system) {
  for (const pp::WorkerResult& r : run_killed(system, true)) {
    EXPECT_TRUE(r.finished) << r.problem_message;
    if (r.rerun) return *r.rerun;
  }
  ADD_FAILURE() << "no plan ran again";
  return {};
}

}  // namespace

// A session SIGKILLed: where the cgroup's count of OOM kills rose meanwhile, the OOM killer did it
// (with the cgroup's limit); where it did not, something else; where the cgroup does not say, the
// kill alone is said.
TEST(ProcessEngine, AKilledSessionSaysWhetherTheOomKillerDidIt) {
  const OomCountingSystem oom(1);
  const pp::EngineRerun by_oom = rerun_after_a_kill(oom);
  EXPECT_EQ(by_oom.signal, "SIGKILL");
  EXPECT_EQ(by_oom.oom_killer, std::optional<bool>(true));
  EXPECT_EQ(by_oom.why,
            "the engine worker was killed (SIGKILL) by the kernel's OOM killer "
            "(/sys/fs/cgroup/memory.events: oom_kill 0 -> 1; the cgroup's limit 1024 MiB)");

  const OomCountingSystem other(0);
  const pp::EngineRerun by_other = rerun_after_a_kill(other);
  EXPECT_EQ(by_other.oom_killer, std::optional<bool>(false));
  EXPECT_EQ(by_other.why,
            "the engine worker was killed (SIGKILL), not by the OOM killer (the count of its "
            "kills in /sys/fs/cgroup/memory.events stayed at 0)");

  pp::testing::FakeSystem unknown;
  unknown.env["PRECISION_PROBE_ENGINE"] = PP_FAKE_ENGINE;
  unknown.paths.insert(PP_FAKE_ENGINE);
  const pp::EngineRerun by_someone = rerun_after_a_kill(unknown);
  EXPECT_FALSE(by_someone.oom_killer.has_value());
  EXPECT_EQ(by_someone.why, "the engine worker was killed (SIGKILL)");
}

// The cgroup's one OOM kill is the shared session's: the isolated sessions killed again (the
// fake's kill comes again there) are not blamed on it, each kill said once.
TEST(ProcessEngine, EachOomKillIsSaidOfOneSessionOnly) {
  const OomCountingSystem oom(1);
  const std::vector<pp::WorkerResult> results = run_killed(oom, false);
  std::size_t again = 0;
  for (const pp::WorkerResult& r : results) {
    ASSERT_TRUE(r.rerun.has_value()) << r.problem_message;
    EXPECT_EQ(r.rerun->oom_killer, std::optional<bool>(true)) << r.rerun->why;
    if (r.problem != pp::ErrorKind::crashed) continue;
    ++again;
    EXPECT_NE(r.problem_message.find("not by the OOM killer (the 1 kill(s) in "
                                     "/sys/fs/cgroup/memory.events since the run started were of "
                                     "sessions lost before)"),
              std::string::npos)
        << r.problem_message;
  }
  // (A plan left with one check is not killed again: the fake kills after a first check.)
  EXPECT_GE(again, 1U) << "no isolated session was killed again";
}
