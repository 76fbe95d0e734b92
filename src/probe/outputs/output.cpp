// Delivering reports (output.hpp): classify every target before the run, then write them so that
// regular files are replaced all together or not at all and nothing that is not a regular file is
// ever replaced.

#include "probe/outputs/output.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "strings/strings.hpp"

namespace precision_probe {

namespace {

// --- Classifying a target ------------------------------------------------------------------------

// What a target is: stdout or another descriptor the probe was given, a device or a FIFO (written
// through), a regular file (replaced), or a regular file that is a mount point (written in place).
enum class Kind { standard_stream, stream, file, mount_point };

// What a path names, found by walking it one name at a time (Walk), or why no report can be
// written there.
struct Resolved {
  Kind kind = Kind::file;
  int fd_number = -1;  // standard_stream: /dev/stdout is 1
  int dir_fd = -1;     // the directory that holds `base` (O_PATH), the caller's to close
  std::string base;    // the last name, every symbolic link followed
  bool exists = false;
  struct stat st {};  // what `base` is, where it exists
};

// The descriptor a path names without opening anything: /dev/stdout, /dev/stderr, /dev/stdin,
// /dev/fd/N, /proc/self/fd/N and /proc/<our pid>/fd/N.
std::optional<int> descriptor_named(const std::string& path) {
  if (path == "/dev/stdin") return 0;
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const std::string& prefix : {std::string("/dev/fd/"), std::string("/proc/self/fd/"),
                                    fmt::format("/proc/{}/fd/", ::getpid())}) {
    if (!starts_with(path, prefix)) continue;
    const std::string rest = path.substr(prefix.size());
    if (rest.empty() || rest.size() > 6 ||
        rest.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    return static_cast<int>(*parse_int(rest));
  }
  return std::nullopt;
}

// The directory above `at` (a path walked without links, so that ".." is its parent).
std::string parent_of(const std::string& at) {
  const bool ups = at == ".." || (at.size() > 3 && at.compare(at.size() - 3, 3, "/..") == 0);
  if (at.empty() || ups) return at.empty() ? ".." : at + "/..";
  const std::size_t slash = at.rfind('/');
  return slash == std::string::npos ? "" : slash == 0 ? "/" : at.substr(0, slash);
}

// A path's names in order; one that ends in '/' ends in "." (it must be a directory).
std::deque<std::string> names_of(const std::string& path) {
  std::deque<std::string> names;
  std::size_t from = 0;
  while (from <= path.size()) {
    const std::size_t slash = std::min(path.find('/', from), path.size());
    if (slash > from) names.push_back(path.substr(from, slash - from));
    from = slash + 1;
  }
  if (path.back() == '/') names.emplace_back(".");
  return names;
}

// Walks a path from a directory held open (O_PATH), one name at a time and without letting the
// kernel follow any symbolic link: each link is read and followed here, under the kernel's
// protected_symlinks rule whatever the sysctl says (a link in a sticky world-writable directory
// is followed only where its owner is the user or the directory's owner), and no file is made
// through a dangling link in such a directory. Every later step (the temporary, the rename, the
// open) is made relative to the directory found, so what was checked is what is written.
class Walk {
 public:
  Walk() = default;
  Walk(const Walk&) = delete;
  Walk& operator=(const Walk&) = delete;
  ~Walk() {
    if (dir_ >= 0) ::close(dir_);
  }

  // What a descriptor's name gives (/dev/stdout is 1); "-" is 1 too.
  static Expected<Resolved> standard_stream(int fd) {
    if (fd == 0) return Unexpected{"is standard input"};
    Resolved r;
    r.kind = Kind::standard_stream;
    r.fd_number = fd;
    return r;
  }

  Expected<Resolved> run(const std::string& path) {
    if (const auto fd = descriptor_named(path)) return standard_stream(*fd);
    if (Expected<void> started = start(path.front() == '/'); !started)
      return Unexpected{started.error()};
    rest_ = names_of(path);
    while (!rest_.empty()) {
      const std::string name = std::move(rest_.front());
      rest_.pop_front();
      const bool last = rest_.empty();
      if (name == "." || name == "..") {
        if (name == "..") {
          if (Expected<void> entered = enter(name); !entered) return Unexpected{entered.error()};
        }
        if (last) return Unexpected{"is a directory"};
        continue;
      }
      struct stat st {};
      if (::fstatat(dir_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT && last) return found(name, false, st);
        return Unexpected{last ? error_string(errno)
                               : fmt::format("directory {}: {}", printable_path(joined(name)),
                                             error_string(errno))};
      }
      if (S_ISLNK(st.st_mode)) {
        Expected<std::string> target = follow(name, st, last);
        if (!target) return Unexpected{target.error()};
        if (const auto fd = last ? descriptor_named(*target) : std::nullopt) {
          return standard_stream(*fd);
        }
        continue;
      }
      if (!last) {
        if (Expected<void> entered = enter(name); !entered) return Unexpected{entered.error()};
        continue;
      }
      return found(name, true, st);
    }
    return Unexpected{"is a directory"};  // "/"
  }

 private:
  Expected<void> start(bool absolute) {
    dir_ = ::open(absolute ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    at_ = absolute ? "/" : "";
    if (dir_ < 0)
      return Unexpected{fmt::format("directory {}: {}", absolute ? "/" : ".", error_string(errno))};
    return {};
  }

  // `name` in the directory walked so far, for messages.
  std::string joined(const std::string& name) const {
    return at_.empty() ? name : at_ == "/" ? "/" + name : at_ + "/" + name;
  }

  // Goes into the directory `name` (never through a link: links are followed by follow()).
  Expected<void> enter(const std::string& name) {
    const int next = ::openat(dir_, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      return Unexpected{
          fmt::format("directory {}: {}", printable_path(joined(name)), error_string(errno))};
    }
    ::close(dir_);
    dir_ = next;
    if (name != "..") {
      at_ = joined(name);
    } else {
      at_ = parent_of(at_);
    }
    return {};
  }

  // Reads the link `name` (described by `link`) and puts its target's names before the rest of
  // the walk; returns the target as a path, for the descriptors it may name (/dev/stdout).
  Expected<std::string> follow(const std::string& name, const struct stat& link, bool last) {
    if (++hops_ > 40) return Unexpected{"too many levels of symbolic links"};
    struct stat dir {};
    if (::fstat(dir_, &dir) != 0) return Unexpected{error_string(errno)};
    const bool shared = (dir.st_mode & (S_ISVTX | S_IWOTH)) == (S_ISVTX | S_IWOTH);
    if (shared && link.st_uid != ::geteuid() && link.st_uid != dir.st_uid) {
      return Unexpected{fmt::format(
          "the symbolic link {}, owned by uid {} in the sticky world-writable directory {}, is "
          "not followed: only a link of yours or of the directory's owner (uid {}) is (the "
          "kernel's protected_symlinks rule)",
          printable_path(joined(name)), link.st_uid, printable_path(at_.empty() ? "." : at_),
          dir.st_uid)};
    }
    std::array<char, PATH_MAX> target{};
    const ssize_t n = ::readlinkat(dir_, name.c_str(), target.data(), target.size());
    if (n <= 0 || static_cast<std::size_t>(n) >= target.size()) {
      return Unexpected{fmt::format("cannot read the symbolic link {}: {}",
                                    printable_path(joined(name)),
                                    error_string(n < 0    ? errno
                                                 : n == 0 ? ENOENT
                                                          : ENAMETOOLONG))};
    }
    if (last && shared && dangling_.empty()) dangling_ = joined(name);
    const std::string text(target.data(), static_cast<std::size_t>(n));
    std::string whole = text.front() == '/' ? text : joined(text);
    if (text.front() == '/') {
      ::close(dir_);
      dir_ = -1;
      if (Expected<void> started = start(true); !started) return Unexpected{started.error()};
    }
    std::deque<std::string> names = names_of(text);
    rest_.insert(rest_.begin(), names.begin(), names.end());
    return whole;
  }

  Expected<Resolved> found(const std::string& name, bool exists, const struct stat& st) {
    if (!exists && !dangling_.empty()) {
      return Unexpected{fmt::format(
          "the symbolic link {} in a sticky world-writable directory names nothing, and no "
          "file is created through such a link: create the file first, or name it directly",
          printable_path(dangling_))};
    }
    Resolved r;
    r.base = name;
    r.exists = exists;
    r.st = st;
    if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) r.kind = Kind::stream;
    if (exists && !S_ISREG(st.st_mode) && r.kind != Kind::stream)
      return Unexpected{what_is_refused(st)};
    // Readable where it may be, so that it can be flushed once a file is renamed in it.
    if (const int readable = ::openat(dir_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        readable >= 0) {
      ::close(dir_);
      dir_ = readable;
    }
    r.dir_fd = dir_;
    dir_ = -1;
    return r;
  }

  static std::string what_is_refused(const struct stat& st) {
    if (S_ISDIR(st.st_mode)) return "is a directory";
    if (S_ISBLK(st.st_mode)) return "is a block device (a report is never written onto a disk)";
    return "is a socket or another special file";
  }

  int dir_ = -1;
  std::string at_;  // the directory walked so far, as a path for messages ("" is ".")
  std::deque<std::string> rest_;
  int hops_ = 0;
  std::string dangling_;  // the first link in a sticky world-writable directory that the last
                          // name went through
};

std::string random_name() {
  std::array<unsigned char, 6> bytes{};
  if (::getrandom(bytes.data(), bytes.size(), GRND_NONBLOCK) !=
      static_cast<ssize_t>(bytes.size())) {
    static std::atomic<unsigned> counter{0};
    const unsigned value = static_cast<unsigned>(::getpid()) * 2654435761U + ++counter;
    std::memcpy(bytes.data(), &value, sizeof value);
  }
  std::string name = ".pp-";
  for (unsigned char b : bytes) name += fmt::format("{:02x}", b);
  return name;
}

// --- One target --------------------------------------------------------------------------------

// How a regular file was put in place, for undoing it.
enum class Commit { none, created, exchanged, backed_up, replaced };

struct Target {
  OutputRequest request;
  Kind kind = Kind::file;
  int fd = -1;           // the stream, the mount point, or the file's unnamed temporary
  bool owns_fd = false;  // opened here (closed at the end)
  int fd_number = -1;    // a descriptor the probe was given: /dev/stdout is 1
  bool stdout = false;   // written last
  std::string identity;  // a regular file's device and inode (and name, for a new one): two
                         // spellings of one file are one identity; "" for a stream
  // What the path names, links followed: `base` in the directory `dir_fd` (Walk).
  std::string base;
  int dir_fd = -1;
  // Regular files:
  bool existed = false;
  struct stat old {};
  bool named_temporary = false;  // no O_TMPFILE on this file system: a named one, made late
  std::string temp;              // the name the new content has in `dir_fd` while committing
  int temp_slot = -1;
  Commit commit = Commit::none;
  std::string backup;  // the old content's name (exchanged, backed_up)
  int backup_slot = -1;
  bool left_as_is = false;  // deliver() writes nothing here (leave_as_is)
};

std::string shown(const Target& t) { return printable_path(t.request.path); }

std::string failure(const Target& t, const std::string& what) {
  return fmt::format("{}: {}: {}", t.request.flag, shown(t), what);
}

// Whether an existing regular file is a mount point (a file bind-mounted there), which no
// rename can replace: statx's STATX_ATTR_MOUNT_ROOT (Linux 5.8), else another device than its
// directory's, else /proc/self/mountinfo (a bind mount from the same file system keeps st_dev).
bool is_mount_point(const Target& t) {
  struct statx sx {};
  if (::statx(t.dir_fd, t.base.c_str(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_INO, &sx) ==
          0 &&
      (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0) {
    return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  }
  struct stat dir {};
  if (::fstat(t.dir_fd, &dir) == 0 && dir.st_dev != t.old.st_dev) return true;
  std::array<char, PATH_MAX> at{};
  const ssize_t n =
      ::readlink(fmt::format("/proc/self/fd/{}", t.dir_fd).c_str(), at.data(), at.size() - 1);
  std::ifstream in("/proc/self/mountinfo");
  if (n <= 0 || !in) return false;
  const std::string dir_path(at.data(), static_cast<std::size_t>(n));
  std::ostringstream mountinfo;
  mountinfo << in.rdbuf();
  return listed_as_mount_point(mountinfo.str(), (dir_path == "/" ? "" : dir_path) + "/" + t.base);
}

// A mount point is opened now and written in place at the end (write_through).
Expected<void> open_in_place(Target& t) {
  t.fd = ::openat(t.dir_fd, t.base.c_str(), O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
  if (t.fd < 0) {
    return Unexpected{
        failure(t, "cannot open it (a mount point, written in place): " + error_string(errno))};
  }
  t.owns_fd = true;
  struct stat now {};
  if (::fstat(t.fd, &now) != 0 || !S_ISREG(now.st_mode) || now.st_dev != t.old.st_dev ||
      now.st_ino != t.old.st_ino) {
    return Unexpected{failure(t, "was replaced by something else while it was being checked")};
  }
  t.kind = Kind::mount_point;
  return {};
}

// Replace only what the user may write (its mode, its owner, ACLs), as the shell's `>` would.
Expected<void> check_writable(const Target& t) {
  if (::faccessat(t.dir_fd, t.base.c_str(), W_OK, AT_EACCESS) == 0) return {};
  return Unexpected{failure(
      t, fmt::format("cannot replace it: you may not write it (mode {:04o}, owner uid {}): {}; "
                     "write the report elsewhere, or make the file writable",
                     t.old.st_mode & 07777, t.old.st_uid, error_string(errno)))};
}

// A file's unnamed temporary (or, where the file system has none, a check that a file can be
// created in its directory); a mount point opened to be written in place.
Expected<void> open_file(Target& t) {
  if (t.existed) {
    if (Expected<void> writable = check_writable(t); !writable) return writable;
    if (is_mount_point(t)) return open_in_place(t);
  }
  struct stat dir {};
  if (t.existed && ::geteuid() != 0 && ::fstat(t.dir_fd, &dir) == 0 &&
      (dir.st_mode & S_ISVTX) != 0 && t.old.st_uid != ::geteuid() && dir.st_uid != ::geteuid()) {
    return Unexpected{
        failure(t, "cannot replace it: it belongs to another user, in a sticky directory")};
  }
  t.fd = ::openat(t.dir_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (t.fd >= 0) {
    t.owns_fd = true;
    return {};
  }
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOENT) {
    return Unexpected{failure(t, "cannot create a file in its directory: " + error_string(errno))};
  }
  // No unnamed temporaries here: check now that a file can be created, make it when delivering.
  t.named_temporary = true;
  const std::string probe = random_name();
  int slot = register_pending(t.dir_fd, probe);
  const int fd = ::openat(t.dir_fd, probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  const int saved = errno;
  if (fd >= 0) {
    ::close(fd);
    ::unlinkat(t.dir_fd, probe.c_str(), 0);
  }
  unregister_pending(slot);
  if (fd < 0)
    return Unexpected{failure(t, "cannot create a file in its directory: " + error_string(saved))};
  return {};
}

// A character device or a FIFO, opened without blocking: a FIFO without a reader is an error now,
// not a hang, and a device whose poll never says it takes data is written at once (a full one is
// waited on). Opened in the directory the walk found, never through a link.
Expected<void> open_stream(Target& t, const struct stat& st) {
  t.fd =
      ::openat(t.dir_fd, t.base.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (t.fd < 0) {
    return Unexpected{failure(t, errno == ENXIO && S_ISFIFO(st.st_mode)
                                     ? std::string("no process is reading the FIFO")
                                     : error_string(errno))};
  }
  t.owns_fd = true;
  struct stat now {};
  if (::fstat(t.fd, &now) != 0 || (now.st_mode & S_IFMT) != (st.st_mode & S_IFMT) ||
      now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
    return Unexpected{failure(t, "was replaced by something else while it was being checked")};
  }
  return {};
}

// A descriptor the probe was given (/dev/stdout, /dev/fd/N): open when the probe started, open
// for writing, not a directory.
Expected<void> check_descriptor(const Target& t, int number, const StandardStreams& streams) {
  if (number == 1 && streams.out_closed)
    return Unexpected{"stdout is closed (give -o FILE, or -q)"};
  if (std::find(streams.inherited.begin(), streams.inherited.end(), number) ==
      streams.inherited.end()) {
    return Unexpected{fmt::format("descriptor {} was not given to the probe", number)};
  }
  const int flags = ::fcntl(t.fd, F_GETFL);
  struct stat st {};
  if (flags < 0 || ::fstat(t.fd, &st) != 0)
    return Unexpected{fmt::format("descriptor {} is not open", number)};
  if (S_ISDIR(st.st_mode)) return Unexpected{fmt::format("descriptor {} is a directory", number)};
  if ((flags & O_ACCMODE) == O_RDONLY) {
    return Unexpected{fmt::format("descriptor {} is not open for writing", number)};
  }
  return {};
}

Expected<void> prepare_standard_stream(Target& t, int number, const StandardStreams& streams,
                                       const std::string& quiet_flag) {
  t.fd_number = number;
  t.fd = number == 1 ? streams.out_fd : number == 2 ? streams.err_fd : number;
  t.stdout = number == 1;
  if (t.stdout && !quiet_flag.empty()) {
    return Unexpected{fmt::format("{} keeps stdout silent, but {} {} writes to it", quiet_flag,
                                  t.request.flag, shown(t))};
  }
  if (Expected<void> usable = check_descriptor(t, number, streams); !usable) {
    return Unexpected{failure(t, usable.error())};
  }
  struct stat st {};
  // Stdout redirected to a file is that file: naming it again would write it twice.
  if (::fstat(t.fd, &st) == 0 && S_ISREG(st.st_mode)) {
    t.identity = fmt::format("{}:{}:", st.st_dev, st.st_ino);
  }
  return {};
}

Expected<void> prepare_target(Target& t, const StandardStreams& streams,
                              const std::string& quiet_flag) {
  if (t.request.path.empty()) return Unexpected{t.request.flag + ": empty file name"};
  Walk walk;
  Expected<Resolved> resolved =
      t.request.path == "-" ? Walk::standard_stream(1) : walk.run(t.request.path);
  if (!resolved) return Unexpected{failure(t, resolved.error())};
  Resolved& r = *resolved;
  t.kind = r.kind;
  t.dir_fd = r.dir_fd;  // the target's to close from here
  t.base = std::move(r.base);
  if (r.kind == Kind::standard_stream) {
    return prepare_standard_stream(t, r.fd_number, streams, quiet_flag);
  }
  if (r.kind == Kind::stream) return open_stream(t, r.st);
  t.existed = r.exists;
  t.old = r.st;
  if (Expected<void> done = open_file(t); !done) return done;
  struct stat st = t.old;
  if (!t.existed) ::fstat(t.dir_fd, &st);
  t.identity = fmt::format("{}:{}:{}", st.st_dev, st.st_ino, t.existed ? "" : t.base);
  return {};
}

// Two targets that would write one file twice: the same regular file (by any spelling), or the
// same descriptor. Streams that share a terminal or a pipe (stdout and stderr) are not that.
bool same_target(const Target& a, const Target& b) {
  if (a.fd_number >= 0 && a.fd_number == b.fd_number) return true;
  return !a.identity.empty() && a.identity == b.identity;
}

// --- The run's targets -------------------------------------------------------------------------

class Prepared final : public PreparedOutputs {
 public:
  Prepared(std::vector<Target> targets, const StandardStreams& streams)
      : targets_(std::move(targets)), streams_(streams) {}
  Prepared(const Prepared&) = delete;
  Prepared& operator=(const Prepared&) = delete;
  ~Prepared() override {
    for (Target& t : targets_) {
      discard(t);
      if (t.owns_fd && t.fd >= 0) ::close(t.fd);
      if (t.dir_fd >= 0) ::close(t.dir_fd);
    }
  }

  Expected<void> deliver(const std::vector<std::string>& contents,
                         std::chrono::steady_clock::time_point deadline, bool& stdout_failed,
                         const std::function<bool()>& stop) override {
    stdout_failed = false;
    // The files' new content first, in their unnamed temporaries: nothing is replaced yet.
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      if (targets_[i].kind != Kind::file || targets_[i].left_as_is) continue;
      if (Expected<void> filled = fill(targets_[i], contents[i]); !filled) {
        abandon();
        return filled;
      }
    }
    // The streams but stdout, and the mount points: one that fails leaves every file as it was.
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      if (targets_[i].kind == Kind::file || targets_[i].stdout || targets_[i].left_as_is) continue;
      if (Expected<void> written = write_through(targets_[i], contents[i], deadline, stop);
          !written) {
        abandon();
        return written;
      }
    }
    // The files, together: the old contents' names last only until every one is in place.
    for (Target& t : targets_) {
      if (t.kind != Kind::file || t.left_as_is) continue;
      if (Expected<void> committed = commit(t); !committed) {
        abandon();
        return committed;
      }
    }
    for (Target& t : targets_) finish(t);
    // Stdout last, so that it can still say what failed before it.
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      if (!targets_[i].stdout || targets_[i].left_as_is) continue;
      if (Expected<void> written = write_all(targets_[i].fd, contents[i], deadline, stop);
          !written) {
        stdout_failed = true;
        return Unexpected{failure(targets_[i], written.error())};
      }
    }
    return {};
  }

  bool holds_a_file(std::size_t i) const override {
    const Target& t = targets_.at(i);
    return t.kind == Kind::mount_point || (t.kind == Kind::file && t.existed);
  }

  void leave_as_is(std::size_t i) override { targets_.at(i).left_as_is = true; }

 private:
  // Writes to a stream, or over a mount point in place: the whole content, then the file cut to
  // its length and flushed (a reader may see it half-written meanwhile).
  static Expected<void> write_through(const Target& t, const std::string& content,
                                      std::chrono::steady_clock::time_point deadline,
                                      const std::function<bool()>& stop) {
    if (Expected<void> written = write_all(t.fd, content, deadline, stop); !written) {
      return Unexpected{failure(t, written.error())};
    }
    if (t.kind != Kind::mount_point) return {};
    if (::ftruncate(t.fd, static_cast<off_t>(content.size())) != 0) {
      return Unexpected{failure(t, "cannot cut it to the report's length: " + error_string(errno))};
    }
    if (::fsync(t.fd) != 0) return Unexpected{failure(t, "cannot flush: " + error_string(errno))};
    return {};
  }

  // Writes a file's new content into its temporary, with the old file's mode (and owner, as
  // root), and makes it durable.
  Expected<void> fill(Target& t, const std::string& content) {
    if (t.named_temporary) {
      t.temp = random_name();
      t.temp_slot = register_pending(t.dir_fd, t.temp);
      t.fd = ::openat(t.dir_fd, t.temp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
      if (t.fd < 0) {
        std::string problem = failure(t, "cannot create a temporary file: " + error_string(errno));
        unregister_pending(t.temp_slot);
        t.temp.clear();
        return Unexpected{problem};
      }
      t.owns_fd = true;
    }
    if (Expected<void> written = write_all(t.fd, content); !written) {
      return Unexpected{failure(t, written.error())};
    }
    if (t.existed) {
      // Its owner as root; its group where the user may give it (one of the user's groups).
      // Best effort: the content matters.
      if (::geteuid() == 0 && (t.old.st_uid != 0 || t.old.st_gid != 0)) {
        (void)::fchown(t.fd, t.old.st_uid, t.old.st_gid);
      } else if (::geteuid() != 0 && t.old.st_gid != ::getegid()) {
        (void)::fchown(t.fd, static_cast<uid_t>(-1), t.old.st_gid);
      }
      (void)::fchmod(t.fd, t.old.st_mode & 07777);
    }
    if (::fsync(t.fd) != 0) return Unexpected{failure(t, "cannot flush: " + error_string(errno))};
    return {};
  }

  // Gives an unnamed temporary a short name in the target's directory (any length of target name
  // works: the temporary name does not grow with it).
  Expected<void> name_temporary(Target& t) {
    if (t.named_temporary) return {};
    const std::string by_fd = fmt::format("/proc/self/fd/{}", t.fd);
    for (int attempt = 0; attempt < 8; ++attempt) {
      t.temp = random_name();
      t.temp_slot = register_pending(t.dir_fd, t.temp);
      // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc/self/fd works for everyone else.
      if (::linkat(t.fd, "", t.dir_fd, t.temp.c_str(), AT_EMPTY_PATH) == 0 ||
          ::linkat(AT_FDCWD, by_fd.c_str(), t.dir_fd, t.temp.c_str(), AT_SYMLINK_FOLLOW) == 0) {
        return {};
      }
      const int saved = errno;
      unregister_pending(t.temp_slot);
      t.temp.clear();
      if (saved != EEXIST)
        return Unexpected{failure(t, "cannot link the new report in: " + error_string(saved))};
    }
    return Unexpected{failure(t, "cannot find a free temporary name")};
  }

  Expected<void> commit(Target& t) {
    if (Expected<void> done = name_temporary(t); !done) return done;
    struct stat now {};
    const bool exists = ::fstatat(t.dir_fd, t.base.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0;
    if (exists && !S_ISREG(now.st_mode))
      return Unexpected{failure(t, "was replaced by something else during the run")};
    if (exists &&
        ::renameat2(t.dir_fd, t.temp.c_str(), t.dir_fd, t.base.c_str(), RENAME_EXCHANGE) == 0) {
      t.commit = Commit::exchanged;  // the temporary's name now holds the old content
      t.backup = t.temp;
      t.backup_slot = t.temp_slot;
      t.temp.clear();
      t.temp_slot = -1;
      return {};
    }
    if (!exists &&
        ::renameat2(t.dir_fd, t.temp.c_str(), t.dir_fd, t.base.c_str(), RENAME_NOREPLACE) == 0) {
      t.commit = Commit::created;
      unregister_pending(t.temp_slot);
      t.temp.clear();
      return {};
    }
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) {
      return Unexpected{failure(t, "cannot replace it: " + error_string(errno))};
    }
    // No exchange on this file system: keep the old file under a second name (a hard link),
    // then rename over it.
    if (exists) {
      t.backup = random_name();
      t.backup_slot = register_pending(t.dir_fd, t.backup);
      if (::linkat(t.dir_fd, t.base.c_str(), t.dir_fd, t.backup.c_str(), 0) != 0) {
        unregister_pending(t.backup_slot);
        t.backup.clear();  // no hard links here either: this replacement cannot be undone
      }
    }
    if (::renameat(t.dir_fd, t.temp.c_str(), t.dir_fd, t.base.c_str()) != 0) {
      return Unexpected{failure(t, "cannot replace it: " + error_string(errno))};
    }
    unregister_pending(t.temp_slot);
    t.temp.clear();
    t.commit = !exists ? Commit::created : t.backup.empty() ? Commit::replaced : Commit::backed_up;
    return {};
  }

  // Puts every committed file back as it was and removes every temporary.
  void abandon() {
    for (auto it = targets_.rbegin(); it != targets_.rend(); ++it) {
      Target& t = *it;
      switch (t.commit) {
        case Commit::exchanged:
          if (::renameat2(t.dir_fd, t.backup.c_str(), t.dir_fd, t.base.c_str(), RENAME_EXCHANGE) !=
              0) {
            ::renameat(t.dir_fd, t.backup.c_str(), t.dir_fd, t.base.c_str());
          }
          break;
        case Commit::backed_up:
          ::renameat(t.dir_fd, t.backup.c_str(), t.dir_fd, t.base.c_str());
          break;
        case Commit::created: ::unlinkat(t.dir_fd, t.base.c_str(), 0); break;
        case Commit::replaced:  // documented: the one case that cannot be undone
        case Commit::none: break;
      }
      t.commit = Commit::none;
      discard(t);
    }
  }

  // Ends a committed file: the old content's name goes, and the directory is made durable.
  void finish(Target& t) {
    if (t.kind != Kind::file) return;
    discard(t);
    ::fsync(t.dir_fd);
    t.commit = Commit::none;
  }

  static void discard(Target& t) {
    if (!t.temp.empty()) ::unlinkat(t.dir_fd, t.temp.c_str(), 0);
    if (!t.backup.empty()) ::unlinkat(t.dir_fd, t.backup.c_str(), 0);
    t.temp.clear();
    t.backup.clear();
    unregister_pending(t.temp_slot);
    unregister_pending(t.backup_slot);
  }

  std::vector<Target> targets_;
  StandardStreams streams_;
};

}  // namespace

bool listed_as_mount_point(const std::string& mountinfo, const std::string& path) {
  // A field's octal escapes (space \040, tab \011, newline \012, backslash \134) undone.
  const auto unescaped = [](const std::string& field) {
    std::string text;
    for (std::size_t i = 0; i < field.size(); ++i) {
      const auto digit = [&field](std::size_t at) { return field[at] >= '0' && field[at] <= '7'; };
      if (field[i] == '\\' && i + 3 < field.size() && digit(i + 1) && digit(i + 2) &&
          digit(i + 3)) {
        text += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                  (field[i + 3] - '0'));
        i += 3;
      } else {
        text += field[i];
      }
    }
    return text;
  };
  std::istringstream lines(mountinfo);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string field;
    int read = 0;
    while (read < 5 && fields >> field) ++read;  // the fifth field: the mount point
    if (read == 5 && unescaped(field) == path) return true;
  }
  return false;
}

bool stdout_is_named(const std::vector<OutputRequest>& requests, const StandardStreams& streams) {
  struct stat out {};
  if (streams.out_closed || ::fstat(streams.out_fd, &out) != 0 || !S_ISREG(out.st_mode)) {
    return false;
  }
  return std::any_of(requests.begin(), requests.end(), [&out](const OutputRequest& r) {
    struct stat st {};
    return r.path != "-" && ::stat(r.path.c_str(), &st) == 0 && st.st_dev == out.st_dev &&
           st.st_ino == out.st_ino;
  });
}

Expected<std::unique_ptr<PreparedOutputs>> prepare_outputs(
    const std::vector<OutputRequest>& requests, const StandardStreams& streams,
    const std::string& quiet_flag) {
  if (requests.size() > kMaxOutputs) {
    return Unexpected{
        fmt::format("{} outputs asked for; at most {}", requests.size(), kMaxOutputs)};
  }
  std::vector<Target> targets(requests.size());
  Expected<void> prepared;
  for (std::size_t i = 0; i < requests.size() && prepared; ++i) {
    targets[i].request = requests[i];
    prepared = prepare_target(targets[i], streams, quiet_flag);
    for (std::size_t j = 0; j < i && prepared; ++j) {
      if (!same_target(targets[j], targets[i])) continue;
      prepared =
          Unexpected{requests[j].flag == requests[i].flag
                         ? fmt::format("{} names one file twice ({} and {})", requests[i].flag,
                                       shown(targets[j]), shown(targets[i]))
                         : fmt::format("{} and {} name the same file ({})", requests[j].flag,
                                       requests[i].flag, shown(targets[i]))};
    }
  }
  // Made either way: a refusal closes what was opened.
  auto outputs = std::make_unique<Prepared>(std::move(targets), streams);
  if (!prepared) return Unexpected{prepared.error()};
  return std::unique_ptr<PreparedOutputs>(std::move(outputs));
}

}  // namespace precision_probe
