#pragma once
// The program: argv in, reports out, exit code back. main() is one call into here.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "probe/driver/driver.hpp"
#include "probe/run/engine_client.hpp"
#include "probe/cli/options.hpp"
#include "probe/outputs/output.hpp"
#include "probe/platform/system.hpp"

namespace precision_probe {

struct AppDeps {
  const System& system;
  // The driver for a run: its queries bounded by the run's deadlines.
  std::function<std::unique_ptr<DriverApi>(const Options&)> make_driver;
  std::function<std::unique_ptr<Engine>()> make_engine;
  StandardStreams streams;
  // The image's PyTorch for a run, read by the deadline given (the run's, --timeout after its
  // start: facts/image_reader.hpp); unset: read in this process (find_image_torch).
  std::function<std::optional<StackInfo>(const Options&, const System&,
                                         std::chrono::steady_clock::time_point)>
      find_torch = nullptr;
};

int run_app(int argc, const char* const* argv, const AppDeps& deps);

// The real program: the real system, driver and engine, file descriptors 1 and 2. Sets the
// process-wide things once: the signal handlers, and descriptors 0-2 held open.
int main_entry(int argc, char** argv);

}  // namespace precision_probe
