// What keeps the glibc floor of the probe and the engine at 2.34 (docs/images.md), with the C++
// runtime and GCC's unwinder linked in so that each needs the C library alone:
// - Debian 12's static libstdc++ calls arc4random (glibc 2.36) in std::random_device, and its
//   copy-on-write strings, which every std::logic_error carries, pull that code in whether or not
//   the program uses random_device (neither does);
// - GCC 12's static unwinder (libgcc_eh, -static-libgcc) finds a frame's unwind tables with
//   _dl_find_object (glibc 2.35).
// Defined here, in each executable and hidden, both are the program's own, and the binary asks
// the C library for no symbol newer than 2.34 (tests/cli/portable-test.sh).

#include <dlfcn.h>
#include <link.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

// Hidden: the executable's own, never exported to the libraries it loads (LibTorch keeps glibc's).
extern "C" __attribute__((visibility("hidden"))) std::uint32_t
arc4random() noexcept {  // NOLINT(readability-identifier-naming): libc's
  // As glibc's: it never fails; getrandom waits for the kernel's entropy at early boot.
  std::uint32_t value = 0;
  if (::getrandom(&value, sizeof value, 0) == static_cast<ssize_t>(sizeof value)) return value;
  // No getrandom: the clock and the process, mixed.
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t mixed =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
      (static_cast<std::uint64_t>(::getpid()) << 32U) ^ ++counter;
  mixed ^= mixed >> 33U;
  mixed *= 0xff51afd7ed558ccdULL;
  mixed ^= mixed >> 33U;
  return static_cast<std::uint32_t>(mixed ^ (mixed >> 32U));
}

#ifdef DLFO_STRUCT_HAS_EH_DBASE
static_assert(DLFO_STRUCT_HAS_EH_DBASE == 0 && DLFO_STRUCT_HAS_EH_COUNT == 0,
              "_dl_find_object below fills the x86-64 and aarch64 struct only");

namespace {

struct ObjectSearch {
  std::uintptr_t pc = 0;
  dl_find_object* result = nullptr;
  bool found = false;
};

// The loaded object whose PT_LOAD segments hold the address: its mapping and PT_GNU_EH_FRAME.
int find_in(dl_phdr_info* info, std::size_t /*size*/, void* data) {
  auto* search = static_cast<ObjectSearch*>(data);
  std::uintptr_t start = UINTPTR_MAX;
  std::uintptr_t end = 0;
  bool holds = false;
  void* eh_frame = nullptr;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    const std::uintptr_t begin = info->dlpi_addr + segment.p_vaddr;
    if (segment.p_type == PT_LOAD) {
      start = std::min(start, begin);
      end = std::max(end, begin + segment.p_memsz);
      holds = holds || (search->pc >= begin && search->pc < begin + segment.p_memsz);
    } else if (segment.p_type == PT_GNU_EH_FRAME) {
      eh_frame = reinterpret_cast<void*>(begin);  // NOLINT(performance-no-int-to-ptr)
    }
  }
  if (!holds) return 0;
  *search->result = dl_find_object{};
  search->result->dlfo_map_start =
      reinterpret_cast<void*>(start);                           // NOLINT(performance-no-int-to-ptr)
  search->result->dlfo_map_end = reinterpret_cast<void*>(end);  // NOLINT(performance-no-int-to-ptr)
  search->result->dlfo_eh_frame = eh_frame;
  search->found = eh_frame != nullptr;
  return 1;
}

}  // namespace

// glibc's contract: 0 and *result filled where the address is in a loaded object with unwind
// tables, -1 otherwise. Through dl_iterate_phdr, as GCC's unwinder did before glibc 2.35.
extern "C" __attribute__((visibility("hidden"))) int
_dl_find_object(  // NOLINT(readability-identifier-naming,bugprone-reserved-identifier): glibc's
    void* address, dl_find_object* result) noexcept {
  ObjectSearch search;
  search.pc = reinterpret_cast<std::uintptr_t>(address);
  search.result = result;
  ::dl_iterate_phdr(find_in, &search);
  return search.found ? 0 : -1;
}
#endif
