// Writing to a descriptor, and the temporary files being written (io.hpp).

#include "process/io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>

#include "strings/strings.hpp"

namespace precision_probe {

// --- Temporary names that exist right now, for the signal handlers -----------------------------

namespace {

// A name in a directory: the directory's descriptor and a short name (".pp-" and 12 hex digits),
// so that a signal handler can remove it with unlinkat() whatever the length of the path.
struct PendingName {
  int dir_fd = -1;
  std::array<char, 32> name{};
};

constexpr int kMaxPending = static_cast<int>(kMaxTemporaries);
std::array<PendingName, kMaxPending> g_pending{};
std::array<std::atomic<int>, kMaxPending> g_pending_used{};  // 0 free, 2 being set, 1 live

}  // namespace

int register_pending(int dir_fd, const std::string& name) {
  if (name.size() >= g_pending[0].name.size()) return -1;
  for (int i = 0; i < kMaxPending; ++i) {
    int expected = 0;
    if (g_pending_used[i].compare_exchange_strong(expected, 2)) {
      g_pending[i].dir_fd = dir_fd;
      std::memcpy(g_pending[i].name.data(), name.c_str(), name.size() + 1);
      g_pending_used[i].store(1);
      return i;
    }
  }
  return -1;
}

void unregister_pending(int& slot) {
  if (slot >= 0) g_pending_used[slot].store(0);
  slot = -1;
}

void remove_pending_temporaries() noexcept {
  for (int i = 0; i < kMaxPending; ++i) {
    if (g_pending_used[i].load() == 1) ::unlinkat(g_pending[i].dir_fd, g_pending[i].name.data(), 0);
  }
}

// --- Writing through ---------------------------------------------------------------------------

Expected<void> write_all(int fd, const std::string& data,
                         std::chrono::steady_clock::time_point deadline,
                         const std::function<bool()>& stop) {
  struct stat st {};
  // Chunks a pipe takes whole once poll() says it has room (PIPE_BUF), larger ones for files.
  const std::size_t chunk = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? 1U << 20U : PIPE_BUF;
  // A descriptor that does not block is written first, and waited on only when it is full: some
  // devices take data at once but never say so to poll() (/dev/kmsg).
  const int flags = ::fcntl(fd, F_GETFL);
  const bool write_first = flags >= 0 && (flags & O_NONBLOCK) != 0;
  bool wait = !write_first;
  std::size_t written = 0;
  while (written < data.size()) {
    // An interrupted run still delivers its report; a signal while the reader does not read ends
    // the wait (`stop`), and a second signal ends the probe at once.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Unexpected{"the reader stopped reading (the run's time is up)"};
    if (stop && stop()) return Unexpected{"interrupted while the reader was not reading"};
    if (wait) {
      pollfd p{fd, POLLOUT, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 100)));
      if (ready < 0 && errno != EINTR) return Unexpected{error_string(errno)};
      if (ready <= 0) continue;
    }
    const ssize_t n = ::write(fd, data.data() + written, std::min(chunk, data.size() - written));
    wait = !write_first || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    if (n > 0) {
      written += static_cast<std::size_t>(n);
    } else if (n == 0) {
      return Unexpected{"nothing could be written"};
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return Unexpected{error_string(errno)};
    }
  }
  return {};
}

}  // namespace precision_probe
