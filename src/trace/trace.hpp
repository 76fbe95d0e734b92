#pragma once
// Phase timings for tuning start-up: with PRECISION_PROBE_TRACE=1 set, trace() prints
// "trace: <program> <ms since the process started> <what>" to stderr. The start is the kernel's
// start time of the process, so dynamic loading before main() is counted. A no-op otherwise.

#include <string_view>

namespace precision_probe {

void trace(std::string_view what);
// The same, for something that happened at `at_boot_ms`, a time boot_clock_ms() gave earlier.
void trace_at(double at_boot_ms, std::string_view what);
bool tracing();
// Where trace() writes: stderr (fd 2) unless the program moved it (the engine, whose fd 2 holds
// what LibTorch logs).
void set_trace_fd(int fd);
// The clock trace() counts on: CLOCK_BOOTTIME in milliseconds. A plain system call, so it may be
// read before main().
double boot_clock_ms();

}  // namespace precision_probe
