// common/threads.hpp: work on several cores runs to its end on every thread, and an exception of
// any reaches the caller after all are done, never std::terminate.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "common/threads.hpp"

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

TEST(RunOnThreads, EveryThreadWorksAndAnExceptionComesOnceAllAreDone) {
  std::atomic<int> runs{0};
  std::mutex mutex;
  std::set<std::thread::id> ids;
  auto work = [&] {
    ++runs;
    const std::lock_guard<std::mutex> lock(mutex);
    ids.insert(std::this_thread::get_id());
  };
  pp::run_on_threads(3, work);
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(ids.size(), 3U);
  EXPECT_EQ(ids.count(std::this_thread::get_id()), 1U);
  // One thread throws: the others still run to their end before it comes here.
  std::atomic<int> done{0};
  std::atomic<int> calls{0};
  auto failing = [&] {
    if (calls++ == 1) throw std::runtime_error("one");
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ++done;
  };
  EXPECT_THROW(pp::run_on_threads(4, failing), std::runtime_error);
  EXPECT_EQ(done, 3);
}
