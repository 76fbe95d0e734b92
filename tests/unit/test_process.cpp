#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstring>

#include "process/process.hpp"

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
  // Every signal Linux names, as glibc's sigabbrev_np (2.32) names it, without it: the
  // distribution's binaries need glibc 2.28 at most.
  for (int signal = 1; signal < SIGRTMIN; ++signal) {
    const char* abbreviation = ::sigabbrev_np(signal);
    if (abbreviation == nullptr) continue;
    EXPECT_EQ(pp::signal_name(signal), "SIG" + std::string(abbreviation)) << signal;
  }
  EXPECT_EQ(pp::signal_name(SIGRTMIN + 1), "signal " + std::to_string(SIGRTMIN + 1));
  EXPECT_EQ(pp::signal_name(0), "signal 0");
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

TEST(Process, AnExitIsSeenWhileAnOrphanHoldsThePipes) {
  // The child exits at once; what it left behind holds stdout for 30 s. The exit is what counts,
  // and what it left is ended with it.
  const auto start = std::chrono::steady_clock::now();
  const auto out = pp::run_process({"/bin/sh", "-c", "sleep 30 & echo said; exit 7"},
                                   pp::environment_with({}), "", 20s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(out.exit_code, 7);
  EXPECT_EQ(out.out, "said\n");
}

TEST(Process, WaitingIsBoundedAndTheStateIsReadable) {
  // A child that does not exit within the limit is not waited for beyond it; its state can be
  // named (a worker stuck in the kernel shows 'D').
  pp::ChildProcess child;
  const auto started = child.start({"/bin/sleep", "30"}, pp::environment_with({}), "");
  ASSERT_TRUE(started) << started.error();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(child.wait_for(200ms));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(pp::process_state(child.pid()), 'S');
  child.kill_group();
  EXPECT_TRUE(child.wait_for(5s));
  EXPECT_TRUE(WIFSIGNALED(child.status()));
  EXPECT_EQ(pp::process_state(999999999), '?');
}

TEST(LineBuffer, CutsLinesAcrossReadsAndDropsALineTooLongWhole) {
  pp::LineBuffer lines(8);
  lines.append("ab");
  EXPECT_FALSE(lines.next().has_value());
  lines.append("c\nde\n\nf");
  EXPECT_EQ(lines.next(), "abc");
  EXPECT_EQ(lines.next(), "de");
  EXPECT_EQ(lines.next(), "");
  EXPECT_FALSE(lines.next().has_value());
  EXPECT_EQ(lines.pending(), 1U);
  // "f" then 9 more bytes without a newline: past the limit, dropped, and so is its rest.
  lines.append("123456789");
  EXPECT_EQ(lines.dropped(), 1U);
  EXPECT_EQ(lines.pending(), 0U);
  lines.append("still the long one\nok\n");
  EXPECT_EQ(lines.next(), "ok");
  // A long line that came whole in one read is dropped too.
  lines.append("0123456789abc\nlast\n");
  EXPECT_EQ(lines.next(), "last");
  EXPECT_EQ(lines.dropped(), 2U);
}

TEST(Process, OneLoopReadsSeveralChildrenAndSeesEachExit) {
  // Two children, one loop: each one's lines come with its index, each one's end and exit too:
  // the first closes its streams before it exits (its exit is still looked for), the second left
  // an orphan holding its stdout (its exit is seen all the same).
  pp::ChildProcess first;
  pp::ChildProcess second;
  ASSERT_TRUE(
      first.start({"/bin/sh", "-c", "echo one; echo e1 >&2; exec >&- 2>&-; sleep 0.3; exit 0"},
                  pp::environment_with({}), ""));
  ASSERT_TRUE(
      second.start({"/bin/sh", "-c", "sleep 30 & echo two; exit 0"}, pp::environment_with({}), ""));
  std::vector<pp::Watched> watched = {{&first, true, true}, {&second, true, true}};
  std::string out[2];
  std::string err[2];
  bool exited[2] = {false, false};
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!(exited[0] && exited[1]) && std::chrono::steady_clock::now() < deadline) {
    for (const pp::ChildOutput& got : pp::read_children(watched, 100ms)) {
      ASSERT_LT(got.index, 2U);
      out[got.index] += got.out;
      err[got.index] += got.err;
      exited[got.index] = exited[got.index] || got.exited;
    }
  }
  EXPECT_TRUE(exited[0] && exited[1]);
  // The first child's pipes reached their end (possibly after its exit was seen): drained.
  for (int i = 0; i < 20 && (watched[0].out || watched[0].err); ++i) {
    for (const pp::ChildOutput& got : pp::read_children(watched, 50ms)) {
      out[got.index] += got.out;
      err[got.index] += got.err;
    }
  }
  EXPECT_EQ(out[0], "one\n");
  EXPECT_EQ(err[0], "e1\n");
  EXPECT_FALSE(watched[0].out);
  EXPECT_EQ(out[1].substr(0, 4), "two\n");
  second.kill_group();
  EXPECT_TRUE(second.wait_for(5s));
  EXPECT_TRUE(first.wait_for(5s));
}
