#include "precision_probe/atomic_file.hpp"
#include "precision_probe/strings.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace precision_probe {

namespace {

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string errno_text(const std::string& what) { return what + ": " + error_string(errno); }

}  // namespace

std::string check_writable(const std::string& path) {
  if (path.empty()) return "empty file name";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return path + " is a directory";
  const std::string dir = directory_of(path);
  if (::stat(dir.c_str(), &st) != 0) return errno_text("directory " + dir);
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (::access(dir.c_str(), W_OK) != 0) return errno_text("directory " + dir);
  return "";
}

std::string write_file_atomically(const std::string& path, const std::string& content) {
  if (std::string problem = check_writable(path); !problem.empty()) return problem;
  std::string templ = directory_of(path) + "/." + path.substr(path.rfind('/') + 1) + ".tmp-XXXXXX";
  std::vector<char> name(templ.begin(), templ.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) return errno_text("cannot create a temporary file next to " + path);
  const std::string tmp(name.data());
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string error = errno_text("cannot write " + tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return error;
    }
    written += static_cast<std::size_t>(n);
  }
  // Reports are for others to read: 0644 like any file the user would create (umask applies).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed) {
    std::string error = errno_text("cannot flush " + tmp);
    ::unlink(tmp.c_str());
    return error;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string error = errno_text("cannot rename the report into " + path);
    ::unlink(tmp.c_str());
    return error;
  }
  return "";
}

}  // namespace precision_probe
