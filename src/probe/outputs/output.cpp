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
#include <optional>
#include <set>

#include <fmt/format.h>

#include "common/strings.hpp"

namespace precision_probe {

namespace {

// --- Classifying a target ------------------------------------------------------------------------

enum class Kind { standard_stream, stream, file };

struct Resolved {
  Kind kind = Kind::file;
  int fd_number = -1;  // standard_stream: /dev/stdout is 1
  std::string path;    // symbolic links followed
  bool exists = false;
  struct stat st {};
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

// What `path` names, symbolic links followed, or why no report can be written there.
Expected<Resolved> resolve(std::string path) {
  Resolved r;
  for (int hops = 0; hops < 40; ++hops) {
    if (const auto fd = descriptor_named(path)) {
      if (*fd == 0) return Unexpected{"is standard input"};
      r.kind = Kind::standard_stream;
      r.fd_number = *fd;
      return r;
    }
    r.path = path;
    if (::lstat(path.c_str(), &r.st) != 0) {
      if (errno == ENOENT) return r;  // a new file (its directory is checked when it is opened)
      return Unexpected{error_string(errno)};
    }
    r.exists = true;
    if (S_ISLNK(r.st.st_mode)) {
      std::array<char, PATH_MAX> target{};
      const ssize_t n = ::readlink(path.c_str(), target.data(), target.size() - 1);
      if (n <= 0) return Unexpected{"cannot read the symbolic link: " + error_string(errno)};
      std::string next(target.data(), static_cast<std::size_t>(n));
      path = next.front() == '/' ? next : directory_of(path).append("/").append(next);
      r.exists = false;
      continue;
    }
    if (S_ISREG(r.st.st_mode)) return r;
    if (S_ISCHR(r.st.st_mode) || S_ISFIFO(r.st.st_mode)) {
      r.kind = Kind::stream;
      return r;
    }
    if (S_ISDIR(r.st.st_mode)) return Unexpected{"is a directory"};
    if (S_ISBLK(r.st.st_mode)) {
      return Unexpected{"is a block device (a report is never written onto a disk)"};
    }
    return Unexpected{"is a socket or another special file"};
  }
  return Unexpected{"too many levels of symbolic links"};
}

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
  int fd = -1;           // the stream, or the file's unnamed temporary (O_TMPFILE)
  bool owns_fd = false;  // opened here (closed at the end)
  int fd_number = -1;    // a descriptor the probe was given: /dev/stdout is 1
  bool stdout = false;   // written last
  std::string identity;  // a regular file's device and inode (and name, for a new one): two
                         // spellings of one file are one identity; "" for a stream
  // Regular files:
  std::string path, dir, base;
  int dir_fd = -1;
  bool existed = false;
  struct stat old {};
  bool named_temporary = false;  // no O_TMPFILE on this file system: a named one, made late
  std::string temp;              // the name the new content has in `dir` while committing
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

// A file's unnamed temporary (or, where the file system has none, a check that a file can be
// created in its directory).
Expected<void> open_file(Target& t) {
  t.dir = directory_of(t.path);
  t.base = t.path.substr(t.path.rfind('/') == std::string::npos ? 0 : t.path.rfind('/') + 1);
  if (t.base.empty() || t.base == "." || t.base == "..")
    return Unexpected{failure(t, "not a file name")};
  t.dir_fd = ::open(t.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (t.dir_fd < 0) {
    return Unexpected{
        failure(t, fmt::format("directory {}: {}", printable_path(t.dir), error_string(errno)))};
  }
  struct stat dir {};
  if (t.existed && ::geteuid() != 0 && ::fstat(t.dir_fd, &dir) == 0 &&
      (dir.st_mode & S_ISVTX) != 0 && t.old.st_uid != ::geteuid() && dir.st_uid != ::geteuid()) {
    return Unexpected{
        failure(t, "cannot replace it: it belongs to another user, in a sticky directory")};
  }
  // Replace only what the user may write (its mode, its owner, ACLs), as the shell's `>` would.
  if (t.existed && ::faccessat(t.dir_fd, t.base.c_str(), W_OK, AT_EACCESS) != 0) {
    return Unexpected{failure(
        t, fmt::format("cannot replace it: you may not write it (mode {:04o}, owner uid {}): {}; "
                       "write the report elsewhere, or make the file writable",
                       t.old.st_mode & 07777, t.old.st_uid, error_string(errno)))};
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

Expected<void> prepare_target(Target& t, const StandardStreams& streams,
                              const std::string& quiet_flag) {
  if (t.request.path.empty()) return Unexpected{t.request.flag + ": empty file name"};
  const Expected<Resolved> resolved = t.request.path == "-"
                                          ? Resolved{Kind::standard_stream, 1, "", false, {}}
                                          : resolve(t.request.path);
  if (!resolved) return Unexpected{failure(t, resolved.error())};
  const Resolved& r = *resolved;
  t.kind = r.kind;
  struct stat st {};
  if (r.kind == Kind::standard_stream) {
    t.fd_number = r.fd_number;
    t.fd = r.fd_number == 1 ? streams.out_fd : r.fd_number == 2 ? streams.err_fd : r.fd_number;
    t.stdout = r.fd_number == 1;
    if (t.stdout && !quiet_flag.empty()) {
      return Unexpected{fmt::format("{} keeps stdout silent, but {} {} writes to it", quiet_flag,
                                    t.request.flag, shown(t))};
    }
    if (Expected<void> usable = check_descriptor(t, r.fd_number, streams); !usable) {
      return Unexpected{failure(t, usable.error())};
    }
    ::fstat(t.fd, &st);
    // Stdout redirected to a file is that file: naming it again would write it twice.
    if (S_ISREG(st.st_mode)) t.identity = fmt::format("{}:{}:", st.st_dev, st.st_ino);
    return {};
  }
  if (r.kind == Kind::stream) {
    // A FIFO is opened without blocking: no reader is an error now, not a hang.
    const bool fifo = S_ISFIFO(r.st.st_mode);
    // Any other stream too (a character device): opened and written without blocking, so that
    // one whose poll never says it takes data is written at once, and a full one is waited on.
    t.fd = ::open(r.path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (t.fd < 0) {
      return Unexpected{failure(t, errno == ENXIO && fifo
                                       ? std::string("no process is reading the FIFO")
                                       : error_string(errno))};
    }
    t.owns_fd = true;
    return {};
  }
  t.path = r.path;
  t.existed = r.exists;
  t.old = r.st;
  if (Expected<void> done = open_file(t); !done) return done;
  if (t.existed) {
    st = t.old;
  } else {
    ::fstat(t.dir_fd, &st);
  }
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
    // The streams but stdout: one that fails leaves every file as it was.
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      if (targets_[i].kind == Kind::file || targets_[i].stdout || targets_[i].left_as_is) continue;
      if (Expected<void> written = write_all(targets_[i].fd, contents[i], deadline, stop);
          !written) {
        abandon();
        return Unexpected{failure(targets_[i], written.error())};
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
    return t.kind == Kind::file && t.existed;
  }

  void leave_as_is(std::size_t i) override { targets_.at(i).left_as_is = true; }

 private:
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
