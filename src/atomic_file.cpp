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

namespace {

// Writes `content` to a new temporary file next to `path`; returns its name, or "" and `error`.
std::string write_temporary(const std::string& path, const std::string& content,
                            std::string& error) {
  if (std::string problem = check_writable(path); !problem.empty()) {
    error = problem;
    return "";
  }
  std::string templ = directory_of(path) + "/." + path.substr(path.rfind('/') + 1) + ".tmp-XXXXXX";
  std::vector<char> name(templ.begin(), templ.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    error = errno_text("cannot create a temporary file next to " + path);
    return "";
  }
  std::string tmp(name.data());
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = errno_text("cannot write " + tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return "";
    }
    written += static_cast<std::size_t>(n);
  }
  // Reports are for others to read: 0666 less the umask, like any file the user creates.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed) {
    error = errno_text("cannot flush " + tmp);
    ::unlink(tmp.c_str());
    return "";
  }
  return tmp;
}

}  // namespace

std::string write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::string> temporaries;
  for (const auto& [path, content] : files) {
    std::string error;
    std::string tmp = write_temporary(path, content, error);
    if (tmp.empty()) {
      for (const std::string& t : temporaries) ::unlink(t.c_str());
      return error;
    }
    temporaries.push_back(std::move(tmp));
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (::rename(temporaries[i].c_str(), files[i].first.c_str()) != 0) {
      std::string error = errno_text("cannot rename the report into " + files[i].first);
      for (std::size_t j = i; j < temporaries.size(); ++j) ::unlink(temporaries[j].c_str());
      return error;
    }
  }
  return "";
}

std::string write_file_atomically(const std::string& path, const std::string& content) {
  return write_files_atomically({{path, content}});
}

}  // namespace precision_probe
