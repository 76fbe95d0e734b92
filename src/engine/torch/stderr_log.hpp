#pragma once
// LibTorch before 2.13 reports a failed C call only by logging it: "[E... shim_common.cpp:N]
// Exception in aoti_torch: <message>", then its C++ backtrace, on stderr. To give each failure its
// message, the worker's stderr (fd 2) becomes an anonymous file that the worker reads after a
// failure; everything written there is passed on to the real stderr (the probe keeps its tail),
// also when the worker dies of a signal. The engine's own messages go to the real stderr.
//
// Process-wide state (the signal handler needs it), set up once by the worker's main().

#include <string>

namespace precision_probe::engine {

// Redirects fd 2; returns the descriptor of the real stderr (2 where it could not redirect).
int capture_stderr();

// The message of the last "Exception in aoti_torch: " line LibTorch logged since the previous
// call (its first line: no backtrace); "" when there is none. Passes the new output on.
std::string take_logged_exception();

// Passes on what LibTorch logged and was not yet passed on (at exit).
void forward_stderr();

}  // namespace precision_probe::engine
