// Delivering reports: regular files replaced atomically and together, everything else written
// through and never replaced, failures noticed. Device nodes are made in temporary directories
// (as root; the tests that need that skip, saying so, elsewhere), and the bind-mount case runs in
// a private mount namespace.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <functional>
#include <thread>

#include "binary.hpp"
#include "probe/outputs/output.hpp"

namespace pp = precision_probe;
using pp::testing::read_all;

namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::vector<std::string> files_in(const std::string& dir) {
  const auto listing = pp::run_process({"/bin/ls", "-A", dir}, pp::environment_with({}), "",
                                       std::chrono::seconds(5));
  std::vector<std::string> names;
  std::string name;
  for (char c : listing.out) {
    if (c == '\n') {
      names.push_back(name);
      name.clear();
    } else {
      name += c;
    }
  }
  return names;
}

std::chrono::steady_clock::time_point soon() {
  return std::chrono::steady_clock::now() + std::chrono::seconds(10);
}

// What prepare_outputs refuses, the line a user would see; "" where it accepts.
std::string refusal(const std::vector<pp::OutputRequest>& requests,
                    const pp::StandardStreams& streams = {}, const std::string& quiet_flag = "") {
  const auto prepared = pp::prepare_outputs(requests, streams, quiet_flag);
  return prepared ? "" : prepared.error();
}

// Prepares and delivers `contents` to `paths` (flag "--json" for each); "" or the error.
std::string deliver(const std::vector<std::string>& paths, const std::vector<std::string>& contents,
                    pp::StandardStreams streams = {}) {
  std::vector<pp::OutputRequest> requests;
  for (const std::string& p : paths) requests.push_back({p, "--json"});
  auto prepared = pp::prepare_outputs(requests, streams);
  if (!prepared) return "prepare: " + prepared.error();
  bool stdout_failed = false;
  const pp::Expected<void> delivered = (*prepared)->deliver(contents, soon(), stdout_failed);
  return delivered ? "" : delivered.error();
}

// Runs `body` in a child process; its exit status 0 is success. For what changes the process
// (a mount namespace, resource limits).
int in_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool can_make_device_nodes(const std::string& dir) {
  const std::string probe = dir + "/probe-node";
  if (::mknod(probe.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) return false;
  ::unlink(probe.c_str());
  return true;
}

}  // namespace

TEST(Output, ReplacesAFileKeepingItsModeAndLeavingNoTemporary) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string path = dir + "/report.json";
  write(path, "old");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  ASSERT_EQ(deliver({path}, {"new"}), "");
  EXPECT_EQ(read_all(path), "new");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640U);
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"report.json"});
  // A new file gets 0666 less the umask, like any file a user creates.
  const mode_t mask = ::umask(022);
  ASSERT_EQ(deliver({dir + "/new.json"}, {"x"}), "");
  ::umask(mask);
  ASSERT_EQ(::stat((dir + "/new.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644U);
}

TEST(Output, ALongFileNameNeedsNoLongerTemporaryName) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string path = dir + "/" + std::string(250, 'r');
  ASSERT_EQ(deliver({path}, {"report"}), "");
  EXPECT_EQ(read_all(path), "report");
  EXPECT_EQ(files_in(dir).size(), 1U);
}

TEST(Output, ASymbolicLinkKeepsPointingAtItsReplacedTarget) {
  const std::string dir = pp::testing::make_temp_dir();
  ASSERT_EQ(::mkdir((dir + "/real").c_str(), 0755), 0);
  write(dir + "/real/report.json", "old");
  ASSERT_EQ(::symlink("real/report.json", (dir + "/link.json").c_str()), 0);
  ASSERT_EQ(deliver({dir + "/link.json"}, {"new"}), "");
  struct stat st {};
  ASSERT_EQ(::lstat((dir + "/link.json").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link was replaced by a file";
  EXPECT_EQ(read_all(dir + "/real/report.json"), "new");
  // A dangling link: its target is created.
  ASSERT_EQ(::symlink("real/later.json", (dir + "/dangling.json").c_str()), 0);
  ASSERT_EQ(deliver({dir + "/dangling.json"}, {"made"}), "");
  EXPECT_EQ(read_all(dir + "/real/later.json"), "made");
}

TEST(Output, AFifoIsWrittenThroughAndOneWithoutAReaderIsRefusedAtOnce) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  const std::string error = deliver({fifo}, {"report"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << "it waited";
  EXPECT_NE(error.find("no process is reading the FIFO"), std::string::npos) << error;
  std::string received;
  std::thread reader([&] { received = read_all(fifo); });
  // The reader's open() blocks until a writer comes: give it a moment to be there.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(deliver({fifo}, {"report through the fifo"}), "");
  reader.join();
  EXPECT_EQ(received, "report through the fifo");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(Output, ACharacterDeviceIsWrittenThroughNeverReplaced) {
  const std::string dir = pp::testing::make_temp_dir();
  if (!can_make_device_nodes(dir)) GTEST_SKIP() << "mknod needs root (CAP_MKNOD)";
  const std::string null_node = dir + "/null";
  const std::string full_node = dir + "/full";
  ASSERT_EQ(::mknod(null_node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  ASSERT_EQ(::mknod(full_node.c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
  ASSERT_EQ(deliver({null_node}, {"report"}), "");
  struct stat st {};
  ASSERT_EQ(::lstat(null_node.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null was replaced";
  // A device whose write fails (/dev/full): the error is seen, and the file delivered with it is
  // put back as it was.
  write(dir + "/report.json", "old");
  const std::string error = deliver({dir + "/report.json", full_node}, {"new", "report"});
  EXPECT_NE(error.find("No space left on device"), std::string::npos) << error;
  EXPECT_EQ(read_all(dir + "/report.json"), "old");
  ASSERT_EQ(::lstat(full_node.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(files_in(dir).size(), 3U);  // null, full, report.json: no temporary left
}

TEST(Output, TargetsThatCannotTakeAReportAreRefusedBeforeTheRun) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir, "is a directory"},
      {dir + "/missing/report.json", "No such file or directory"},
      {"/proc/version", "cannot create a file"},
      {"/dev/stdin", "is standard input"},
      {"", "empty file name"},
  };
  for (const auto& [path, expected] : cases) {
    const std::string error = refusal({{path, "-o"}});
    EXPECT_NE(error.find(expected), std::string::npos) << path << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
  if (can_make_device_nodes(dir)) {
    // A character device with no driver behind it: its open fails (ENXIO), and says so.
    ASSERT_EQ(::mknod((dir + "/nodriver").c_str(), S_IFCHR | 0600, makedev(240, 7)), 0);
    const std::string no_driver = refusal({{dir + "/nodriver", "-o"}});
    EXPECT_NE(no_driver.find("No such device"), std::string::npos) << no_driver;
    EXPECT_EQ(no_driver.find("FIFO"), std::string::npos) << no_driver;
    ASSERT_EQ(::mknod((dir + "/disk").c_str(), S_IFBLK | 0600, makedev(7, 0)), 0);
    EXPECT_NE(refusal({{dir + "/disk", "-o"}}).find("block device"), std::string::npos);
  }
  // A closed stdout is no place for a report.
  pp::StandardStreams closed;
  closed.out_closed = true;
  EXPECT_NE(refusal({{"-", "the report on stdout"}}, closed).find("stdout is closed"),
            std::string::npos);
}

TEST(Output, OneFileNamedTwiceIsAUsageError) {
  const std::string dir = pp::testing::make_temp_dir();
  write(dir + "/r.json", "old");
  ASSERT_EQ(::symlink("r.json", (dir + "/alias.json").c_str()), 0);
  ASSERT_EQ(::mkdir((dir + "/sub").c_str(), 0755), 0);
  const std::vector<std::pair<std::string, std::string>> spellings = {
      {dir + "/r.json", dir + "/./r.json"},
      {dir + "/r.json", dir + "/alias.json"},
      {dir + "/r.json", dir + "/sub/../r.json"},
      {dir + "/new.json", dir + "/sub/../new.json"},  // a file that does not exist yet
  };
  for (const auto& [a, b] : spellings) {
    const std::string error = refusal({{a, "-o"}, {b, "--json"}});
    EXPECT_NE(error.find("-o and --json name the same file"), std::string::npos)
        << a << " / " << b << ": " << error;
  }
  EXPECT_EQ(read_all(dir + "/r.json"), "old");
  EXPECT_EQ(refusal({{dir + "/a.json", "-o"}, {dir + "/b.json", "--json"}}), "");
}

TEST(Output, AFailedWriteLeavesEveryFileAsItWasAndNoTemporary) {
  const std::string dir = pp::testing::make_temp_dir();
  write(dir + "/a.json", "old a");
  write(dir + "/b.json", "old b");
  // A file-size limit of 16 bytes: the second report cannot be written (EFBIG, whoever runs the
  // test), as on a full disk. SIGXFSZ is ignored, as the probe ignores it.
  const int status = in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{16, 16};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const std::string error =
        deliver({dir + "/a.json", dir + "/b.json"}, {"short", std::string(4096, 'n')});
    return error.find("File too large") != std::string::npos ? 0 : 1;
  });
  EXPECT_EQ(status, 0) << "the oversized write did not fail as expected";
  EXPECT_EQ(read_all(dir + "/a.json"), "old a");
  EXPECT_EQ(read_all(dir + "/b.json"), "old b");
  EXPECT_EQ(files_in(dir).size(), 2U);
}

TEST(Output, ALateRenameFailurePutsBackTheFilesAlreadyReplaced) {
  const std::string dir = pp::testing::make_temp_dir();
  write(dir + "/a.json", "old a");
  write(dir + "/b.json", "old b");
  write(dir + "/elsewhere", "mounted");
  // b.json becomes a bind mount after the outputs were prepared (a mount point found then is
  // written in place): renaming over it fails with EBUSY after a.json was replaced.
  const int status = in_child([&] {
    if (::unshare(CLONE_NEWNS) != 0) return 77;
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 77;
    auto prepared =
        pp::prepare_outputs({{dir + "/a.json", "--json"}, {dir + "/b.json", "--json"}}, {});
    if (!prepared) return 4;
    if (::mount((dir + "/elsewhere").c_str(), (dir + "/b.json").c_str(), nullptr, MS_BIND,
                nullptr) != 0) {
      return 77;
    }
    bool stdout_failed = false;
    const pp::Expected<void> delivered =
        (*prepared)->deliver({"new a", "new b"}, soon(), stdout_failed);
    if (delivered || delivered.error().find("Device or resource busy") == std::string::npos) {
      return 1;
    }
    if (read_all(dir + "/a.json") != "old a" || read_all(dir + "/b.json") != "mounted") return 2;
    prepared->reset();
    return files_in(dir).size() == 3U ? 0 : 3;
  });
  if (status == 77) GTEST_SKIP() << "a private mount namespace needs root (CAP_SYS_ADMIN)";
  EXPECT_EQ(status, 0) << "1: not EBUSY, 2: a file not as it was, 3: a temporary was left, "
                          "4: not prepared";
}

// A file bind-mounted on its own, found before the run, is written in place and cut to the
// report's length: through the mount, the file mounted there gets the report.
TEST(Output, AMountPointIsWrittenInPlace) {
  const std::string dir = pp::testing::make_temp_dir();
  write(dir + "/host.json", std::string(10000, 'x'));
  write(dir + "/r.json", "");
  write(dir + "/a.json", "old a");
  const int status = in_child([&] {
    if (::unshare(CLONE_NEWNS) != 0) return 77;
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 77;
    if (::mount((dir + "/host.json").c_str(), (dir + "/r.json").c_str(), nullptr, MS_BIND,
                nullptr) != 0) {
      return 77;
    }
    if (!deliver({dir + "/a.json", dir + "/r.json"}, {"new a", "new r"}).empty()) return 1;
    return read_all(dir + "/r.json") == "new r" ? 0 : 2;
  });
  if (status == 77) GTEST_SKIP() << "a private mount namespace needs root (CAP_SYS_ADMIN)";
  EXPECT_EQ(status, 0) << "1: the delivery failed, 2: not the report through the mount";
  EXPECT_TRUE(read_all(dir + "/host.json") == "new r") << "the earlier content is left";
  EXPECT_EQ(read_all(dir + "/r.json"), "");  // the mount was the child's alone
  EXPECT_EQ(read_all(dir + "/a.json"), "new a");
  EXPECT_EQ(files_in(dir).size(), 3U);
}

// Where statx cannot tell (before Linux 5.8), /proc/self/mountinfo does: its fifth field, with the
// kernel's octal escapes for a space, a tab, a newline and a backslash.
TEST(Output, MountinfoNamesMountPointsWithTheirEscapes) {
  const std::string mountinfo =
      "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/root rw\n"
      "36 22 259:1 /srv/host.json /out/my\\040r\\011\\012\\134.json rw shared:1 - ext4 "
      "/dev/root rw\n"
      "37 22 0:5 / /dev rw - devtmpfs udev rw\n";
  EXPECT_TRUE(pp::listed_as_mount_point(mountinfo, "/out/my r\t\n\\.json"));
  EXPECT_TRUE(pp::listed_as_mount_point(mountinfo, "/dev"));
  EXPECT_FALSE(pp::listed_as_mount_point(mountinfo, "/out/my\\040r\\011\\012\\134.json"));
  EXPECT_FALSE(pp::listed_as_mount_point(mountinfo, "/srv/host.json"));  // the source, not a point
  EXPECT_FALSE(pp::listed_as_mount_point(mountinfo, "/out"));
  EXPECT_FALSE(pp::listed_as_mount_point("", "/"));
}

TEST(Output, StandardStreamsAreWrittenThrough) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pp::StandardStreams streams;
  streams.out_fd = fds[1];
  ASSERT_EQ(deliver({"/dev/stdout"}, {"through stdout"}, streams), "");
  ::close(fds[1]);
  char buffer[64] = {};
  EXPECT_EQ(::read(fds[0], buffer, sizeof buffer), 14);
  EXPECT_EQ(std::string(buffer), "through stdout");
  ::close(fds[0]);
  // Stdout twice (the report on stdout and --json -): one stream, one report.
  const std::string twice = refusal({{"-", "the report on stdout"}, {"-", "--json"}});
  EXPECT_NE(twice.find("name the same file"), std::string::npos) << twice;
}

TEST(Output, AClosedPipeIsAnErrorNotASignal) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  const sighandler_t previous = ::signal(SIGPIPE, SIG_IGN);  // as the probe sets it
  pp::StandardStreams streams;
  streams.out_fd = fds[1];
  auto prepared = pp::prepare_outputs({{"-", "the report on stdout"}}, streams);
  ASSERT_TRUE(prepared) << prepared.error();
  bool stdout_failed = false;
  const pp::Expected<void> delivered = (*prepared)->deliver({"report"}, soon(), stdout_failed);
  ::signal(SIGPIPE, previous);
  ::close(fds[1]);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().find("Broken pipe"), std::string::npos) << delivered.error();
  EXPECT_TRUE(stdout_failed);
}

TEST(Output, OnlyDescriptorsTheProbeWasGivenCanBeNamed) {
  const std::string dir = pp::testing::make_temp_dir();
  std::ofstream(dir + "/ro.txt") << "x";
  const int read_only = ::open((dir + "/ro.txt").c_str(), O_RDONLY);
  const int directory = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pp::StandardStreams streams;
  streams.inherited = {0, 1, 2, read_only, directory, fds[1]};
  auto error_for = [&streams](int fd) {
    return refusal({{"/dev/fd/" + std::to_string(fd), "--json"}}, streams);
  };
  EXPECT_NE(error_for(read_only).find("is not open for writing"), std::string::npos);
  EXPECT_NE(error_for(directory).find("is a directory"), std::string::npos);
  EXPECT_EQ(error_for(fds[1]), "");
  // A descriptor the probe opened itself (here: one the caller did not pass) is refused.
  streams.inherited = {0, 1, 2};
  EXPECT_NE(error_for(fds[1]).find("was not given to the probe"), std::string::npos);
  for (int fd : {read_only, directory, fds[0], fds[1]}) ::close(fd);
}

TEST(Output, QuietRefusesEverySpellingOfStdout) {
  for (const char* path : {"-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"}) {
    const std::string error = refusal({{path, "--json"}}, {}, "--quiet");
    EXPECT_NE(error.find("--quiet keeps stdout silent, but --json"), std::string::npos)
        << path << ": " << error;
  }
  EXPECT_EQ(refusal({{"/dev/stderr", "--json"}}, {}, "-q"), "");
}

TEST(Output, StdoutAndStderrOnOnePipeAreNotOneFileNamedTwice) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pp::StandardStreams streams;
  streams.out_fd = fds[1];
  streams.err_fd = fds[1];
  EXPECT_EQ(refusal({{"-", "the report on stdout"}, {"/dev/stderr", "--json"}}, streams), "");
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(Output, AtMostThirtyTwoOutputs) {
  const std::string dir = pp::testing::make_temp_dir();
  std::vector<pp::OutputRequest> many;
  for (int i = 0; i < 33; ++i) many.push_back({dir + "/r" + std::to_string(i), "--output-as"});
  EXPECT_NE(refusal(many).find("at most 32"), std::string::npos);
  many.pop_back();
  EXPECT_EQ(refusal(many), "");
}
