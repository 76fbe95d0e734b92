// What keeps the probe's glibc floor at 2.34 (docs/images.md): Debian 12's static libstdc++ calls
// arc4random (glibc 2.36) in std::random_device, and its copy-on-write strings, which every
// std::logic_error carries, pull that code in whether or not the probe uses random_device (it
// does not: random_u64 reads getrandom). Defined here, arc4random is the probe's own, and the
// binary asks the C library for no symbol newer than 2.34 (tests/cli/portable-test.sh checks).

#include <sys/random.h>

#include <cstdint>
#include <cstring>

#include "probe/platform/system.hpp"

extern "C" std::uint32_t arc4random() noexcept {  // NOLINT(readability-identifier-naming): libc's
  // As glibc's: it never fails; getrandom waits for the kernel's entropy at early boot.
  std::uint32_t value = 0;
  if (::getrandom(&value, sizeof value, 0) == static_cast<ssize_t>(sizeof value)) return value;
  const std::uint64_t mixed = precision_probe::random_u64();
  return static_cast<std::uint32_t>(mixed ^ (mixed >> 32U));
}
