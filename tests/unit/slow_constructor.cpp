// A library whose constructor runs for a while, as LibTorch's do for about half a second: while
// it runs, the thread that dlopen'ed it holds the dynamic loader's lock. It writes a byte to
// PP_SLOW_CONSTRUCTOR_FD as it starts and another as it ends, and sleeps
// PP_SLOW_CONSTRUCTOR_MS between (unit/test_cuda_driver.cpp).

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

__attribute__((constructor)) void hold_the_loader() {
  const char* fd_text = std::getenv("PP_SLOW_CONSTRUCTOR_FD");  // NOLINT(concurrency-mt-unsafe)
  const char* ms_text = std::getenv("PP_SLOW_CONSTRUCTOR_MS");  // NOLINT(concurrency-mt-unsafe)
  if (fd_text == nullptr || ms_text == nullptr) return;
  const int fd = std::stoi(fd_text);
  if (::write(fd, "s", 1) != 1) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(ms_text)));
  (void)::write(fd, "e", 1);
}

}  // namespace
