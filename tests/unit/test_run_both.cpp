// run_both (common/run_both.hpp): two pieces of work on two cores, both run to their end, and an
// exception of either reaches the caller after both are done, never std::terminate.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "common/run_both.hpp"

namespace pp = precision_probe;

TEST(RunBoth, BothRunTheSecondOnItsOwnThread) {
  std::thread::id beside_id;
  bool here_ran = false;
  pp::run_both([&] { beside_id = std::this_thread::get_id(); }, [&] { here_ran = true; });
  EXPECT_TRUE(here_ran);
  EXPECT_NE(beside_id, std::thread::id());
  EXPECT_NE(beside_id, std::this_thread::get_id());
}

TEST(RunBoth, AnExceptionOfEitherComesHereOnceBothAreDone) {
  std::atomic<bool> beside_done{false};
  // Here throws while beside still works: beside is waited for, then here's exception comes.
  EXPECT_THROW(pp::run_both(
                   [&] {
                     std::this_thread::sleep_for(std::chrono::milliseconds(50));
                     beside_done = true;
                   },
                   [] { throw std::runtime_error("here"); }),
               std::runtime_error);
  EXPECT_TRUE(beside_done);
  // Beside throws: here runs to its end, then beside's exception comes.
  bool here_done = false;
  try {
    pp::run_both([] { throw std::logic_error("beside"); }, [&] { here_done = true; });
    ADD_FAILURE() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "beside");
  }
  EXPECT_TRUE(here_done);
  // Both throw: here's comes, beside's is dropped.
  try {
    pp::run_both([] { throw std::logic_error("beside"); },
                 [] { throw std::runtime_error("here"); });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "here");
  }
}
