#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

#include "precision_probe/process.hpp"

namespace pp = precision_probe;
using namespace std::chrono_literals;

TEST(Process, CapturesOutputAndExitCode) {
  const auto out = pp::run_process({"/bin/sh", "-c", "cat; echo err >&2; exit 3"},
                                   pp::environment_with({}), "input", 10s);
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_EQ(out.out, "input");
  EXPECT_EQ(out.err, "err\n");
  EXPECT_FALSE(out.timed_out);
}

TEST(Process, TimeoutKillsTheWholeGroup) {
  const auto start = std::chrono::steady_clock::now();
  const auto out = pp::run_process({"/bin/sh", "-c", "sleep 30 & sleep 30"},
                                   pp::environment_with({}), "", 300ms);
  EXPECT_TRUE(out.timed_out);
  EXPECT_EQ(out.exit_code, -1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(Process, SignalsAreReportedByName) {
  const auto out =
      pp::run_process({"/bin/sh", "-c", "kill -SEGV $$"}, pp::environment_with({}), "", 10s);
  EXPECT_EQ(out.term_signal, SIGSEGV);
  EXPECT_EQ(pp::signal_name(out.term_signal), "SIGSEGV");
}

TEST(Process, MissingExecutableIsAStartError) {
  const auto out = pp::run_process({"/nonexistent/binary"}, pp::environment_with({}), "", 5s);
  EXPECT_FALSE(out.start_error.empty());
  EXPECT_NE(out.start_error.find("/nonexistent/binary"), std::string::npos);
}

TEST(Process, EnvironmentOverridesSetAndUnset) {
  const auto env = pp::environment_with({"PP_TEST_A=1", "PP_TEST_EMPTY=", "HOME"});
  EXPECT_NE(std::find(env.begin(), env.end(), "PP_TEST_A=1"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "PP_TEST_EMPTY="), env.end());
  for (const auto& e : env) EXPECT_NE(e.rfind("HOME=", 0), 0U) << e;
}
