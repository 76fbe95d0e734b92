// The real engine client (process_engine.cpp) against the fake engine binary: where every plan of a
// run goes, how many sessions (LibTorch loads) that takes, and what a session that breaks leaves.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "binary.hpp"
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
