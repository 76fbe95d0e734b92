// Phase timings for tuning start-up: PRECISION_PROBE_TRACE=1 prints when each phase ended,
// counted from the process's start (the kernel's start time, so the dynamic loading of LibTorch
// before main() is included).

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "engine.hpp"

namespace precision_probe::engine {

namespace {

// Milliseconds since boot at which this process started (field 22 of /proc/self/stat).
double process_start_ms() {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0.0;
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return std::stod(field) * 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  return 0.0;
}

double boot_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<double>(ts.tv_sec) * 1000.0 + static_cast<double>(ts.tv_nsec) / 1e6;
}

bool enabled() {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): read once, nothing sets variables
  static const bool on = std::getenv("PRECISION_PROBE_TRACE") != nullptr;
  return on;
}

}  // namespace

void trace(const char* what) {
  if (!enabled()) return;
  static const double start = process_start_ms();
  std::fprintf(stderr, "trace: %7.1f ms  %s\n", boot_ms() - start, what);
}

}  // namespace precision_probe::engine
