// The run's exit reason for Kubernetes (probe/outputs/termination_log.hpp): the line, where it goes
// (never /dev/termination-log itself here: the kubelet's default is given as a path of the test's
// own), how it is written, and what its failures do to the exit code.

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include "binary.hpp"
#include "strings/strings.hpp"
#include "fakes.hpp"
#include "probe/outputs/termination_log.hpp"

namespace pp = precision_probe;
using pp::testing::read_all;

namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::chrono::steady_clock::time_point soon() {
  return std::chrono::steady_clock::now() + std::chrono::seconds(10);
}

// A fake system inside a Kubernetes pod (KUBERNETES_SERVICE_HOST set) or outside one.
pp::testing::FakeSystem pod(bool in_kubernetes) {
  pp::testing::FakeSystem s;
  if (in_kubernetes) s.env["KUBERNETES_SERVICE_HOST"] = "10.96.0.1";
  return s;
}

// Runs `body` in a child process (what changes the process: a mount namespace); its exit status.
int in_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The log prepared for `choice` beside no other output; its note where it was left out.
pp::TerminationLog prepared(const pp::TerminationLogChoice& choice, std::string& note) {
  pp::Expected<pp::TerminationLog> log = pp::TerminationLog::prepare(choice, {}, {}, note);
  EXPECT_TRUE(log) << log.error();
  return log ? std::move(*log) : pp::TerminationLog{};
}

}  // namespace

TEST(TerminationLog, TheLineSaysTheCodeWhatItMeansAndTheReasonOnOneLine) {
  EXPECT_EQ(pp::termination_message(1, "bf16 on GPU 0 is emulated"),
            "precision-probe exit 1 (a required mode is not natively usable): bf16 on GPU 0 is "
            "emulated\n");
  EXPECT_EQ(pp::termination_message(2, "--json: x: is a directory"),
            "precision-probe exit 2 (usage error): --json: x: is a directory\n");
  EXPECT_EQ(pp::termination_message(5, "interrupted by SIGTERM; the report is partial"),
            "precision-probe exit 5 (timed out or interrupted): interrupted by SIGTERM; the report "
            "is partial\n");
  // A driver's message with a newline and an escape stays one line, nothing a terminal obeys.
  const std::string line = pp::termination_message(3, "the driver said\nno\x1b[2J");
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
}

// The kubelet keeps 4 KiB of a message: a longer reason is cut before that, at a character
// boundary (never inside a UTF-8 sequence), and says it was cut.
TEST(TerminationLog, ALongReasonIsCutTo4KiBAtACharacterBoundary) {
  for (std::size_t extra = 0; extra < 4; ++extra) {
    const std::string reason = std::string(extra, 'a') + [] {
      std::string euros;
      for (int i = 0; i < 3000; ++i) euros += "\xe2\x82\xac";  // U+20AC, 3 bytes
      return euros;
    }();
    const std::string line = pp::termination_message(4, reason);
    EXPECT_LE(line.size(), pp::kTerminationMessageBytes);
    EXPECT_GE(line.size(), pp::kTerminationMessageBytes - 3) << "cut short of the room";
    EXPECT_EQ(line.substr(line.size() - 4), "...\n");
    for (std::size_t i = 0; i + 4 < line.size();) {
      const std::size_t n = pp::utf8_length(line, i);
      ASSERT_GT(n, 0U) << "not UTF-8 at byte " << i;
      i += n;
    }
  }
  // One that fits is whole.
  const std::string head = pp::termination_message(4, "");
  const std::string fits(pp::kTerminationMessageBytes - head.size(), 'r');
  EXPECT_EQ(pp::termination_message(4, fits), head.substr(0, head.size() - 1) + fits + "\n");
  EXPECT_EQ(pp::termination_message(4, fits).size(), pp::kTerminationMessageBytes);
  EXPECT_EQ(pp::termination_message(4, fits + "r").size(), pp::kTerminationMessageBytes);
  EXPECT_NE(pp::termination_message(4, fits + "r").find("...\n"), std::string::npos);
}

// --termination-log wins; none is nowhere; without it, the kubelet's file only in a pod
// (KUBERNETES_SERVICE_HOST) and only where it is a regular file there to write: never made.
TEST(TerminationLog, TheDefaultIsTheKubeletsFileInAPodWhereItIsThereToWrite) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string file = dir + "/termination-log";
  write(file, "");
  using Choice = pp::TerminationLogChoice;
  auto choose = [&](const std::optional<std::string>& flag, bool in_kubernetes,
                    const std::string& path) {
    return pp::choose_termination_log(flag, pod(in_kubernetes), path);
  };
  auto is = [](const Choice& c, const std::string& path, bool named) {
    return c.path == path && c.named == named;
  };
  EXPECT_TRUE(is(choose(std::nullopt, true, file), file, false));
  EXPECT_TRUE(is(choose(std::nullopt, false, file), "", false));
  pp::testing::FakeSystem empty = pod(true);
  empty.env["KUBERNETES_SERVICE_HOST"] = "";
  EXPECT_TRUE(is(pp::choose_termination_log(std::nullopt, empty, file), "", false));
  EXPECT_TRUE(is(choose(std::string("none"), true, file), "", false));
  EXPECT_TRUE(is(choose(dir + "/mine", true, file), dir + "/mine", true));
  EXPECT_TRUE(is(choose(dir + "/mine", false, file), dir + "/mine", true));
  // Not there: not chosen, not made.
  EXPECT_TRUE(is(choose(std::nullopt, true, dir + "/absent"), "", false));
  struct stat st {};
  EXPECT_NE(::stat((dir + "/absent").c_str(), &st), 0);
  // Not a regular file.
  EXPECT_TRUE(is(choose(std::nullopt, true, dir), "", false));
}

// A kubelet's file this process may not write (a read-only mount of it): not chosen.
TEST(TerminationLog, AReadOnlyKubeletsFileIsNotChosen) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string file = dir + "/termination-log";
  write(file, "");
  const int status = in_child([&] {
    if (::unshare(CLONE_NEWNS) != 0) return 77;
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 77;
    if (::mount(file.c_str(), file.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, file.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
      return 77;
    }
    const pp::TerminationLogChoice c = pp::choose_termination_log(std::nullopt, pod(true), file);
    return c.path.empty() ? 0 : 1;
  });
  if (status == 77) GTEST_SKIP() << "a private mount namespace needs root (CAP_SYS_ADMIN)";
  EXPECT_EQ(status, 0) << "a read-only file was chosen";
}

// The kubelet bind-mounts the file on its own: it is written in place (no rename can replace a
// mount point) and cut to the line's length.
TEST(TerminationLog, TheKubeletsFileIsWrittenInPlace) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string host = dir + "/host-file";
  const std::string file = dir + "/termination-log";
  write(host, std::string(10000, 'x'));
  write(file, "");
  const int status = in_child([&] {
    if (::unshare(CLONE_NEWNS) != 0) return 77;
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 77;
    if (::mount(host.c_str(), file.c_str(), nullptr, MS_BIND, nullptr) != 0) return 77;
    const pp::TerminationLogChoice c = pp::choose_termination_log(std::nullopt, pod(true), file);
    if (c.path != file) return 1;
    std::string note;
    pp::TerminationLog log = prepared(c, note);
    if (!log.active() || !note.empty()) return 2;
    const pp::TerminationLog::Settled s = log.finish(1, "bf16 on GPU 0 is emulated", soon());
    return s.code == 1 && s.said.empty() ? 0 : 3;
  });
  if (status == 77) GTEST_SKIP() << "a private mount namespace needs root (CAP_SYS_ADMIN)";
  ASSERT_EQ(status, 0) << "1: not chosen, 2: not prepared, 3: not written";
  EXPECT_EQ(read_all(host), pp::termination_message(1, "bf16 on GPU 0 is emulated"));
  EXPECT_EQ(read_all(file), "");  // the mount was the child's alone
}

// A named log that cannot be written fails the run as an undelivered report does (6 replaces 0
// and 1, the others stand); the default's failure changes no exit code, a note says it.
TEST(TerminationLog, ANamedLogThatFailsIsExit6AndTheDefaultsOnlyANote) {
  for (const bool named : {true, false}) {
    for (const int code : {0, 1, 3, 4, 5}) {
      std::string note;
      pp::TerminationLog log = prepared({"/dev/full", named}, note);
      ASSERT_TRUE(log.active());
      const pp::TerminationLog::Settled s = log.finish(code, "the reason", soon());
      EXPECT_NE(s.said.find("/dev/full: No space left on device"), std::string::npos) << s.said;
      if (!named) {
        EXPECT_EQ(s.code, code);
        EXPECT_EQ(s.said.rfind("precision-probe: note: the exit reason was not written", 0), 0U);
        continue;
      }
      EXPECT_EQ(s.code, code <= 1 ? 6 : code);
      EXPECT_EQ(s.said.rfind("precision-probe: error: the exit reason could not be written", 0),
                0U);
      EXPECT_EQ(s.said.find("(exit ") != std::string::npos, code > 1) << s.said;
    }
  }
}

// A target the outputs' rules refuse (a directory, one file named twice): the named log is a
// usage error, the default is left out with a note, and nothing is written.
TEST(TerminationLog, WhatTheOutputsRefuseIsAUsageErrorOrForTheDefaultANote) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string report = dir + "/r.json";
  write(report, "the last report");
  for (const bool named : {true, false}) {
    for (const std::string& path : {dir, report}) {
      std::string note;
      const pp::Expected<pp::TerminationLog> log =
          pp::TerminationLog::prepare({path, named}, {{report, "--json"}}, {}, note);
      const std::string said = log ? note : log.error();
      EXPECT_EQ(static_cast<bool>(log), !named) << said;
      if (log) {
        EXPECT_FALSE(log->active());
      }
      EXPECT_EQ(note.empty(), named) << note;
      EXPECT_NE(said.find(path == dir ? "is a directory" : "--json and "), std::string::npos)
          << said;
    }
  }
  EXPECT_EQ(read_all(report), "the last report");
}

// The line replaces what an earlier run left in a regular file (--termination-log FILE), and is
// written once.
TEST(TerminationLog, ANamedFileGetsTheLineOnce) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string file = dir + "/reason";
  write(file, "an earlier run's reason, longer than this one's\n");
  std::string note;
  pp::TerminationLog log = prepared({file, true}, note);
  EXPECT_EQ(log.label(), "--termination-log " + pp::printable_path(file));
  EXPECT_EQ(log.finish(0, "every requirement met natively; nothing failed", soon()).code, 0);
  EXPECT_EQ(read_all(file),
            pp::termination_message(0, "every requirement met natively; nothing failed"));
  EXPECT_FALSE(log.active());
  EXPECT_TRUE(log.write(4, "again", soon()));
  EXPECT_EQ(read_all(file),
            pp::termination_message(0, "every requirement met natively; nothing failed"));
}
