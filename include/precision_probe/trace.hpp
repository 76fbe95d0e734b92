#pragma once
// Phase timings for tuning start-up: with PRECISION_PROBE_TRACE=1 set, trace() prints
// "trace: <program> <ms since the process started> <what>" to stderr. The start is the kernel's
// start time of the process, so dynamic loading before main() is counted. A no-op otherwise.

#include <string_view>

namespace precision_probe {

void trace(std::string_view what);
bool tracing();

}  // namespace precision_probe
