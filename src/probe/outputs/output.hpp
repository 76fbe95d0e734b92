#pragma once
// Delivering the reports of a run: to stdout and to files, so that nothing is ever destroyed and
// no failure goes unnoticed. A regular file (or a path that does not exist yet) is replaced
// atomically, all the files of a run together or none. The path is walked one name at a time and
// its symbolic links followed here, under the kernel's protected_symlinks rule whatever the sysctl
// says: the target of a link is replaced, not the link, except that a link in a sticky
// world-writable directory (/tmp) is followed only where it is the user's or the directory
// owner's, and a dangling one there is refused. A character device (/dev/null, a terminal), a
// FIFO and the descriptors the probe was given (/dev/stdout, /dev/fd/N) are written through: they
// are never replaced; a regular file that is a mount point (bind-mounted on its own) is written
// in place, then cut to its length. Every target is opened and checked before the run (prepare),
// so that bad output paths are usage errors found at once; deliver() then writes every report and
// checks every write. docs/reliability.md has the rules.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "process/io.hpp"
#include "precision_probe/expected.hpp"

namespace precision_probe {

// Where one report goes. `path` "-" is stdout.
struct OutputRequest {
  std::string path;
  std::string flag;  // the option as typed ("-o", "--json", "--output-as"), for messages
};

// The file descriptors the probe writes to as its stdout and stderr, whether stdout was closed
// when the probe started (its descriptor then holds /dev/null, so that nothing else is opened in
// its place), and the descriptors it was given (open when it started: /dev/fd/N may name only
// those).
struct StandardStreams {
  int out_fd = 1;
  int err_fd = 2;
  bool out_closed = false;
  std::vector<int> inherited = {0, 1, 2};
};

// The most outputs one run takes: each may have a temporary file and a backup at once.
inline constexpr std::size_t kMaxOutputs = 32;
static_assert(2 * kMaxOutputs + 8 <= kMaxTemporaries, "platform/io.hpp holds every output's names");

class PreparedOutputs {
 public:
  virtual ~PreparedOutputs() = default;
  // Writes contents[i] to the i-th request's target, before `deadline` and before `stop` says
  // so (a signal while a reader does not read): first the streams other than stdout, then the
  // regular files (replaced together, or not at all: a stream that failed leaves them as they
  // were), then stdout; where one fails, what failed (one line). `stdout_failed` tells whether
  // the failure was on stdout itself (then nothing more can be printed there).
  virtual Expected<void> deliver(const std::vector<std::string>& contents,
                                 std::chrono::steady_clock::time_point deadline,
                                 bool& stdout_failed,
                                 const std::function<bool()>& stop = nullptr) = 0;
  // Whether the i-th target is a file that exists (a delivery would replace what is there).
  virtual bool holds_a_file(std::size_t i) const = 0;
  // Leaves the i-th target as it is: deliver() writes nothing there.
  virtual void leave_as_is(std::size_t i) = 0;
};

// Checks and opens every target: a directory, a block device, a socket, a FIFO without a
// reader, a closed stdout, a descriptor the probe was not given, an unwritable directory, one file
// named twice (by any spelling), or stdout when `quiet_flag` (-q or --quiet, as typed) is given,
// are refused here, before anything runs: a usage error, one line.
Expected<std::unique_ptr<PreparedOutputs>> prepare_outputs(
    const std::vector<OutputRequest>& requests, const StandardStreams& streams,
    const std::string& quiet_flag = "");

// Whether stdout is a regular file that one of `requests` names too (`--json r.json >> r.json`):
// a refusal then leaves stdout, that file, as it was (no error document written to it).
bool stdout_is_named(const std::vector<OutputRequest>& requests, const StandardStreams& streams);

// Whether `path` (absolute, as /proc/self/fd/N's link says) is a mount point that `mountinfo`
// (/proc/self/mountinfo's text) lists: its fifth field, octal escapes (\040) undone. The way a
// file bind-mounted on its own is found where statx has no STATX_ATTR_MOUNT_ROOT (before Linux
// 5.8) and the mount keeps its directory's st_dev.
bool listed_as_mount_point(const std::string& mountinfo, const std::string& path);

}  // namespace precision_probe
