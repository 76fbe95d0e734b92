#pragma once
// The program's one way to run work on threads, which never ends the program: a thread that cannot
// be started is an error the caller handles (its work runs on this thread instead, or the failure
// becomes the run's data), every thread is joined before anything is thrown and at its owner's end
// at the latest, and an exception of any (this thread's first) reaches the caller once all are
// done, not std::terminate. No other part of the program makes a std::thread or std::async.

#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "precision_probe/expected.hpp"

namespace precision_probe {

class Threads {
 public:
  Threads() = default;
  Threads(const Threads&) = delete;
  Threads& operator=(const Threads&) = delete;
  ~Threads() { join(); }

  // Runs `work` on a new thread; where none can be started, why (and `work` has not run).
  template <class Work>
  Expected<void> start(Work&& work) {
    try {
      threads_.emplace_back(
          [this, work = std::forward<Work>(work)]() mutable { keep(other_error_, work); });
      return {};
    } catch (const std::system_error& e) {
      return Unexpected{std::string("no thread could be started (") + e.what() + ")"};
    }
  }
  // Runs `work` on a new thread or, where none can be started, on this one at once (as
  // run_instead): either way its exception comes from wait(). False where it ran here.
  template <class Work>
  bool start_or_run(Work&& work) {
    if (start(work)) return true;
    run_instead(work);
    return false;
  }
  // Runs `work` on this thread, its exception kept as this thread's.
  template <class Work>
  void run_here(Work&& work) {
    keep(here_error_, work);
  }
  // Runs `work` on this thread in place of one that could not be started: its exception is kept
  // as another thread's.
  template <class Work>
  void run_instead(Work&& work) {
    keep(other_error_, work);
  }
  // Waits for every thread, then throws the exception kept: this thread's, else the first other.
  void wait() {
    join();
    if (here_error_) std::rethrow_exception(here_error_);
    if (other_error_) std::rethrow_exception(other_error_);
  }
  // Waits for every thread, throwing nothing: what they threw is kept for wait(). For an owner's
  // end, before what the threads use is gone.
  void join() {
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
  }

 private:
  template <class Work>
  void keep(std::exception_ptr& slot, Work& work) {
    try {
      work();
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!slot) slot = std::current_exception();
    }
  }
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::exception_ptr here_error_;
  std::exception_ptr other_error_;
};

// `work` on `count` threads, this one among them (fewer where no more can be started).
template <class Work>
void run_on_threads(unsigned count, Work& work) {
  Threads threads;
  for (unsigned t = 1; t < count && threads.start([&work] { work(); }); ++t) {
  }
  threads.run_here(work);
  threads.wait();
}

// `beside` on a second thread (on this one where none can be started) while `here` runs on this
// one; an exception of either is thrown once both are done (here's first).
template <class Beside, class Here>
void run_both(Beside&& beside, Here&& here) {
  Threads threads;
  threads.start_or_run([&beside] { beside(); });
  threads.run_here(here);
  threads.wait();
}

}  // namespace precision_probe
