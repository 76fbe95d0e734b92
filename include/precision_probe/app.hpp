#pragma once
// The program: argv in, report out, exit code back. main() is one call into here.

#include <functional>
#include <iosfwd>
#include <memory>

#include "precision_probe/driver.hpp"
#include "precision_probe/engine.hpp"
#include "precision_probe/system.hpp"

namespace precision_probe {

struct AppDeps {
  const System& system;
  std::function<std::unique_ptr<DriverApi>()> make_driver;
  std::function<std::unique_ptr<Engine>()> make_engine;
};

int run_app(int argc, const char* const* argv, const AppDeps& deps, std::ostream& out,
            std::ostream& err);

// The real program: real system, driver and engine, std::cout and std::cerr.
int main_entry(int argc, char** argv);

}  // namespace precision_probe
