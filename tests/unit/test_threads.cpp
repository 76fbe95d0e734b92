// threads/threads.hpp: work on several cores runs to its end on every thread, and an exception of
// any reaches the caller after all are done, never std::terminate; where no thread can be started,
// the work runs on this one.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "binary.hpp"
#include "threads/threads.hpp"

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

// Where no thread can be started, start() says why, and the work runs on this thread: nothing is
// lost and nothing ends the program. In a child that can start none (binary.hpp).
TEST(Threads, WithoutASecondThreadTheWorkRunsHereAndStartSaysWhy) {
  const pp::Expected<std::string> got = pp::testing::without_threads([] {
    std::string seen;
    pp::Threads threads;
    bool ran = false;
    const pp::Expected<void> started = threads.start([&ran] { ran = true; });
    seen += started ? "started\n" : "start: " + started.error() + "\n";
    seen += ran ? "ran\n" : "not run\n";
    const std::thread::id here = std::this_thread::get_id();
    std::thread::id where;
    const bool beside = threads.start_or_run([&where] { where = std::this_thread::get_id(); });
    seen += std::string(beside ? "beside" : "instead") + (where == here ? " here\n" : " there\n");
    std::atomic<int> runs{0};
    auto work = [&runs] { ++runs; };
    pp::run_on_threads(4, work);
    seen += "run_on_threads: " + std::to_string(runs) + "\n";
    bool both = false;
    try {
      pp::run_both([] { throw std::logic_error("beside"); }, [&both] { both = true; });
    } catch (const std::logic_error& e) {
      seen += std::string("run_both: ") + e.what() + (both ? " after here\n" : "\n");
    }
    return seen;
  });
  ASSERT_TRUE(got) << got.error();
  // The first line names the system's reason ("Resource temporarily unavailable").
  const std::size_t first = got->find('\n');
  EXPECT_EQ(got->rfind("start: no thread could be started (", 0), 0U) << *got;
  EXPECT_EQ(got->substr(first + 1),
            "not run\n"
            "instead here\n"
            "run_on_threads: 1\n"
            "run_both: beside after here\n");
}
