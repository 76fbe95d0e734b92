#pragma once
// The reports a summary reads: files, the *.json files of directories, or JSON Lines on standard
// input ("-"), read and parsed on every core, each cut down to its NodeRecord at once so that ten
// thousand reports never stand in memory together. Standard input is read as it comes, a batch of
// lines at a time. Only regular files are read: anything else (a FIFO, a device) is refused
// without blocking.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "probe/fleet/summary.hpp"

namespace precision_probe {

// The largest report file (or line) read; a larger one is unreadable, not read.
inline constexpr std::size_t kMaxReportBytes = std::size_t{64} << 20;

// A file by its device and inode: two spellings of one file (a link, "./x") are one identity.
struct FileIdentity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  bool operator==(const FileIdentity& o) const { return device == o.device && inode == o.inode; }
};

struct FleetReadOptions {
  std::vector<Mode> required;  // the modes each node's requirements are judged for
  unsigned threads = 0;        // 0: one per core (fewer where no more can be started)
  // Asked between reports and while standard input is awaited: true ends the reading at once
  // (FleetInputs::stopped). Called from every reading thread.
  std::function<bool()> stop;
  // The summary's own output file, where it exists: named among the sources (or as standard
  // input) it is FleetInputs::conflict before anything is read; found in a directory, it is
  // skipped when it holds a summary, else it is the conflict.
  std::optional<FileIdentity> output;
};

// Reads every source in order (a directory's *.json files sorted by name). A source that cannot
// be read or parsed is in `unreadable` with why, a summary document in `skipped`; `stdin_fd` is
// read for "-".
FleetInputs read_fleet_reports(const std::vector<std::string>& sources, int stdin_fd,
                               const FleetReadOptions& options);

}  // namespace precision_probe
