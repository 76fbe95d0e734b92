// `precision-probe summarize` through the real binary: reports the probe wrote, read back into a
// fleet's view; bad input, delivery and exit codes as documented (docs/summarize.md).

#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "binary.hpp"
#include "strings/strings.hpp"

namespace ppt = precision_probe::testing;

namespace {

// The binary started with pipes for stdin, stdout and stderr (the test writes stdin as it likes),
// killed by the kernel if the test program dies first.
struct Child {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
};

Child spawn(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {PP_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::vector<std::string> env = ppt::probe_environment({});
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    std::vector<char*> a, e;
    for (const std::string& x : argv) a.push_back(const_cast<char*>(x.c_str()));
    for (const std::string& x : env) e.push_back(const_cast<char*>(x.c_str()));
    a.push_back(nullptr);
    e.push_back(nullptr);
    ::execve(a[0], a.data(), e.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  return {pid, in[1], out[0], err[0]};
}

struct Ended {
  int status = -1;
  std::string out, err;
  long max_rss_kib = 0;
  bool killed = false;  // still running after the limit: killed (it would have hung)
};

// Closes the child's stdin (if still open), reads its stdout and stderr to their end and reaps it;
// a child still running after `limit_s` is killed and says so.
Ended finish(Child& c, int limit_s) {
  if (c.in >= 0) ::close(c.in);
  c.in = -1;
  Ended e;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  while (c.out >= 0 || c.err >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 && !e.killed) {
      ::kill(c.pid, SIGKILL);
      e.killed = true;
    }
    pollfd p[2] = {{c.out, POLLIN, 0}, {c.err, POLLIN, 0}};
    if (::poll(p, 2, 100) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      int& fd = i == 0 ? c.out : c.err;
      if (fd < 0 || p[i].revents == 0) continue;
      char buffer[65536];
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n > 0) {
        (i == 0 ? e.out : e.err).append(buffer, static_cast<std::size_t>(n));
      } else {
        ::close(fd);
        fd = -1;
      }
    }
  }
  rusage usage{};
  ::wait4(c.pid, &e.status, 0, &usage);
  e.max_rss_kib = usage.ru_maxrss;
  return e;
}

bool write_all(int fd, const std::string& data) {
  for (std::size_t done = 0; done < data.size();) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// `script` run by /bin/sh with the binary as $0, in `dir`.
ppt::Run run_in_shell(const std::string& script) {
  const auto out =
      precision_probe::run_process({"/bin/sh", "-c", script, PP_BINARY}, ppt::probe_environment({}),
                                   "", std::chrono::seconds(60));
  return {out.exit_code, out.out, out.err, out.term_signal};
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* entry = ::readdir(d)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A report of a node with these GPUs, written by the probe into `dir`/`name`.
std::string probe_report(const std::string& dir, const std::string& name, const std::string& gpus) {
  const std::string path = dir + "/" + name;
  const ppt::Run r = ppt::run_probe_binary({"--json", path, "-q"}, ppt::fake_driver_env(gpus));
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  return path;
}

}  // namespace

TEST(Summarize, ReadsTheProbesReportsAndGatesTheFleet) {
  const std::string dir = ppt::make_temp_dir();
  const std::string h200 = probe_report(dir, "h200.json", ppt::kFakeH200);
  const std::string t4 = probe_report(dir, "t4.json", ppt::kFakeT4);
  ppt::Run r = ppt::run_probe_binary({"summarize", h200});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\n  bf16                 1         0            0        0           0\n"),
            std::string::npos)
      << r.out;
  const std::string host = nlohmann::json::parse(ppt::read_all(t4))["host"]["hostname"];
  r = ppt::run_probe_binary({"summarize", "--require", "bf16", dir});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("\n  bf16 " + host + " GPU 0: emulated\n      cc 7.5"), std::string::npos)
      << r.out;
  // Both reports are of one host (the test machine's): the newer counts, the older is named.
  EXPECT_NE(r.out.find("older reports of the same host"), std::string::npos) << r.out;
  r = ppt::run_probe_binary({"summarize", "--format", "json", h200, t4});
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["nodes"], 1);
  EXPECT_EQ(j["exit_code"], r.exit_code);
  EXPECT_EQ(j["superseded"][0]["source"], h200);
}

// A file is counted once, by identity: named twice, by two spellings, through a link, or found
// twice through one directory named twice (or by another path), it is one report.
TEST(Summarize, AFileIsCountedOnceHoweverOftenItIsNamed) {
  const std::string dir = ppt::make_temp_dir();
  const std::string a = probe_report(dir, "a.json", ppt::kFakeH200);
  ASSERT_EQ(::symlink(a.c_str(), (dir + "/link.json").c_str()), 0);
  ASSERT_EQ(::link(a.c_str(), (dir + "/hard.json").c_str()), 0);
  const std::string parent = precision_probe::directory_of(dir);
  const std::string other = parent + "/./" + dir.substr(parent.size() + 1) + "/";
  const std::vector<std::vector<std::string>> cases = {
      {a, a, dir + "/./a.json"},
      {dir, dir},
      {dir, other, a},
      {dir + "/link.json", dir + "/hard.json", a},
  };
  for (const std::vector<std::string>& sources : cases) {
    std::vector<std::string> args = {"summarize", "--format", "json"};
    args.insert(args.end(), sources.begin(), sources.end());
    const ppt::Run r = ppt::run_probe_binary(args);
    EXPECT_EQ(r.exit_code, 0) << sources.front() << ": " << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["reports"], 1) << sources.front() << " " << sources.back();
    EXPECT_EQ(j["gpus"], 1);
    EXPECT_TRUE(j["superseded"].empty()) << j["superseded"];
  }
  // Standard input is counted as given: its line is a report of its own.
  const std::string lines = ppt::make_temp_dir() + "/reports.jsonl";
  std::ofstream(lines) << nlohmann::json::parse(ppt::read_all(a)).dump() << "\n";
  const ppt::Run piped =
      run_in_shell("\"$0\" summarize --format json - '" + a + "' < '" + lines + "'");
  EXPECT_EQ(nlohmann::json::parse(piped.out)["reports"], 2) << piped.err;
}

TEST(Summarize, AnUnreadableOrStaleReportIsExit3AndNamed) {
  const std::string dir = ppt::make_temp_dir();
  const std::string h200 = probe_report(dir, "h200.json", ppt::kFakeH200);
  std::ofstream(dir + "/broken.json") << "{\"schema_version\": 2, \"tool\": ";
  ppt::Run r = ppt::run_probe_binary({"summarize", dir});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.out.find("reports that could not be read\n  " + dir + "/broken.json\n"),
            std::string::npos)
      << r.out;
  nlohmann::json old = nlohmann::json::parse(ppt::read_all(h200));
  old["started_at"] = "2020-01-01T00:00:00.000Z";
  std::ofstream(dir + "/h200.json") << old.dump();
  ::unlink((dir + "/broken.json").c_str());
  r = ppt::run_probe_binary({"summarize", "--max-age", "24h", "--format", "json", dir});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["stale"][0]["node"], old["host"]["hostname"]);
  EXPECT_NE(r.err.find("precision-probe: exit 3: 1 node(s) unknown: 1 stale"), std::string::npos)
      << r.err;
}

TEST(Summarize, BadInputIsOneLineAndExit2AndJsonStaysJson) {
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"summarize"},
       "summarize: no reports given (name files, directories, or - for JSON Lines on stdin)"},
      {{"summarize", "--max-age", "24", "x.json"},
       "--max-age: '24' is not a duration (such as 90m, 24h or 7d)"},
      {{"summarize", "--format", "prometheus", "x.json"},
       "--format: 'prometheus' is not a format of summarize (text, json, markdown)"},
      {{"summarize", "--require", "bf17", "x.json"}, "--require: "},
      {{"summarize", "--bench", "x.json"}, "summarize: unknown option '--bench'"},
      {{"summarize", "-o", "-q", "x.json"}, "-o: '-q' looks like an option, not a FILE"},
      {{"summarize", "-", "-"}, "summarize: - (standard input) is named more than once"},
      {{"summarize", "--max-age", "1h", "--max-age", "2h", "x.json"},
       "--max-age is given more than once"},
      {{"--quick", "summarize", "x.json"}, "summarize comes first, its options after it"},
  };
  for (const Case& c : cases) {
    ppt::Run r = ppt::run_probe_binary(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args.back();
    EXPECT_EQ(r.err.rfind("precision-probe: error: " + c.error, 0), 0U) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const ppt::Run r = ppt::run_probe_binary({"summarize", "--format", "json"});
  EXPECT_EQ(r.exit_code, 2);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["error"]["kind"], "usage");
  EXPECT_EQ(j["exit_code"], 2);
}

TEST(Summarize, WritesItsFileAtomicallyAndAFailedDeliveryIsExit6) {
  const std::string dir = ppt::make_temp_dir();
  const std::string h200 = probe_report(dir, "h200.json", ppt::kFakeH200);
  const std::string out = dir + "/fleet.md";
  ppt::Run r = ppt::run_probe_binary({"summarize", "--format", "markdown", "-o", out, h200});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(ppt::read_all(out).rfind("## precision-probe fleet: ✅ ok\n", 0), 0U)
      << ppt::read_all(out);
  r = ppt::run_probe_binary({"summarize", "-o", "/dev/full", h200});
  EXPECT_EQ(r.exit_code, 6);
  EXPECT_NE(r.err.find("the summary could not be delivered"), std::string::npos) << r.err;
  // As the probe's report: with --format json, stdout still carries a document that says so.
  r = ppt::run_probe_binary({"summarize", "--format", "json", "-o", "/dev/full", h200});
  EXPECT_EQ(r.exit_code, 6);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const nlohmann::json failed = nlohmann::json::parse(r.out);
  EXPECT_EQ(failed["error"]["kind"], "output");
  EXPECT_EQ(failed["exit_code"], 6);
  EXPECT_EQ(failed["exit_reason"].get<std::string>().rfind(
                "the summary could not be delivered: -o: /dev/full", 0),
            0U)
      << failed["exit_reason"];
  r = ppt::run_probe_binary({"summarize", "-q", h200});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  r = ppt::run_probe_binary({"summarize", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--max-age DURATION"), std::string::npos);
  std::istringstream help(r.out);
  for (std::string line; std::getline(help, line);) EXPECT_LE(line.size(), 80U) << line;
}

// Issue 30: `summarize -o n0.json n0.json` replaced its own input with the summary. An output that
// is one of the reports read is the probe's one file named twice: exit 2, found before anything is
// read or written, by any spelling, and the report is left as it was.
TEST(Summarize, AnOutputThatIsOneOfItsReportsIsRefusedAndTheReportKept) {
  const std::string dir = ppt::make_temp_dir();
  const std::string n0 = probe_report(dir, "n0.json", ppt::kFakeH200);
  const std::string before = ppt::read_all(n0);
  ASSERT_EQ(::link(n0.c_str(), (dir + "/n0.link").c_str()), 0);
  const std::vector<std::vector<std::string>> cases = {
      {"summarize", "-o", n0, n0},
      {"summarize", "--format", "json", "--output=" + dir + "/./n0.json", n0},
      {"summarize", "-o", dir + "/n0.link", dir + "/n0.json"},
      {"summarize", "-o", n0, dir},  // found in the directory: a report there is not replaced
  };
  for (const std::vector<std::string>& args : cases) {
    const ppt::Run r = ppt::run_probe_binary(args);
    EXPECT_EQ(r.exit_code, 2) << args[2] << " " << r.err;
    // The report named as the probe names a path (a long one shortened: a long TMPDIR); the one
    // found in a directory by its own path.
    const std::string report = args.back() == dir ? n0 : args.back();
    EXPECT_NE(r.err.find(" and the report " + precision_probe::printable_path(report) + " "),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("name the same file"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(ppt::read_all(n0), before);
    EXPECT_EQ(files_in(dir), (std::vector<std::string>{"n0.json", "n0.link"}));
    if (args[1] == "--format") {
      const nlohmann::json j = nlohmann::json::parse(r.out);
      EXPECT_EQ(j["error"]["kind"], "usage");
      EXPECT_EQ(j["exit_code"], 2);
    }
  }
  // Standard input read from it, and stdout appended to it, are the same file too.
  ppt::Run r = run_in_shell("\"$0\" summarize -o '" + n0 + "' - < '" + n0 + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("-o and the report on standard input name the same file"), std::string::npos)
      << r.err;
  r = run_in_shell("\"$0\" summarize '" + n0 + "' >> '" + n0 + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(ppt::read_all(n0), before);
  // With --format json too: the error document would go to stdout, which is the report.
  r = run_in_shell("\"$0\" summarize --format json '" + n0 + "' >> '" + n0 + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the summary on stdout and the report " +
                       precision_probe::printable_path(n0) + " name the same file"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ppt::read_all(n0), before);
}

// Issue 30: `summarize --format json -o fleet/fleet.json fleet` made every later run see its own
// summary as "not a precision-probe report" (exit 3). A summary among the reports is skipped and
// named; the summary's own output, holding a summary, is replaced.
TEST(Summarize, ItsOwnSummaryInTheDirectoryIsSkippedOnTheNextRun) {
  const std::string dir = ppt::make_temp_dir();
  probe_report(dir, "n0.json", ppt::kFakeH200);
  const std::string fleet = dir + "/fleet.json";
  for (int run = 0; run < 2; ++run) {
    const ppt::Run r = ppt::run_probe_binary({"summarize", "--format", "json", "-o", fleet, dir});
    EXPECT_EQ(r.exit_code, 0) << run << ": " << r.err;
    const nlohmann::json j = nlohmann::json::parse(ppt::read_all(fleet));
    EXPECT_EQ(j["reports"], 1);
    EXPECT_TRUE(j["unreadable"].empty()) << j["unreadable"];
    if (run == 1) {
      ASSERT_EQ(j["skipped"].size(), 1U);
      EXPECT_EQ(j["skipped"][0]["source"], fleet);
      EXPECT_EQ(j["skipped"][0]["why"], "the summary's own output (replaced by this summary)");
    }
  }
  const ppt::Run r = ppt::run_probe_binary({"summarize", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("summaries among the reports (skipped: not reports)\n  " + fleet +
                       "\n      a summary, not a report\n"),
            std::string::npos)
      << r.out;
}

// Issue 30: `summarize FIFO` blocked for ever. A FIFO, named or found in a directory, is opened
// without blocking, seen by fstat and refused by name (its node unknown: exit 3); no writer ever
// comes here, so a summary that waited would be killed at the limit instead.
TEST(Summarize, AFifoIsRefusedByNameAndNeverWaitedFor) {
  const std::string dir = ppt::make_temp_dir();
  const std::string fifo = dir + "/fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  probe_report(dir, "n0.json", ppt::kFakeH200);
  for (const std::string& source : {fifo, dir}) {
    const ppt::Run r = ppt::run_probe_binary({"summarize", source}, {}, 30);
    EXPECT_EQ(r.exit_code, 3) << source << ": " << r.err;
    EXPECT_NE(r.out.find("reports that could not be read\n  " + fifo +
                         "\n      a FIFO, not a regular file: not read"),
              std::string::npos)
        << r.out;
  }
  const ppt::Run r = ppt::run_probe_binary({"summarize", "/dev/null"}, {}, 30);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.out.find("a character device, not a regular file"), std::string::npos) << r.out;
}

namespace {

// An H200's --quick report as one JSON line, as `summarize -` reads them.
std::string compact_quick_report() {
  const ppt::Run r =
      ppt::run_probe_binary({"--quick", "--format", "json"}, ppt::fake_driver_env(ppt::kFakeH200));
  return nlohmann::json::parse(r.out).dump() + "\n";
}

}  // namespace

// Issue 30: summarize finished, wrote and exited 0 under SIGINT and SIGTERM. Now it is the probe's
// behaviour: exit 5 at once, a JSON error document under --format json, nothing written. The
// signal comes while it waits on standard input, which the test holds open with a report read
// (the pipe drained: the binary is past its start, its handlers installed).
TEST(Summarize, ASignalEndsItAtOnceWithExit5AndNothingWritten) {
  const std::string line = compact_quick_report();
  for (const int sig : {SIGTERM, SIGINT}) {
    const std::string dir = ppt::make_temp_dir();
    const std::string out = dir + "/fleet.json";
    const bool json = sig == SIGTERM;
    Child c = spawn(json ? std::vector<std::string>{"summarize", "--format", "json", "-o", out, "-"}
                         : std::vector<std::string>{"summarize", "-"});
    ASSERT_GT(c.pid, 0);
    ASSERT_TRUE(write_all(c.in, line));
    for (int unread = 1; unread > 0;) {  // until the binary has read the line
      ASSERT_EQ(::ioctl(c.in, FIONREAD, &unread), 0);
      if (unread > 0) ::usleep(10000);
    }
    ASSERT_EQ(::kill(c.pid, sig), 0);
    const int in = c.in;
    c.in = -1;  // held open: the end of the input must not be what ends it
    const Ended e = finish(c, 30);
    ::close(in);
    ASSERT_FALSE(e.killed) << "still running 30 s after the signal";
    ASSERT_TRUE(WIFEXITED(e.status)) << "ended by a signal, not an exit";
    EXPECT_EQ(WEXITSTATUS(e.status), 5) << e.err;
    const std::string message = std::string("interrupted by ") +
                                (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                                " while the reports were read: nothing was written";
    EXPECT_EQ(e.err, "precision-probe: error: " + message + "\n");
    EXPECT_EQ(files_in(dir), std::vector<std::string>{});
    if (json) {
      const nlohmann::json j = nlohmann::json::parse(e.out);
      EXPECT_EQ(j["error"]["kind"], "interrupted");
      EXPECT_EQ(j["exit_code"], 5);
      EXPECT_EQ(j["exit_reason"], message);
    } else {
      EXPECT_EQ(e.out, "");
    }
  }
}

// Issue 30: `summarize -` held all of standard input in memory. It reads as it comes: 160 MiB of
// blank lines and an 80 MiB line (over the 64 MiB a report may have: unreadable, dropped as it is
// read) before a report, in well under the 240 MiB the whole stream would take.
TEST(Summarize, StandardInputIsStreamedNotHeldInMemory) {
  const std::string report = compact_quick_report();
  Child c = spawn({"summarize", "--format", "json", "-"});
  ASSERT_GT(c.pid, 0);
  const std::string blank = std::string(1023, ' ') + "\n";
  std::string block;
  for (int i = 0; i < 1024; ++i) block += blank;  // 1 MiB of blank lines
  bool written = true;
  for (int mib = 0; mib < 160 && written; ++mib) written = write_all(c.in, block);
  const std::string long_line(std::size_t{1} << 20, 'x');
  for (int mib = 0; mib < 80 && written; ++mib) written = write_all(c.in, long_line);
  written = written && write_all(c.in, "\n" + report);
  const Ended e = finish(c, 120);
  ASSERT_TRUE(written);
  ASSERT_FALSE(e.killed);
  ASSERT_TRUE(WIFEXITED(e.status));
  EXPECT_EQ(WEXITSTATUS(e.status), 3) << e.err;  // the long line leaves a node unknown
  const nlohmann::json j = nlohmann::json::parse(e.out);
  EXPECT_EQ(j["reports"], 1);
  ASSERT_EQ(j["unreadable"].size(), 1U);
  EXPECT_EQ(j["unreadable"][0]["source"], "-:" + std::to_string(160 * 1024 + 1));
  EXPECT_EQ(j["unreadable"][0]["error"], "larger than 64 MiB: not a report");
  // Holding the whole stream would take 240 MiB and more; AddressSanitizer's shadow memory and
  // quarantine add about 80 MiB to a streamed read (154 MiB measured under ./dev asan).
#if defined(__SANITIZE_ADDRESS__)
  constexpr long kMaxRssKib = 200 * 1024;
#else
  constexpr long kMaxRssKib = 128 * 1024;
#endif
  EXPECT_LT(e.max_rss_kib, kMaxRssKib) << "peak RSS " << e.max_rss_kib / 1024 << " MiB";
}
