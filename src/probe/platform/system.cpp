#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <iterator>

#include "strings/strings.hpp"
#include "probe/platform/system.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

namespace precision_probe {
namespace {

constexpr std::size_t kMaxFileBytes = 4U << 20U;

// Up to kMaxFileBytes (and a little more, as the cut is noticed) of a regular file; nullopt on a
// read error. /proc files say size 0: they are read to their end.
std::optional<std::string> read_all(int fd) {
  std::string data;
  char buffer[4096];
  while (data.size() <= kMaxFileBytes) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    data.append(buffer, static_cast<std::size_t>(n));
  }
  return data;
}

std::string file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

class RealSystem final : public System {
 public:
  std::optional<std::string> getenv(const std::string& name) const override {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): the probe never sets variables
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  }

  std::optional<std::string> read_file(const std::string& path) const override {
    // O_NONBLOCK: opening a FIFO without a writer (or a terminal, a tape) does not wait; fstat
    // then refuses what is not a regular file before anything is read from it.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    std::optional<std::string> data;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) data = read_all(fd);
    ::close(fd);
    return data;
  }

  std::string not_regular(const std::string& path) const override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
    return file_kind(st.st_mode);
  }

  bool exists(const std::string& path) const override { return ::access(path.c_str(), F_OK) == 0; }

  bool accessible(const std::string& path) const override {
    return ::access(path.c_str(), R_OK | W_OK) == 0;
  }

  std::string denied(const std::string& path) const override {
    if (path.empty() || ::access(path.c_str(), R_OK) == 0 || errno != EACCES) return "";
    for (std::size_t slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      std::string dir = path.substr(0, slash);
      if (::access(dir.c_str(), X_OK) != 0 && errno == EACCES) return dir;
    }
    return path;
  }

  std::vector<std::string> list_dir(const std::string& dir,
                                    const std::string& prefix) const override {
    std::vector<std::string> names;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return names;
    while (const dirent* entry = ::readdir(d)) {  // NOLINT(concurrency-mt-unsafe): one thread
      const std::string name = entry->d_name;
      if (name != "." && name != ".." && starts_with(name, prefix)) names.push_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string hostname() const override {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
    return name;
  }

  std::string machine() const override {
    utsname u{};
    return ::uname(&u) == 0 ? u.machine : "unknown";
  }

  std::string kernel_release() const override {
    utsname u{};
    return ::uname(&u) == 0 ? u.release : "unknown";
  }

  bool stdout_is_terminal() const override { return ::isatty(STDOUT_FILENO) == 1; }

  int terminal_columns() const override {
    winsize size{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0) return 0;
    return size.ws_col;
  }
};

}  // namespace

std::unique_ptr<System> make_real_system() { return std::make_unique<RealSystem>(); }

bool is_gpu_device_node(const std::string& name) {
  return name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
         name.find_first_not_of("0123456789", 6) == std::string::npos;
}

std::uint64_t random_u64() {
  std::uint64_t value = 0;
  if (::getrandom(&value, sizeof value, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof value)) {
    return value;
  }
  // Entropy not yet there (early boot) or no getrandom: the clock and the process, mixed.
  static std::atomic<std::uint64_t> counter{0};
  value = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
          (static_cast<std::uint64_t>(::getpid()) << 32U) ^ ++counter;
  value ^= value >> 33U;
  value *= 0xff51afd7ed558ccdULL;
  value ^= value >> 33U;
  return value;
}

}  // namespace precision_probe
