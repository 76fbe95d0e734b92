#pragma once
// The reports a summary reads: files, the *.json files of directories, or JSON Lines on standard
// input ("-"), read and parsed on every core, each cut down to its NodeRecord at once so that ten
// thousand reports never stand in memory together.

#include <string>
#include <vector>

#include "probe/fleet/summary.hpp"

namespace precision_probe {

// The largest report file (or line) read; a larger one is unreadable, not read.
inline constexpr std::size_t kMaxReportBytes = std::size_t{64} << 20;

// Reads every source in order (a directory's *.json files sorted by name) with up to `threads`
// threads (0: one per core; fewer where no more can be started, down to this one). A source that
// cannot be read or parsed is in `unreadable` with why; `stdin_fd` is read for "-". `required`: the
// modes each node's requirements are judged for (NodeRecord::requirements).
FleetInputs read_fleet_reports(const std::vector<std::string>& sources, int stdin_fd,
                               const std::vector<Mode>& required, unsigned threads = 0);

}  // namespace precision_probe
