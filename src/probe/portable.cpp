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
  const std::uint64_t value = precision_probe::random_u64();
  return static_cast<std::uint32_t>(value ^ (value >> 32U));
}
