#pragma once
// Delivering the reports of a run: to stdout and to files, so that nothing is ever destroyed and
// no failure goes unnoticed. A regular file (or a path that does not exist yet) is replaced
// atomically, all the files of a run together or none; the target of a symbolic link is replaced,
// not the link. A character device (/dev/null, a terminal), a FIFO and the standard streams
// (/dev/stdout, /dev/fd/N) are written through: they are never replaced. Every target is opened
// and checked before the run (prepare), so that bad output paths are usage errors found at once;
// deliver() then writes every report and checks every write. docs/reliability.md has the rules.

#include <memory>
#include <string>
#include <vector>

namespace precision_probe {

// Where one report goes. `path` "-" is stdout.
struct OutputRequest {
  std::string path;
  std::string flag;  // the option as typed ("-o", "--json", "--output-as"), for messages
};

// The file descriptors the probe writes to as its stdout and stderr, and whether stdout was
// closed when the probe started (its descriptor then holds /dev/null, so that nothing else is
// opened in its place).
struct StandardStreams {
  int out_fd = 1;
  int err_fd = 2;
  bool out_closed = false;
};

class PreparedOutputs {
 public:
  virtual ~PreparedOutputs() = default;
  // Writes contents[i] to the i-th request's target. Regular files are replaced together or not
  // at all; streams are written through after them and a stream that fails puts the files back as
  // they were. Returns "" on success, else what failed (one line). `stdout_failed` tells whether
  // the failure was on stdout itself (then nothing more can be printed there).
  virtual std::string deliver(const std::vector<std::string>& contents, bool& stdout_failed) = 0;
};

struct PreparedOutputsResult {
  std::unique_ptr<PreparedOutputs> outputs;
  std::string error;  // a usage error, one line, when a target cannot be written
};

// Checks and opens every target: a directory, a block device, a socket, a FIFO without a
// reader, a closed stdout, an unwritable directory, or one file named twice (by any spelling)
// are refused here, before anything runs.
PreparedOutputsResult prepare_outputs(const std::vector<OutputRequest>& requests,
                                      const StandardStreams& streams);

// Writes all of `data` to `fd`, through EINTR, and through EAGAIN on a non-blocking descriptor
// (waiting up to 30 s for the reader). Returns "" or the error text.
std::string write_all(int fd, const std::string& data);

// The paths of temporary files that exist right now (an output being committed), for a signal
// handler that must remove them before the process ends. Async-signal-safe.
void remove_pending_temporaries() noexcept;

}  // namespace precision_probe
