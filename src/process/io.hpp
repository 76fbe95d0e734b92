#pragma once
// Writing to a descriptor with a deadline, and the temporary files that exist while a file is
// replaced, which the signal handlers (process.cpp) remove before the process ends. Here, below
// every layer that writes (outputs, the driver agent, the image reader), as the handlers are.

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "precision_probe/expected.hpp"

namespace precision_probe {

// Writes all of `data` to `fd`, through EINTR and partial writes, waiting while the reader does
// not read, until `deadline` or until `stop` says so; where it cannot, why.
Expected<void> write_all(int fd, const std::string& data,
                         std::chrono::steady_clock::time_point deadline =
                             std::chrono::steady_clock::now() + std::chrono::seconds(30),
                         const std::function<bool()>& stop = nullptr);

// The most temporary names that exist at once: two per output (outputs/output.hpp checks that its
// kMaxOutputs fits) and a few more.
inline constexpr std::size_t kMaxTemporaries = 72;

// Registers `name` (short: under 32 characters) in the directory `dir_fd` before it is created;
// returns its slot, or -1 when none is free or the name is too long (the name is then removed only
// by the normal paths). unregister_pending() frees the slot once the name is gone or kept.
int register_pending(int dir_fd, const std::string& name);
void unregister_pending(int& slot);

// Removes the temporary files that exist right now (an output being committed). For the signal
// handlers: async-signal-safe.
void remove_pending_temporaries() noexcept;

}  // namespace precision_probe
