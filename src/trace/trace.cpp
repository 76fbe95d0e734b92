// Phase timings for tuning start-up: PRECISION_PROBE_TRACE=1 prints when each phase ended,
// counted from the process's start (the kernel's start time, so the dynamic loading of LibTorch
// before main() is included).

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <iterator>
#include <string>
#include <string_view>

#include "trace/trace.hpp"

namespace precision_probe {

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

bool enabled_once() {
  // Read once; the worker sets its one variable (CUDA_VISIBLE_DEVICES) before any thread of its
  // own starts (the early CUDA context's thread has been joined by then).
  // NOLINTNEXTLINE(concurrency-mt-unsafe)
  static const bool on = [] {
    const char* value = std::getenv("PRECISION_PROBE_TRACE");  // NOLINT(concurrency-mt-unsafe)
    return value != nullptr && *value != '\0' && std::string_view(value) != "0";
  }();
  return on;
}

std::atomic<int> g_trace_fd{2};

}  // namespace

void set_trace_fd(int fd) { g_trace_fd = fd; }

double boot_clock_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<double>(ts.tv_sec) * 1000.0 + static_cast<double>(ts.tv_nsec) / 1e6;
}

bool tracing() { return enabled_once(); }

void trace(std::string_view what) { trace_at(boot_clock_ms(), what); }

void trace_at(double at_boot_ms, std::string_view what) {
  if (!enabled_once()) return;
  static const double start = process_start_ms();
  // The program and its process id: a probe's workers share one name.
  static const std::string name =
      std::string(program_invocation_short_name) + ":" + std::to_string(::getpid());
  // Minor page faults so far: loading libraries and kernel code shows as faults.
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  ::dprintf(g_trace_fd, "trace: %-30s %7.1f ms %7ld flt  %.*s\n", name.c_str(), at_boot_ms - start,
            usage.ru_minflt, static_cast<int>(what.size()), what.data());
}

}  // namespace precision_probe
