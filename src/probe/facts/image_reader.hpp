#pragma once
// The image's PyTorch read where a hang is contained. O_NONBLOCK keeps a FIFO from holding a
// reader, but not a file system that does not answer (a hard network mount): there `stat`, `open`
// and `read` sleep in the kernel and nothing in the process can cut them short. So the probe reads
// the tree in a child, its own executable started as `precision-probe --image-reader`, which runs
// search_image_torch (torch_files.hpp), prints what it found as one JSON line and exits; the probe
// kills it at the run's deadline or when an interrupt arrives, as it does the driver's queries
// (driver_agent.hpp), and checks its answer before using it. Where the search needs to ask the
// python3 on PATH, the child says so and the probe asks (bounded the same way) and starts a second
// reading with the answer, so that nothing the reader started can outlive it.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "precision_probe/results.hpp"

namespace precision_probe {

// The argument that makes the probe's executable an image reader.
inline constexpr std::string_view kImageReaderFlag = "--image-reader";

// The image's stack as find_image_torch gives it, read in a child of `self_exe` killed at
// `deadline` (the run's, `timeout_s` after its start) or when SIGINT/SIGTERM arrives. A reading
// that did not end is a stack that is not available, with `read_failure` timed_out (exit 5),
// not_run (interrupted) or crashed (the child died or answered what cannot be), and `error`
// saying so: for a timeout, with the last path the child was at.
std::optional<StackInfo> read_image_torch(const std::string& self_exe,
                                          std::chrono::steady_clock::time_point deadline,
                                          double timeout_s);

// The child's side: `args` are what follows the flag (none, or the python3 already asked and the
// prefixes it gave). Prints the answer on stdout, each path it is about to look at on stderr
// (so that a hang can be named), and returns the exit code. It ends with its parent.
int run_image_reader(int argc, const char* const* args);

}  // namespace precision_probe
