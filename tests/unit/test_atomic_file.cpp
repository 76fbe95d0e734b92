#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <sstream>

#include "binary.hpp"
#include "precision_probe/atomic_file.hpp"

namespace pp = precision_probe;
using pp::testing::read_all;

namespace {

// The number of entries in a directory.
int files_in(const std::string& dir) {
  const auto listing = pp::run_process({"/bin/ls", "-A", dir}, pp::environment_with({}), "",
                                       std::chrono::seconds(5));
  return static_cast<int>(std::count(listing.out.begin(), listing.out.end(), '\n'));
}

}  // namespace

TEST(AtomicFile, WritesAndReplacesWithoutLeavingTemporaries) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string path = dir + "/report.json";
  ASSERT_EQ(pp::write_file_atomically(path, "first"), "");
  EXPECT_EQ(read_all(path), "first");
  ASSERT_EQ(pp::write_file_atomically(path, "second"), "");
  EXPECT_EQ(read_all(path), "second");
  EXPECT_EQ(files_in(dir), 1);
}

TEST(AtomicFile, AFailedWriteLeavesTheOldFileUntouched) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string path = dir + "/report.json";
  ASSERT_EQ(pp::write_file_atomically(path, "old"), "");
  // A child whose file-size limit is 16 bytes cannot write the new report: the write fails part
  // way (EFBIG), as on a full disk, whoever runs the test (root included).
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{16, 16};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const std::string error = pp::write_file_atomically(path, std::string(4096, 'n'));
    ::_exit(error.find("cannot write") != std::string::npos ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the oversized write did not fail as expected";
  EXPECT_EQ(read_all(path), "old");
  EXPECT_EQ(files_in(dir), 1);  // no temporary file left behind
}

TEST(AtomicFile, UnwritableTargetsAreNamed) {
  EXPECT_NE(pp::check_writable("/nonexistent-dir/x.json").find("/nonexistent-dir"),
            std::string::npos);
  EXPECT_NE(pp::check_writable("/tmp").find("is a directory"), std::string::npos);
  EXPECT_NE(pp::check_writable("").find("empty"), std::string::npos);
  EXPECT_EQ(pp::check_writable(pp::testing::make_temp_dir() + "/ok.json"), "");
  // The failure path of the writer itself: the directory is missing.
  EXPECT_NE(pp::write_file_atomically("/nonexistent-dir/x.json", "data"), "");
}
