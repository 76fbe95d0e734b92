// The tests' own support where a mistake would reach outside the test: a temporary directory that
// cannot be made is an error, never "" (to which a test joins "/usr/bin/python3" and writes).

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "binary.hpp"

TEST(TestSupport, ATemporaryDirectoryThatCannotBeMadeThrowsRatherThanNamingTheRoot) {
  const std::string made = precision_probe::testing::make_temp_dir();
  EXPECT_FALSE(made.empty());
  EXPECT_TRUE(std::filesystem::is_directory(made));
  const char* saved = std::getenv("TMPDIR");
  const std::string restore = saved != nullptr ? saved : "";
  ::setenv("TMPDIR", (made + "/gone/deeper").c_str(), 1);  // its parent does not exist
  EXPECT_THROW((void)precision_probe::testing::make_temp_dir(), std::runtime_error);
  if (saved != nullptr) {
    ::setenv("TMPDIR", restore.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
}
