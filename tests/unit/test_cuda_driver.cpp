// The engine's CUDA driver against the fake libcuda: a GPU plan's handle on the session's started
// driver (CudaDriver::another, what worker.cpp's plans bind with) is taken and bound without the
// dynamic loader's lock, which LibTorch's dlopen holds for as long as its initialisers run (about
// half a second on the H100), where opening the driver again (dlopen) waits for it. Whether the
// real driver's context creation needs that lock too is for a GPU to show (docs/performance.md,
// "The one session, measured on an H100").

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "binary.hpp"
#include "engine/cuda/driver.hpp"

namespace {

namespace eng = precision_probe::engine;

// A library's dlopen on another thread, inside its constructor for `ms` milliseconds (the
// loader's lock held all the while): started() returns once the constructor runs, ended() says
// whether it has returned.
class LoaderHeld {
 public:
  explicit LoaderHeld(int ms) {
    EXPECT_EQ(::pipe2(fds_, O_CLOEXEC), 0);
    ::setenv("PP_SLOW_CONSTRUCTOR_FD", std::to_string(fds_[1]).c_str(), 1);
    ::setenv("PP_SLOW_CONSTRUCTOR_MS", std::to_string(ms).c_str(), 1);
    loading_ = std::thread([this] {
      handle_ = ::dlopen(PP_SLOW_CONSTRUCTOR, RTLD_NOW);
      if (handle_ == nullptr) (void)::write(fds_[1], "x", 1);  // the wait below ends
    });
    char c = 0;
    EXPECT_EQ(::read(fds_[0], &c, 1), 1);
    EXPECT_EQ(c, 's') << "the library's constructor did not run: " << PP_SLOW_CONSTRUCTOR;
  }
  LoaderHeld(const LoaderHeld&) = delete;
  LoaderHeld& operator=(const LoaderHeld&) = delete;
  ~LoaderHeld() {
    loading_.join();
    if (handle_ != nullptr) ::dlclose(handle_);  // unloaded: the next dlopen runs it again
    ::unsetenv("PP_SLOW_CONSTRUCTOR_FD");
    ::unsetenv("PP_SLOW_CONSTRUCTOR_MS");
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  bool ended() const {
    pollfd p{fds_[0], POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }

 private:
  int fds_[2] = {-1, -1};
  void* handle_ = nullptr;
  std::thread loading_;
};

}  // namespace

TEST(CudaDriver, APlansHandleBindsItsGpuWhileALibrarysDlopenHoldsTheLoader) {
  // The fake driver's GPU 0 whatever the machine's environment says.
  for (const char* name : {"CUDA_VISIBLE_DEVICES", "FAKE_CUINIT_RESULT", "FAKE_CUINIT_FAULT"}) {
    ::unsetenv(name);
  }
  ::setenv("PRECISION_PROBE_LIBCUDA", PP_FAKE_DRIVER, 1);
  ::setenv("FAKE_NVIDIA_GPUS", precision_probe::testing::kFakeH200, 1);
  auto started = eng::CudaDriver::open();  // the session's: dlopen and cuInit, before LibTorch's
  ASSERT_TRUE(started) << started.error();
  {
    // What a plan does now: a handle on the started driver, bound, while the loader is held.
    const LoaderHeld loading(3000);
    std::unique_ptr<eng::CudaDriver> plan = (*started)->another();
    const auto bound = plan->bind(0);
    EXPECT_TRUE(bound) << bound.error();
    EXPECT_FALSE(loading.ended()) << "the plan's GPU was bound only once the library had loaded";
    EXPECT_EQ(plan->ordinal(), 0);
    EXPECT_EQ(plan->name(), "NVIDIA H200");
  }
  {
    // Why: opening the driver again (its dlopen) waits for the loader until the library's
    // constructor has returned, what a plan did before.
    const LoaderHeld loading(1000);
    auto again = eng::CudaDriver::open();
    EXPECT_TRUE(again) << again.error();
    EXPECT_TRUE(loading.ended()) << "a dlopen did not wait for the loader's lock";
  }
  ::unsetenv("PRECISION_PROBE_LIBCUDA");
  ::unsetenv("FAKE_NVIDIA_GPUS");
}

// How a thread waits for its GPU is set on the primary context before it is retained, and the
// driver says it back. The primary context is one per device: the last setting holds for every
// handle on it; binding as the driver chooses leaves it as it is.
TEST(CudaDriver, APrimaryContextWaitsAsItsBindSays) {
  for (const char* name : {"CUDA_VISIBLE_DEVICES", "FAKE_CUINIT_RESULT", "FAKE_CUINIT_FAULT"}) {
    ::unsetenv(name);
  }
  ::setenv("PRECISION_PROBE_LIBCUDA", PP_FAKE_DRIVER, 1);
  ::setenv("FAKE_NVIDIA_GPUS", precision_probe::testing::kFakeH200, 1);
  auto started = eng::CudaDriver::open();
  ASSERT_TRUE(started) << started.error();
  using Waiting = eng::CudaDriver::Waiting;
  // The fake's record of the last event's flags (CU_EVENT_*).
  void* fake = ::dlopen(PP_FAKE_DRIVER, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(fake, nullptr);
  const auto* event_flags = static_cast<const unsigned*>(::dlsym(fake, "last_event_flags"));
  ASSERT_NE(event_flags, nullptr);
  std::unique_ptr<eng::CudaDriver> blocked = (*started)->another();
  EXPECT_EQ(blocked->waiting(), std::nullopt) << "not bound yet";
  const auto bound = blocked->bind(0, false, Waiting::blocking);
  ASSERT_TRUE(bound) << bound.error();
  EXPECT_EQ(blocked->waiting(), Waiting::blocking);
  {
    const eng::CudaDriver::Event timing(*blocked, true);
    EXPECT_EQ(*event_flags, 1U) << "a blocking context's events block (CU_EVENT_BLOCKING_SYNC)";
    const eng::CudaDriver::Event untimed(*blocked, false);
    EXPECT_EQ(*event_flags, 3U) << "blocking and CU_EVENT_DISABLE_TIMING";
  }
  std::unique_ptr<eng::CudaDriver> own = (*started)->another();
  ASSERT_TRUE(own->bind(0, true, Waiting::yield));
  EXPECT_EQ(own->waiting(), Waiting::yield) << "a context of its own takes the flags at its making";
  std::unique_ptr<eng::CudaDriver> yielding = (*started)->another();
  ASSERT_TRUE(yielding->bind(0, false, Waiting::yield));
  EXPECT_EQ(yielding->waiting(), Waiting::yield);
  EXPECT_EQ(blocked->waiting(), Waiting::yield) << "one primary context per device";
  std::unique_ptr<eng::CudaDriver> chosen = (*started)->another();
  ASSERT_TRUE(chosen->bind(0));
  EXPECT_EQ(chosen->waiting(), Waiting::yield) << "binding as the driver chooses set it again";
  {
    const eng::CudaDriver::Event timing(*chosen, true);
    EXPECT_EQ(*event_flags, 0U) << "a yielding context's events are the default";
  }
  ::dlclose(fake);
  ::setenv("FAKE_CTX_FLAGS_RESULT", "3", 1);
  std::unique_ptr<eng::CudaDriver> unset = (*started)->another();
  const auto kept = unset->bind(0, false, Waiting::blocking);
  ::unsetenv("FAKE_CTX_FLAGS_RESULT");
  ASSERT_FALSE(kept);
  EXPECT_EQ(kept.error(),
            "how the primary context of CUDA device 0 waits cannot be set: "
            "CUDA_ERROR_NOT_INITIALIZED");
  EXPECT_EQ(chosen->waiting(), Waiting::yield) << "a refused setting changed the context";
  std::unique_ptr<eng::CudaDriver> missing = (*started)->another();
  const auto refused = missing->bind(7, false, Waiting::spin);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("no CUDA device 7"), std::string::npos) << refused.error();
  ::unsetenv("PRECISION_PROBE_LIBCUDA");
  ::unsetenv("FAKE_NVIDIA_GPUS");
}
