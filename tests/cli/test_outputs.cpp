// The binary's outputs under hostile conditions: device nodes, FIFOs, links, a full disk, a
// closed or broken stdout, one file named twice, signals during the run. A report is delivered
// whole or the exit code says it was not, and nothing that is not a regular report file is ever
// replaced. Device-node cases run in a private mount namespace with a tmpfs /dev (unshare, as
// root; they skip, saying so, elsewhere).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "binary.hpp"
#include "strings/strings.hpp"

namespace pp = precision_probe;
using nlohmann::json;
using pp::testing::read_all;
using pp::testing::run_probe_binary;

namespace {

// Runs the binary through `sh -c SCRIPT`, where "$@" is the binary and the fake engine's
// environment is set as run_probe_binary sets it.
pp::testing::Run run_in_shell(const std::string& script, std::vector<std::string> env = {}) {
  const pp::ProcessOutput out =
      pp::run_process({"/bin/sh", "-c", script, "sh", PP_BINARY},
                      pp::testing::probe_environment(env), "", std::chrono::seconds(60));
  return {out.exit_code, out.out, out.err, out.term_signal};
}

std::vector<std::string> files_in(const std::string& dir) {
  const auto listing = pp::run_process({"/bin/ls", "-A", dir}, pp::environment_with({}), "",
                                       std::chrono::seconds(5));
  std::vector<std::string> names;
  std::string name;
  for (char c : listing.out) {
    if (c != '\n') {
      name += c;
      continue;
    }
    names.push_back(name);
    name.clear();
  }
  return names;
}

bool private_dev_works() {
  const auto r = run_in_shell(
      "unshare -m sh -c 'mount -t tmpfs tmpfs /dev && mknod /dev/null c 1 3' 2>/dev/null");
  return r.exit_code == 0;
}

}  // namespace

TEST(Outputs, DeviceNodesAreWrittenThroughNeverReplaced) {
  if (!private_dev_works()) GTEST_SKIP() << "needs root for unshare -m and mknod";
  // In a private /dev: -o /dev/null keeps /dev/null a character device and exits 0; /dev/full
  // fails the delivery (exit 6) and stays a device; /dev/stdout is stdout.
  const auto r = run_in_shell(
      "unshare -m sh -c '"
      "mount -t tmpfs tmpfs /dev && mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/full c 1 7 "
      "&& ln -s /proc/self/fd/1 /dev/stdout || exit 90; "
      "\"$0\" --device cpu -o /dev/null; echo null=$? $(stat -c %F /dev/null); "
      "\"$0\" --device cpu -o /dev/full 2>&1; echo full=$? $(stat -c %F /dev/full); "
      "\"$0\" --device cpu -o /dev/stdout --format json | head -c 1; echo; echo stdout=$?"
      "' \"$@\"");
  ASSERT_NE(r.exit_code, 90) << r.err;
  EXPECT_NE(r.out.find("null=0 character special file"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("full=6 character special file"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("-o: /dev/full: No space left on device"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{\nstdout=0"), std::string::npos) << r.out;
}

TEST(Outputs, AFifoWithoutAReaderIsAUsageErrorNotAHang) {
  const std::string dir = pp::testing::make_temp_dir();
  ASSERT_EQ(::mkfifo((dir + "/pipe").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_probe_binary({"--device", "cpu", "-o", dir + "/pipe", "--format", "json"},
                                  {"FAKE_ENGINE=hang"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-o: " + precision_probe::printable_path(dir + "/pipe") +
                       ": no process is reading the FIFO"),
            std::string::npos)
      << r.err;
  EXPECT_NO_THROW(json::parse(r.out));  // the error as a JSON document on stdout
  // With a reader, the report goes through the FIFO.
  const auto through = run_in_shell("cat \"" + dir + "/pipe\" > \"" + dir +
                                    "/got\" & sleep 0.3; \"$@\" --device cpu -o \"" + dir +
                                    "/pipe\"; rc=$?; wait; exit $rc");
  EXPECT_EQ(through.exit_code, 0) << through.err;
  EXPECT_NE(read_all(dir + "/got").find("exit 0:"), std::string::npos);
}

TEST(Outputs, ALinkIsFollowedToTheFileItNames) {
  const std::string dir = pp::testing::make_temp_dir();
  std::ofstream(dir + "/real.json") << "old";
  ASSERT_EQ(::symlink("real.json", (dir + "/link.json").c_str()), 0);
  const auto r = run_probe_binary({"--device", "cpu", "--json", dir + "/link.json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::lstat((dir + "/link.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_NO_THROW(json::parse(read_all(dir + "/real.json")));
}

TEST(Outputs, AStdoutThatFailsNeverGivesExitZero) {
  // A full disk, a closed pipe, a closed stdout.
  const auto full = run_in_shell("\"$@\" --device cpu > /dev/full");
  EXPECT_EQ(full.exit_code, 6) << full.err;
  EXPECT_NE(full.err.find("the report on stdout: -: No space left on device"), std::string::npos)
      << full.err;
  const auto closed = run_in_shell("\"$@\" --device cpu >&-");
  EXPECT_EQ(closed.exit_code, 2) << closed.err;
  EXPECT_NE(closed.err.find("stdout is closed"), std::string::npos) << closed.err;
  // With -q nothing goes to stdout, so a closed stdout is fine.
  EXPECT_EQ(run_in_shell("\"$@\" --device cpu -q >&-").exit_code, 0);
}

TEST(Outputs, AClosedPipeIsExitSixWithAMessage) {
  // The reader of stdout is gone before the report is written (SIGPIPE is ignored, EPIPE seen).
  const auto r =
      run_in_shell("{ \"$@\" --device cpu; echo rc=$? >&2; } | true", {"FAKE_ENGINE=slow"});
  EXPECT_NE(r.err.find("rc=6"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Broken pipe"), std::string::npos) << r.err;
}

TEST(Outputs, ASignalWhileTheReaderDoesNotReadEndsTheWait) {
  // A report larger than a pipe holds (40 GPUs), a reader that waits 4 s: SIGTERM at 1 s ends the
  // blocked delivery at once, exit 5, not when the reader wakes up (or at --timeout).
  std::string gpus;
  for (int i = 0; i < 40; ++i) gpus += std::string(i ? ";" : "") + pp::testing::kFakeH200;
  std::vector<std::string> env = pp::testing::fake_driver_env(gpus);
  const auto r = run_in_shell(
      "start=$(date +%s%N); { \"$@\" --quick --format json --timeout 30 & pid=$!; sleep 1; "
      "kill -TERM $pid; wait $pid; echo rc=$? >&2; "
      "echo ms=$(( ($(date +%s%N) - start) / 1000000 )) >&2; } | { sleep 4; cat >/dev/null; }",
      env);
  EXPECT_NE(r.err.find("rc=5"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("while the report was being delivered"), std::string::npos) << r.err;
  const std::size_t at = r.err.find("ms=");
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_LT(std::stoi(r.err.substr(at + 3)), 3000) << r.err;
}

TEST(Outputs, OneFileNamedTwiceIsRefusedBeforeAnyCheckRuns) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string log = dir + "/engine.log";
  const auto r =
      run_probe_binary({"--device", "cpu", "-o", dir + "/r.json", "--json", dir + "/./r.json"},
                       {"FAKE_ENGINE_LOG=" + log});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-o and --json name the same file"), std::string::npos) << r.err;
  EXPECT_EQ(read_all(log), "") << "a check ran";
  const auto stdout_twice = run_probe_binary({"--device", "cpu", "--output-as", "json:-"});
  EXPECT_EQ(stdout_twice.exit_code, 2);
  EXPECT_NE(stdout_twice.err.find("the report on stdout and --output-as name the same file"),
            std::string::npos)
      << stdout_twice.err;
  // A 250-byte file name is a valid file name.
  const std::string long_name = dir + "/" + std::string(250, 'x');
  EXPECT_EQ(run_probe_binary({"--device", "cpu", "-o", long_name}).exit_code, 0);
  EXPECT_NE(read_all(long_name).find("exit 0:"), std::string::npos);
}

// `--json r.json >> r.json`: the usage error's JSON document would go to stdout, which is r.json.
TEST(Outputs, AFileNamedTwiceWithStdoutIsLeftAsItWas) {
  const std::string dir = pp::testing::make_temp_dir();
  std::ofstream(dir + "/r.json") << "{\"old\": true}\n";
  const auto r = run_in_shell("\"$@\" --quick --format json --json \"" + dir + "/r.json\" >> \"" +
                              dir + "/r.json\"");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("name the same file"), std::string::npos) << r.err;
  EXPECT_EQ(read_all(dir + "/r.json"), "{\"old\": true}\n");
  // Stdout elsewhere still carries the error document.
  const auto other = run_probe_binary({"--quick", "--format", "json", "--json", dir + "/r.json",
                                       "--output-as", "json:" + dir + "/./r.json"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_EQ(json::parse(other.out).at("exit_code"), 2);
}

// A character device is written at once, without waiting for a poll() some never answer
// (/dev/random's on Linux 6): opened without blocking, written first, waited on only when full.
TEST(Outputs, ACharacterDeviceIsWrittenWithoutWaiting) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_probe_binary({"--quick", "--timeout", "20", "-o", "/dev/random"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(Outputs, AFileSizeLimitFailsTheDeliveryAndLeavesTheOldFile) {
  const std::string dir = pp::testing::make_temp_dir();
  std::ofstream(dir + "/r.json") << "old";
  const auto r = run_in_shell("ulimit -f 1; \"$@\" --device cpu --json \"" + dir +
                              "/r.json\" --bench --bench-size 16 -q");
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
  EXPECT_EQ(read_all(dir + "/r.json"), "old");
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"r.json"});
}

TEST(Outputs, SignalsNeverLeaveATemporaryFile) {
  const std::string dir = pp::testing::make_temp_dir();
  for (int sig : {SIGTERM, SIGHUP, SIGQUIT, SIGKILL}) {
    std::ofstream(dir + "/r.json") << "old";
    const std::string pids = pp::testing::make_temp_dir() + "/pids";
    pp::ChildProcess child;
    const auto started = child.start(
        {PP_BINARY, "--device", "cpu", "--json", dir + "/r.json", "-q"},
        pp::testing::probe_environment({"PRECISION_PROBE_LIBCUDA=libcuda-no.so.1",
                                        "PRECISION_PROBE_LIBNVML=libnvml-no.so.1",
                                        "FAKE_ENGINE=hang", "FAKE_ENGINE_PIDS=" + pids}),
        "");
    ASSERT_TRUE(started) << started.error();
    // The signal comes once the worker runs (a fixed wait was too short for a loaded sanitizer
    // build), then half a second more so that the probe waits for it.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (pp::testing::pids_in(pids).empty() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_EQ(::kill(child.pid(), sig), 0);
    const int status = child.wait();
    // Its hung worker goes with it, SIGKILL too (the worker's parent-death signal).
    EXPECT_FALSE(pp::testing::pids_in(pids).empty()) << "signal " << sig;
    for (const std::string& pid : pp::testing::pids_in(pids)) {
      EXPECT_TRUE(pp::testing::gone_soon(pid))
          << "worker " << pid << " outlived the probe, signal " << sig;
      if (pp::testing::alive(pid)) ::kill(std::stoi(pid), SIGKILL);
    }
    if (sig == SIGKILL) {
      EXPECT_EQ(read_all(dir + "/r.json"), "old");
    } else {
      ASSERT_TRUE(WIFEXITED(status)) << "signal " << sig << " ended it without a report";
      EXPECT_EQ(WEXITSTATUS(status), 5) << sig;
      EXPECT_EQ(json::parse(read_all(dir + "/r.json")).at("exit_code"), 5) << sig;
    }
    EXPECT_EQ(files_in(dir), std::vector<std::string>{"r.json"}) << "signal " << sig;
  }
}

TEST(Outputs, EveryNonZeroExitWithoutATextReportSaysSoOnStderr) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--format", "markdown"},
                                               {"--format", "prometheus"},
                                               {"--format", "json"},
                                               {"-q"}}) {
    std::vector<std::string> full = {"--device", "cpu", "--require", "tf32"};
    full.insert(full.end(), args.begin(), args.end());
    const auto r = run_probe_binary(full);
    EXPECT_EQ(r.exit_code, 1) << args[0];
    EXPECT_NE(r.err.find("precision-probe: exit 1: tf32 on CPU is unsupported"), std::string::npos)
        << args[0] << ": " << r.err;
  }
}

TEST(Outputs, TraceIsOnlyOnWhenAskedFor) {
  for (const char* value : {"0", ""}) {
    const auto r = run_probe_binary({"--device", "cpu", "-q"},
                                    {std::string("PRECISION_PROBE_TRACE=") + value});
    EXPECT_EQ(r.err.find("trace:"), std::string::npos) << "'" << value << "': " << r.err;
  }
  const auto on = run_probe_binary({"--device", "cpu", "-q"}, {"PRECISION_PROBE_TRACE=1"});
  EXPECT_NE(on.err.find("trace:"), std::string::npos);
}

TEST(Outputs, ArchGatesOnItsArchitectureWhenAsked) {
  const std::string cuda = pp::testing::fake_stack("cuda");
  const auto t4 = run_probe_binary({"arch", "7.5", "--require", "bf16"}, {cuda});
  EXPECT_EQ(t4.exit_code, 1) << t4.out;
  EXPECT_NE(t4.out.find("exit 1: bf16 on cc 7.5 is not_tested: the hardware is emulated"),
            std::string::npos)
      << t4.out;
  EXPECT_EQ(run_probe_binary({"arch", "9.0", "--require", "bf16"}, {cuda}).exit_code, 0);
  const auto cpu_only = run_probe_binary({"arch", "9.0", "--require", "bf16", "--format", "json"},
                                         {pp::testing::fake_stack("cpu")});
  EXPECT_EQ(cpu_only.exit_code, 3);
  EXPECT_NE(cpu_only.err.find("precision-probe: exit 3:"), std::string::npos) << cpu_only.err;
  EXPECT_EQ(run_probe_binary({"arch", "9.0", "--device", "0"}).exit_code, 2);
}

TEST(Outputs, QuietMeansNothingOnStdoutInEveryCase) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-q", "--format", "json", "--require", "fp7"},
        {"-q", "--version"},
        {"-q", "--help"},
        {"-q", "--device", "cpu"},
        {"-q", "arch", "9.0", "--format", "json"}}) {
    const auto r = run_probe_binary(args);
    EXPECT_EQ(r.out, "") << args[1];
  }
}

TEST(Outputs, ControlCharactersFromOutsideNeverReachTheTerminal) {
  // A library name with an escape sequence, a newline and a bell, as an attacker could set it.
  const auto r =
      run_probe_binary({"--require", "bf16", "-q"},
                       {"PRECISION_PROBE_LIBCUDA=x\x1b]0;pwn\n\a", "CUDA_VISIBLE_DEVICES"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const auto text = run_probe_binary({}, {"PRECISION_PROBE_LIBCUDA=x\x1b[31m\xc2\x9b"});
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.out.find("\xc2\x9b"), std::string::npos) << "a C1 control passed";
  EXPECT_NE(text.out.find("\\x1b[31m\\u009b"), std::string::npos) << text.out;
}

TEST(Outputs, AStalledReaderIsBoundedAndLeavesNoTemporary) {
  // stdout's reader never reads: the run ends within its time (at least 5 s for the delivery),
  // exit 6, the files of the run in place and no temporary left.
  const std::string dir = pp::testing::make_temp_dir();
  std::ofstream(dir + "/a.json") << "old";
  const std::string took = pp::testing::make_temp_dir() + "/ms";
  const auto r = run_in_shell(
      "( head -c 65536 /dev/zero; s=$(date +%s%N); \"$@\" --device cpu --timeout 1 --json \"" +
      dir + "/a.json\"; echo $(( ($(date +%s%N) - s) / 1000000 )) > " + took + " ) | sleep 8");
  ASSERT_FALSE(read_all(took).empty()) << r.err;
  EXPECT_LT(std::stoi(read_all(took)), 7500) << r.err;
  EXPECT_NE(r.err.find("the reader stopped reading"), std::string::npos) << r.err;
  EXPECT_NO_THROW(json::parse(read_all(dir + "/a.json")));
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"a.json"});
}

TEST(Outputs, MessagesSayWhatToTypeAndRoundNothing) {
  const auto o = run_probe_binary({"-o", "-q"});
  EXPECT_NE(o.err.find("(write --output=./-q if you mean it)"), std::string::npos) << o.err;
  const auto quiet = run_probe_binary({"--quiet", "--json", "-"});
  EXPECT_NE(quiet.err.find("--quiet keeps stdout silent, but --json - writes to it"),
            std::string::npos)
      << quiet.err;
  EXPECT_EQ(run_probe_binary({"-q", "-o", "-"}).exit_code, 2);
  const auto half = run_probe_binary({"--device", "cpu", "--timeout", "0.5", "--format", "json"},
                                     {"FAKE_ENGINE=hang"});
  EXPECT_NE(half.out.find("the run's --timeout of 0.5 s ran out"), std::string::npos) << half.out;
  const auto help = run_in_shell("\"$@\" --help >&-");
  EXPECT_EQ(help.exit_code, 2) << help.err;
  EXPECT_NE(help.err.find("stdout is closed"), std::string::npos);
}

namespace {

// The binary run as `uid` (group the same) through setpriv, or as this user where `uid` is this
// user; the image's PyTorch none (the outputs are what these tests look at).
pp::testing::Run run_as(uid_t uid, const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  if (uid != ::geteuid()) {
    argv = {"/usr/bin/setpriv", "--reuid=" + std::to_string(uid), "--regid=" + std::to_string(uid),
            "--clear-groups"};
  }
  argv.emplace_back(PP_BINARY);
  argv.insert(argv.end(), args.begin(), args.end());
  const pp::ProcessOutput out =
      pp::run_process(argv, pp::testing::probe_environment({"PRECISION_PROBE_TORCH=none"}), "",
                      std::chrono::seconds(60));
  return {out.exit_code, out.out, out.err, out.term_signal};
}

// The binary run as another user: `nobody`, through setpriv, where this test runs as root; as
// this user otherwise.
pp::testing::Run run_as_nobody(const std::vector<std::string>& args) {
  return run_as(::geteuid() == 0 ? 65534 : ::geteuid(), args);
}

struct stat stat_of(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st;
}

}  // namespace

// A report replaces only what the user may write, keeping its mode (and, as root, its owner):
// another user's 0644 file and the user's own 0444 file are refused, exit 2, left as they were.
TEST(Outputs, AFileTheUserMayNotWriteIsRefusedAndAWritableOneKeepsItsMode) {
  const bool root = ::geteuid() == 0;
  if (root && ::access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "no /usr/bin/setpriv (util-linux) to run the probe as another user";
  }
  const std::string dir = pp::testing::make_temp_dir();
  ::chmod(dir.c_str(), 0777);  // writable by everyone, not sticky: only the file's mode protects it
  const uid_t user = root ? 65534 : ::geteuid();
  const gid_t group = root ? 65534 : ::getegid();
  auto make = [&](const std::string& name, mode_t mode, bool theirs) {
    const std::string path = dir + "/" + name;
    std::ofstream(path) << "old";
    if (theirs) {
      EXPECT_EQ(::chown(path.c_str(), user, group), 0) << path;
    }
    ::chmod(path.c_str(), mode);
    return path;
  };
  const std::string own_readonly = make("own-0444.json", 0444, true);
  const std::string own_writable = make("own-0640.json", 0640, true);
  std::vector<std::string> refused = {own_readonly};
  if (root) refused.push_back(make("root-0644.json", 0644, false));  // owned by root
  for (const std::string& path : refused) {
    const struct stat before = stat_of(path);
    const auto r = run_as_nobody({"--quick", "--json", path});
    EXPECT_EQ(r.exit_code, 2) << path << ": " << r.err;
    EXPECT_NE(r.err.find("cannot replace it: you may not write it (mode 0"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
    EXPECT_EQ(read_all(path), "old") << path;
    EXPECT_EQ(stat_of(path).st_uid, before.st_uid) << path;
    EXPECT_EQ(stat_of(path).st_mode, before.st_mode) << path;
    // Under --format json, stdout is still one JSON document saying so.
    const auto j = run_as_nobody({"--quick", "--format", "json", "--json", path});
    EXPECT_EQ(j.exit_code, 2);
    EXPECT_NE(json::parse(j.out).at("error").at("message").get<std::string>().find(
                  "you may not write it"),
              std::string::npos)
        << j.out;
  }
  const auto ok = run_as_nobody({"--quick", "--json", own_writable});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(json::parse(read_all(own_writable)).at("run").at("quick"), true);
  EXPECT_EQ(stat_of(own_writable).st_mode & 07777, 0640U);
  EXPECT_EQ(stat_of(own_writable).st_uid, user);
  EXPECT_EQ(files_in(dir).size(), refused.size() + 1) << "no temporary left";
  if (!root) GTEST_SKIP() << "another user's file needs root to make: only the user's own ran";
}

namespace {

// Every option that writes a report to a file, the probe's, arch's and summarize's, given the file
// and (for summarize) a report to read.
std::vector<std::vector<std::string>> every_output_option(const std::string& file,
                                                          const std::string& report) {
  const std::vector<std::string> probe = {"--quick", "-q"};
  std::vector<std::vector<std::string>> options;
  for (const char* flag : {"-o", "--json", "--markdown", "--prom", "--text", "--nfd"}) {
    options.push_back({"--quick", "-q", flag, file});
  }
  options.push_back({"--quick", "-q", "--output-as", "json:" + file});
  options.push_back({"arch", "9.0", "-q", "-o", file});
  options.push_back({"summarize", report, "-q", "-o", file});
  return options;
}

// A directory for the sticky-directory tests: `base` (0755, root's) holding a report for
// summarize to read, `pub` (a sticky world-writable directory like /tmp, owned by `pub_owner`),
// and a home directory for each user, owned by that user.
struct StickyScene {
  std::string base, report, pub;
  std::string home(uid_t uid) const { return base + "/home-" + std::to_string(uid); }
};

StickyScene sticky_scene(uid_t pub_owner, const std::vector<uid_t>& users) {
  StickyScene s;
  s.base = pp::testing::make_temp_dir();
  ::chmod(s.base.c_str(), 0755);
  s.report = s.base + "/in.json";
  EXPECT_EQ(pp::testing::run_probe_binary({"--quick", "-q", "--json", s.report}).exit_code, 0);
  ::chmod(s.report.c_str(), 0644);
  s.pub = s.base + "/pub";
  EXPECT_EQ(::mkdir(s.pub.c_str(), 0700), 0);
  EXPECT_EQ(::chown(s.pub.c_str(), pub_owner, pub_owner), 0);
  EXPECT_EQ(::chmod(s.pub.c_str(), 01777), 0);
  for (uid_t uid : users) {
    EXPECT_EQ(::mkdir(s.home(uid).c_str(), 0755), 0);
    EXPECT_EQ(::chown(s.home(uid).c_str(), uid, uid), 0);
  }
  return s;
}

// A symbolic link at `link` to `target`, owned by `owner` (as if `owner` had made it).
void plant_link(const std::string& target, const std::string& link, uid_t owner) {
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0) << link;
  ASSERT_EQ(::lchown(link.c_str(), owner, owner), 0) << link;
}

bool can_run_as_others() { return ::geteuid() == 0 && ::access("/usr/bin/setpriv", X_OK) == 0; }

}  // namespace

// Issue 38: in a sticky world-writable directory (/tmp), another user's link is never followed,
// by any output option, whoever runs the probe: root (the link names a file of root's) or another
// user (the link names that user's own file); a dangling one creates nothing. Exit 2 before the
// run, one line naming the link, the file it names as it was, nothing made in either directory.
TEST(Outputs, AnotherUsersLinkInAStickyDirectoryIsNeverFollowed) {
  if (!can_run_as_others()) {
    GTEST_SKIP() << "needs root and /usr/bin/setpriv (util-linux): links of other users, and the "
                    "probe run as another user";
  }
  // Who runs the probe, and who planted the links in the sticky directory (owned by root).
  const std::vector<std::pair<uid_t, uid_t>> runs = {{0, 65534}, {65534, 65533}};
  const StickyScene s = sticky_scene(0, {0, 65534});
  for (const auto& [runner, planter] : runs) {
    const std::string victim = s.home(runner) + "/important.conf";
    std::ofstream(victim) << "precious";
    ASSERT_EQ(::chown(victim.c_str(), runner, runner), 0);
    const std::size_t options = every_output_option("", s.report).size();
    for (std::size_t i = 0; i < options; ++i) {
      const std::string tag = std::to_string(runner) + "-" + std::to_string(i);
      const std::string link = s.pub + "/r-" + tag;
      const std::string dangling = s.pub + "/d-" + tag;
      const std::string made = s.home(runner) + "/made-" + tag;
      plant_link(victim, link, planter);
      plant_link(made, dangling, planter);
      const std::vector<std::string> args = every_output_option(link, s.report)[i];
      const std::string what = args[args.size() - 2] + " as uid " + std::to_string(runner);
      const auto followed = run_as(runner, args);
      EXPECT_EQ(followed.exit_code, 2) << what << ": " << followed.err;
      EXPECT_NE(followed.err.find("/r-" + tag + ", owned by uid " + std::to_string(planter) +
                                  " in the sticky world-writable directory"),
                std::string::npos)
          << what << ": " << followed.err;
      EXPECT_NE(followed.err.find("is not followed"), std::string::npos) << followed.err;
      EXPECT_EQ(followed.err.find('\n'), followed.err.size() - 1) << "one line: " << followed.err;
      EXPECT_TRUE(read_all(victim) == "precious") << what << ": the link's target was replaced";
      const auto created = run_as(runner, every_output_option(dangling, s.report)[i]);
      EXPECT_EQ(created.exit_code, 2) << what << ": " << created.err;
      EXPECT_NE(created.err.find("/d-" + tag + ", owned by uid"), std::string::npos) << created.err;
      EXPECT_EQ(::access(made.c_str(), F_OK), -1) << what << ": the dangling link's target made";
    }
    EXPECT_EQ(files_in(s.home(runner)), std::vector<std::string>{"important.conf"});
    EXPECT_EQ(stat_of(victim).st_uid, runner);
  }
  EXPECT_EQ(files_in(s.pub).size(), 4 * every_output_option("", "").size()) << "a temporary left";
  // Under --format json, stdout is one JSON document that says why.
  const auto j = run_as(0, {"--quick", "--format", "json", "--json", s.pub + "/r-0-1"});
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_NE(json::parse(j.out).at("error").at("message").get<std::string>().find(
                "(the kernel's protected_symlinks rule)"),
            std::string::npos)
      << j.out;
}

// The rule's other side: in a sticky world-writable directory, the user's own link and one of the
// directory's owner are followed (the target replaced, the link kept), as root and as another
// user; a dangling one is refused even then (no file is created through it).
TEST(Outputs, OwnLinksAndTheDirectoryOwnersInAStickyDirectoryAreFollowed) {
  if (!can_run_as_others()) {
    GTEST_SKIP() << "needs root and /usr/bin/setpriv (util-linux): the probe run as another user";
  }
  const uid_t owner = 65533;  // the sticky directory's owner
  const StickyScene s = sticky_scene(owner, {0, 65534});
  for (const uid_t runner : {0U, 65534U}) {
    for (const uid_t link_owner : {runner, owner}) {
      const std::string tag = std::to_string(runner) + "-" + std::to_string(link_owner);
      const std::string target = s.home(runner) + "/r-" + tag + ".json";
      std::ofstream(target) << "old";
      ASSERT_EQ(::chown(target.c_str(), runner, runner), 0);
      plant_link(target, s.pub + "/r-" + tag, link_owner);
      const auto r = run_as(runner, {"--quick", "-q", "--json", s.pub + "/r-" + tag});
      EXPECT_EQ(r.exit_code, 0) << tag << ": " << r.err;
      EXPECT_NO_THROW(json::parse(read_all(target))) << tag;
      struct stat st {};
      EXPECT_EQ(::lstat((s.pub + "/r-" + tag).c_str(), &st), 0);
      EXPECT_TRUE(S_ISLNK(st.st_mode)) << tag;
    }
    // The user's own dangling link there: refused, nothing made.
    const std::string made = s.home(runner) + "/made.json";
    plant_link(made, s.pub + "/d-" + std::to_string(runner), runner);
    const auto r =
        run_as(runner, {"--quick", "-q", "--json", s.pub + "/d-" + std::to_string(runner)});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("names nothing"), std::string::npos) << r.err;
    EXPECT_EQ(::access(made.c_str(), F_OK), -1);
  }
  // A link of root's in the sticky directory reached through a link outside it: each hop is
  // checked where it is; another user's link at the end of the chain is not followed.
  const std::string victim = s.home(0) + "/victim";
  std::ofstream(victim) << "precious";
  plant_link(victim, s.pub + "/theirs", 65534);
  plant_link(s.pub + "/theirs", s.home(0) + "/mine", 0);
  const auto chain = run_as(0, {"--quick", "-q", "--json", s.home(0) + "/mine"});
  EXPECT_EQ(chain.exit_code, 2) << chain.err;
  EXPECT_NE(chain.err.find("/pub/theirs, owned by uid 65534"), std::string::npos) << chain.err;
  EXPECT_EQ(read_all(victim), "precious");
  // A link to a directory, on the way: the same rule.
  plant_link(s.home(0), s.pub + "/dir", 65534);
  const auto through = run_as(0, {"--quick", "-q", "--json", s.pub + "/dir/victim"});
  EXPECT_EQ(through.exit_code, 2) << through.err;
  EXPECT_NE(through.err.find("/pub/dir, owned by uid 65534"), std::string::npos) << through.err;
  EXPECT_EQ(read_all(victim), "precious");
}

namespace {

// Whether this test may make a private mount namespace (root, and unshare from util-linux).
bool private_mounts_work() { return run_in_shell("unshare -m true 2>/dev/null").exit_code == 0; }

}  // namespace

// Issue 38: a file bind-mounted on its own (`docker run -v $PWD/r.json:/out/r.json`) cannot be
// replaced by a rename: it is found before the run and written in place, cut to the report's
// length, by every output option; the other outputs of the run are replaced as usual.
TEST(Outputs, AFileBindMountedOnItsOwnIsWrittenInPlace) {
  if (!private_mounts_work())
    GTEST_SKIP() << "needs root for unshare -m (a private mount namespace)";
  const std::string dir = pp::testing::make_temp_dir();
  ASSERT_EQ(::mkdir((dir + "/mnt").c_str(), 0755), 0);
  const std::string report = dir + "/in.json";
  ASSERT_EQ(pp::testing::run_probe_binary({"--quick", "-q", "--json", report}).exit_code, 0);
  // An earlier file, longer than any report, of a byte no report holds (control characters are
  // escaped in every format).
  const std::string longer(200000, '\x01');
  const std::vector<std::vector<std::string>> options =
      every_output_option(dir + "/mnt/r.out", report);
  for (std::size_t i = 0; i < options.size(); ++i) {
    std::ofstream(dir + "/host.out") << longer;
    std::ofstream(dir + "/mnt/r.out") << "";
    std::ofstream(dir + "/other.json") << "old";
    std::string words;
    for (const std::string& arg : options[i]) words.append(" '").append(arg).append("'");
    // The report of summarize is its text summary; the probe's a JSON one beside it.
    if (options[i][0] != "summarize") words += " --output-as 'json:" + dir + "/other.json'";
    const auto r = run_in_shell(
        "unshare -m sh -c 'mount --bind \"$1/host.out\" \"$1/mnt/r.out\" "
        "|| exit 90; shift; exec \"$0\" \"$@\"' \"$@\" '" +
        dir + "'" + words);
    const std::string& flag = options[i][options[i].size() - 2];
    ASSERT_NE(r.exit_code, 90) << r.err;
    EXPECT_EQ(r.exit_code, 0) << flag << ": " << r.err;
    const std::string got = read_all(dir + "/host.out");
    EXPECT_FALSE(got.empty()) << flag;
    EXPECT_EQ(got.find('\x01'), std::string::npos) << flag << ": the earlier file's tail is left";
    if (flag == "--json" || flag == "--output-as") {
      EXPECT_NO_THROW(json::parse(got)) << flag;
    }
    if (options[i][0] != "summarize") {
      EXPECT_NO_THROW(json::parse(read_all(dir + "/other.json"))) << flag;
    }
    EXPECT_EQ(read_all(dir + "/mnt/r.out"), "") << "the mount reached the host's namespace";
  }
  EXPECT_EQ(files_in(dir + "/mnt"), std::vector<std::string>{"r.out"});
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"host.out", "in.json", "mnt", "other.json"}));
}

// A mount point that cannot take the report (its file system is full) fails the delivery before
// any regular file is replaced: exit 6, saying why, the run's other files as they were.
TEST(Outputs, AMountPointThatCannotTakeTheReportLeavesTheOtherFilesAsTheyWere) {
  if (!private_mounts_work())
    GTEST_SKIP() << "needs root for unshare -m (a private mount namespace)";
  const std::string dir = pp::testing::make_temp_dir();
  ASSERT_EQ(::mkdir((dir + "/small").c_str(), 0755), 0);
  std::ofstream(dir + "/r.json") << "";
  std::ofstream(dir + "/other.json") << "old";
  // A 4 KiB tmpfs holds the mounted file: the JSON report (over 10 KB) does not fit.
  const auto r = run_in_shell(
      "unshare -m sh -c 'cd \"$1\" && mount -t tmpfs -o size=4k tmpfs small && echo old > "
      "small/host.json && mount --bind small/host.json r.json || exit 90; "
      "\"$0\" --quick -q --json r.json --output-as json:other.json' \"$@\" '" +
      dir + "'");
  ASSERT_NE(r.exit_code, 90) << r.err;
  EXPECT_EQ(r.exit_code, 6) << r.err;
  EXPECT_NE(r.err.find("--json: r.json: No space left on device"), std::string::npos) << r.err;
  EXPECT_EQ(read_all(dir + "/other.json"), "old");
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"other.json", "r.json", "small"}));
}
