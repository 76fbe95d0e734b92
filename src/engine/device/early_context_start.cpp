// The early CUDA context's start (see early_context_start.hpp and early_context.hpp). C calls on
// plain data only.
//
// Why .preinit_array and a wait: the loader runs LibTorch's static initialisers (the slow part of
// the worker's start) before main(), in dependency order, so no library of ours can be sure to
// run before them; the executable's pre-initialisers do. But they run before the C library's own
// initialiser, and a dlopen() from there would initialise the C library with no environment. So
// the thread waits until the C library has set up `environ` and the program's name (the last
// thing its initialiser does), then opens the driver while LibTorch's initialisers run.

#include "engine/device/early_context_start.hpp"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>  // nanosleep
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "engine/device/early_context.hpp"
#include "common/trace.hpp"

namespace {

using precision_probe::boot_clock_ms;  // the trace's clock: a plain system call

// The few driver entry points the thread calls, declared as the driver defines them.
using CuResult = int;
using CuDevice = int;
using cuInit_t = CuResult (*)(unsigned int);
using cuDeviceGetCount_t = CuResult (*)(int*);
using cuDeviceGet_t = CuResult (*)(CuDevice*, int);
using cuDeviceGetUuid_t = CuResult (*)(unsigned char*, CuDevice);
using cuDevicePrimaryCtxRetain_t = CuResult (*)(void**, CuDevice);

// Written before the thread starts and then by the thread alone; read after pthread_join.
// NOLINTBEGIN(cppcoreguidelines-avoid-non-const-global-variables)
PpEarlyRaw g_raw{};
int g_main_started = 0;  // set (atomically) by pp_early_context_join(), from main()
pthread_t g_thread{};
bool g_joinable = false;
const char* g_library = "libcuda.so.1";
void* g_driver = nullptr;
// NOLINTEND(cppcoreguidelines-avoid-non-const-global-variables)

// Whether the C library's initialiser has run: it sets `environ` (null until then in a
// dynamically linked program) and then, last, the program's name (empty until then). Once main()
// runs, it certainly has (a program started with an empty argv[0] waits until then).
bool libc_ready() {
  if (__atomic_load_n(&g_main_started, __ATOMIC_ACQUIRE) != 0) return true;
  char** env = __atomic_load_n(&environ, __ATOMIC_ACQUIRE);
  const char* name = __atomic_load_n(&program_invocation_short_name, __ATOMIC_ACQUIRE);
  return env != nullptr && name != nullptr && name[0] != '\0';
}

template <typename F>
F symbol(const char* name) {
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): dlsym's one way
  return reinterpret_cast<F>(::dlsym(g_driver, name));
}

bool failed(PpEarlyStage stage, CuResult result) {
  if (result == 0) return false;
  g_raw.stage = stage;
  g_raw.result = result;
  return true;
}

void* make_context(void* /*unused*/) {
  PpEarlyRaw& r = g_raw;
  while (!libc_ready()) {
    const timespec pause{0, 100000};  // 0.1 ms
    ::nanosleep(&pause, nullptr);
  }
  r.libc_at_ms = boot_clock_ms();
  // The driver's own dependencies are the C library's parts (libm, libdl, librt, libpthread),
  // which have no initialisers of their own to speak of (since glibc 2.34 all but libm are empty
  // stubs): that the loader may not have reached them yet on the main thread does no harm.
  g_driver = ::dlopen(g_library, RTLD_NOW | RTLD_LOCAL);
  if (g_driver == nullptr) {
    r.stage = kPpEarlyNoDriver;
    const char* why = ::dlerror();  // NOLINT(concurrency-mt-unsafe): glibc keeps it per thread
    std::snprintf(r.dl_error, sizeof r.dl_error, "%s", why != nullptr ? why : "dlopen failed");
    return nullptr;
  }
  auto init = symbol<cuInit_t>("cuInit");
  auto count = symbol<cuDeviceGetCount_t>("cuDeviceGetCount");
  auto get = symbol<cuDeviceGet_t>("cuDeviceGet");
  auto uuid = symbol<cuDeviceGetUuid_t>("cuDeviceGetUuid_v2");
  if (uuid == nullptr) uuid = symbol<cuDeviceGetUuid_t>("cuDeviceGetUuid");
  auto retain = symbol<cuDevicePrimaryCtxRetain_t>("cuDevicePrimaryCtxRetain");
  if (init == nullptr || count == nullptr || get == nullptr || uuid == nullptr ||
      retain == nullptr) {
    r.stage = kPpEarlyNoSymbols;
    return nullptr;
  }
  r.cuda_initialised = 1;
  const CuResult init_result = init(0);
  r.init_at_ms = boot_clock_ms();
  if (failed(kPpEarlyInit, init_result)) return nullptr;
  if (failed(kPpEarlyCount, count(&r.device_count))) return nullptr;
  if (r.device_count != 1) {  // the plan's GPU could not be told apart: no context
    r.stage = kPpEarlyCount;
    return nullptr;
  }
  CuDevice device = 0;
  if (failed(kPpEarlyDevice, get(&device, 0))) return nullptr;
  if (failed(kPpEarlyDevice, uuid(r.uuid, device))) return nullptr;
  void* context = nullptr;  // kept for the life of the process, as LibTorch keeps its own
  const CuResult retained = retain(&context, device);
  r.ready_at_ms = boot_clock_ms();
  if (failed(kPpEarlyRetain, retained)) return nullptr;
  r.stage = kPpEarlyDone;
  return nullptr;
}

// The executable's pre-initialiser: the loader passes it the program's arguments and environment.
void start(int argc, char** argv, char** envp) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // (A thread before the C library's initialiser needs glibc 2.34+, where libpthread is libc.)
  if (argc != 3 || std::strcmp(argv[1], "--worker") != 0 ||
      std::strcmp(argv[2], precision_probe::engine::kEarlyContextFlag) != 0) {
    return;
  }
  // The driver library is the probe's: libcuda.so.1, or PRECISION_PROBE_LIBCUDA (a driver outside
  // the loader's path; LibTorch's own dlopen of libcuda.so.1 then finds it by its soname). A tool
  // that injects itself at cuInit (compute-sanitizer, Nsight) gets the ordinary path: its library
  // would be loaded while LibTorch's initialisers run.
  for (char** e = envp; *e != nullptr; ++e) {
    if (std::strncmp(*e, "CUDA_INJECTION64_PATH=", 22) == 0) return;
    if (std::strncmp(*e, "PRECISION_PROBE_LIBCUDA=", 24) == 0 && (*e)[24] != '\0') {
      g_library = *e + 24;
    }
  }
  g_raw.started = 1;
  g_raw.started_at_ms = boot_clock_ms();
  g_joinable = ::pthread_create(&g_thread, nullptr, make_context, nullptr) == 0;
  if (!g_joinable) g_raw.stage = kPpEarlyNoThread;
#else
  (void)argc;
  (void)argv;
  (void)envp;
#endif
}

}  // namespace

// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables)
[[gnu::section(".preinit_array"), gnu::used]] void (*pp_early_context_entry)(int, char**,
                                                                             char**) = start;

const PpEarlyRaw* pp_early_context_join() {
  __atomic_store_n(&g_main_started, 1, __ATOMIC_RELEASE);
  if (g_joinable) {
    ::pthread_join(g_thread, nullptr);
    g_joinable = false;
  }
  return &g_raw;
}
