// The CUDA context made before main(), as the worker sees it: see early_context.hpp.

#include "engine/device/early_context.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "engine/device/early_context_start.hpp"
#include "common/strings.hpp"

namespace precision_probe::engine {

EarlyContext join_early_context() {
  const PpEarlyRaw& r = *pp_early_context_join();
  EarlyContext early;
  if (r.started == 0) return early;
  early.started = true;
  early.cuda_initialised = r.cuda_initialised != 0;
  early.started_at_ms = r.started_at_ms;
  early.libc_at_ms = r.libc_at_ms;
  early.init_at_ms = r.init_at_ms;
  early.ready_at_ms = r.ready_at_ms;
  switch (r.stage) {
    case kPpEarlyDone: early.uuid = format_uuid(r.uuid, false); break;
    case kPpEarlyNoDriver:
      early.error = fmt::format("the driver did not load ({})", r.dl_error);
      break;
    case kPpEarlyNoThread: early.error = "no thread could be started for it"; break;
    case kPpEarlyNoSymbols: early.error = "the driver lacks an entry point it needs"; break;
    case kPpEarlyInit: early.error = fmt::format("cuInit returned {}", r.result); break;
    case kPpEarlyCount:
      early.error = r.result != 0 ? fmt::format("cuDeviceGetCount returned {}", r.result)
                                  : fmt::format("{} devices visible, not one", r.device_count);
      break;
    case kPpEarlyDevice:
      early.error = fmt::format("device 0 could not be read ({})", r.result);
      break;
    case kPpEarlyRetain:
      early.error = fmt::format("cuDevicePrimaryCtxRetain returned {}", r.result);
      break;
  }
  return early;
}

bool early_context_fits(const EarlyContext& early, const WorkerPlan& plan) {
  // No error: the thread saw exactly one device and made the context on it.
  return early.started && early.error.empty() && plan.kind == DeviceKind::cuda &&
         plan.collective_ranks == 0 && starts_with(plan.cuda_visible_devices, "GPU-") &&
         to_lower(plan.cuda_visible_devices) == to_lower(early.uuid);
}

std::string restart_without_early_context(const char* argv0, const std::string& plan_text) {
  // The plan goes back on stdin, from memory.
  const int fd = ::memfd_create("precision-probe-plan", 0);
  if (fd < 0) return fmt::format("memfd_create: {}", error_string(errno));
  std::size_t written = 0;
  while (written < plan_text.size()) {
    const ssize_t n = ::write(fd, plan_text.data() + written, plan_text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fmt::format("writing the plan: {}", error_string(errno));
    written += static_cast<std::size_t>(n);
  }
  if (::lseek(fd, 0, SEEK_SET) != 0 || ::dup2(fd, STDIN_FILENO) < 0) {
    return fmt::format("making the plan stdin: {}", error_string(errno));
  }
  ::close(fd);
  const char* args[] = {argv0, "--worker", nullptr};
  ::execv("/proc/self/exe",
          const_cast<char* const*>(args));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  return fmt::format("restarting the worker: {}", error_string(errno));
}

}  // namespace precision_probe::engine
