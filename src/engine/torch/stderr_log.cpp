#include "engine/torch/stderr_log.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <mutex>
#include <string_view>

namespace precision_probe::engine {

namespace {

constexpr std::string_view kMarker = "Exception in aoti_torch: ";

int g_real = 2;         // the real stderr
int g_log = -1;         // the anonymous file fd 2 now writes to
off_t g_forwarded = 0;  // what of it was passed on
std::mutex g_mutex;

// Async-signal-safe: pread, write and nothing else.
void forward_from(off_t from, off_t* to) {
  char buffer[8192];
  off_t at = from;
  while (true) {
    const ssize_t n = ::pread(g_log, buffer, sizeof buffer, at);
    if (n <= 0) break;
    ssize_t done = 0;
    while (done < n) {
      const ssize_t w = ::write(g_real, buffer + done, static_cast<std::size_t>(n - done));
      if (w <= 0) break;
      done += w;
    }
    at += n;
  }
  if (to != nullptr) *to = at;
}

extern "C" void on_fatal_signal(int signal) {
  if (g_log >= 0) forward_from(g_forwarded, nullptr);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

std::string read_from(off_t from, off_t to) {
  std::string text(static_cast<std::size_t>(to - from), '\0');
  const ssize_t n = ::pread(g_log, text.data(), text.size(), from);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return text;
}

}  // namespace

int capture_stderr() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_log >= 0) return g_real;
  const int real = ::dup(2);
  const int log = ::memfd_create("libtorch-stderr", MFD_CLOEXEC);
  if (real < 0 || log < 0 || ::dup2(log, 2) < 0) {
    if (real >= 0) ::close(real);
    if (log >= 0) ::close(log);
    return 2;
  }
  ::fcntl(real, F_SETFD, FD_CLOEXEC);
  g_real = real;
  g_log = log;
  for (int signal : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT})
    std::signal(signal, on_fatal_signal);
  return g_real;
}

std::string take_logged_exception() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_log < 0) return "";
  const off_t from = g_forwarded;
  off_t to = from;
  forward_from(from, &to);
  g_forwarded = to;
  const std::string text = read_from(from, to);
  const std::size_t at = text.rfind(kMarker);
  if (at == std::string::npos) return "";
  const std::size_t begin = at + kMarker.size();
  const std::size_t end = text.find('\n', begin);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

void forward_stderr() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_log < 0) return;
  forward_from(g_forwarded, &g_forwarded);
}

}  // namespace precision_probe::engine
