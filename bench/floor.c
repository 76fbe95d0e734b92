/* The floor of the probe's start-up: what any program that runs a kernel through the image's
 * LibTorch on a GPU must do first, and nothing else. LibTorch's dlopen (RTLD_LAZY | RTLD_LOCAL,
 * as the engine loads it) on the main thread, beside, on a thread of its own, libcuda's dlopen,
 * cuInit(0), GPU 0's primary context retained and made current; then _exit(0) (no static
 * destructors run, as the engine's workers end). bench/startup.py compiles it with cc and times
 * it in the same rounds as the probe and the Python check (docs/performance.md). Bench-only: the
 * probe never runs it.
 *
 *   usage: floor [--times] [--order beside|init-first] [--no-driver] LIBTORCH
 *
 *   LIBTORCH      the libtorch_cuda.so (libtorch_cpu.so with --no-driver) to load
 *   --times       print each phase's end on stderr, in ms from the start
 *   --order       beside (default): both started at once; init-first: LibTorch's dlopen waits
 *                 for cuInit (the engine's default order, docs/engine.md)
 *   --no-driver   no libcuda, no GPU: the floor of a CPU-only run
 *
 * libcuda is PRECISION_PROBE_LIBCUDA where set (as for the probe), else libcuda.so.1; it is
 * loaded with dlopen, never linked. Exit codes (each failure said on stderr, one line each; where
 * both sides fail, the lower code):
 *   0 done, 2 usage, 3 LibTorch's dlopen failed, 4 libcuda could not be loaded (or lacks a
 *   function), 5 cuInit failed (no GPU, no driver), 6 GPU 0 or its primary context failed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kDone = 0, kUsage = 2, kNoLibTorch = 3, kNoDriverLibrary = 4, kNoGpu = 5, kNoContext = 6 };

typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;

static struct timespec start_time;

static double ms_since_start(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start_time.tv_sec) * 1e3 +
         (double)(now.tv_nsec - start_time.tv_nsec) / 1e6;
}

/* The driver's side, run on its own thread. */
struct driver_side {
  const char* library;
  int code;
  char message[600];
  double loaded_ms, init_ms, context_ms;
  int init_over; /* cuInit returned (or the driver failed before it): init-first may go on */
  pthread_mutex_t mutex;
  pthread_cond_t cond;
};

static void init_over(struct driver_side* d) {
  pthread_mutex_lock(&d->mutex);
  d->init_over = 1;
  pthread_cond_signal(&d->cond);
  pthread_mutex_unlock(&d->mutex);
}

/* A function of `lib` (POSIX's way of turning dlsym's pointer into a function's). */
#define LOOK_UP(lib, function, name) (*(void**)(&(function)) = dlsym((lib), (name)))

static const char* error_name(void* lib, CUresult result) {
  CUresult (*name_of)(CUresult, const char**) = NULL;
  LOOK_UP(lib, name_of, "cuGetErrorName");
  const char* name = NULL;
  if (name_of == NULL || name_of(result, &name) != 0 || name == NULL) return "unknown error";
  return name;
}

static void* run_driver(void* arg) {
  struct driver_side* d = arg;
  void* lib = dlopen(d->library, RTLD_NOW | RTLD_LOCAL);
  d->loaded_ms = ms_since_start();
  if (lib == NULL) {
    d->code = kNoDriverLibrary;
    snprintf(d->message, sizeof d->message, "dlopen of %s failed: %s", d->library, dlerror());
    init_over(d);
    return NULL;
  }
  CUresult (*cu_init)(unsigned) = NULL;
  CUresult (*device_get)(CUdevice*, int) = NULL;
  CUresult (*retain)(CUcontext*, CUdevice) = NULL;
  CUresult (*set_current)(CUcontext) = NULL;
  LOOK_UP(lib, cu_init, "cuInit");
  LOOK_UP(lib, device_get, "cuDeviceGet");
  LOOK_UP(lib, retain, "cuDevicePrimaryCtxRetain");
  LOOK_UP(lib, set_current, "cuCtxSetCurrent");
  if (cu_init == NULL || device_get == NULL || retain == NULL || set_current == NULL) {
    d->code = kNoDriverLibrary;
    snprintf(d->message, sizeof d->message,
             "%s lacks cuInit, cuDeviceGet, cuDevicePrimaryCtxRetain or cuCtxSetCurrent",
             d->library);
    init_over(d);
    return NULL;
  }
  const CUresult init = cu_init(0);
  d->init_ms = ms_since_start();
  init_over(d);
  if (init != 0) {
    d->code = kNoGpu;
    snprintf(d->message, sizeof d->message, "cuInit failed: %s (%d): no GPU or no driver here",
             error_name(lib, init), init);
    return NULL;
  }
  CUdevice device = 0;
  CUcontext context = NULL;
  CUresult result = device_get(&device, 0);
  const char* step = "cuDeviceGet(0)";
  if (result == 0) {
    result = retain(&context, device);
    step = "cuDevicePrimaryCtxRetain";
  }
  if (result == 0) {
    result = set_current(context);
    step = "cuCtxSetCurrent";
  }
  d->context_ms = ms_since_start();
  if (result != 0) {
    d->code = kNoContext;
    snprintf(d->message, sizeof d->message, "%s failed: %s (%d)", step, error_name(lib, result),
             result);
  }
  return NULL;
}

static int usage(const char* why) {
  fprintf(stderr,
          "floor: %s\nusage: floor [--times] [--order beside|init-first] [--no-driver] LIBTORCH\n",
          why);
  return kUsage;
}

int main(int argc, char** argv) {
  clock_gettime(CLOCK_MONOTONIC, &start_time);
  int times = 0, init_first = 0, driver = 1;
  const char* libtorch = NULL;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--times") == 0) {
      times = 1;
    } else if (strcmp(argv[i], "--no-driver") == 0) {
      driver = 0;
    } else if (strcmp(argv[i], "--order") == 0 && i + 1 < argc) {
      ++i;
      if (strcmp(argv[i], "init-first") == 0) {
        init_first = 1;
      } else if (strcmp(argv[i], "beside") != 0) {
        return usage("--order takes beside or init-first");
      }
    } else if (argv[i][0] == '-' || libtorch != NULL) {
      return usage("unknown argument");
    } else {
      libtorch = argv[i];
    }
  }
  if (libtorch == NULL) return usage("no LIBTORCH given");

  struct driver_side d;
  memset(&d, 0, sizeof d);
  d.init_ms = d.context_ms = -1; /* not reached */
  const char* chosen = getenv("PRECISION_PROBE_LIBCUDA");
  d.library = chosen != NULL && chosen[0] != '\0' ? chosen : "libcuda.so.1";
  pthread_mutex_init(&d.mutex, NULL);
  pthread_cond_init(&d.cond, NULL);
  pthread_t thread;
  if (driver && pthread_create(&thread, NULL, run_driver, &d) != 0) {
    fprintf(stderr, "floor: cannot start a thread\n");
    return kNoDriverLibrary;
  }
  if (driver && init_first) {
    pthread_mutex_lock(&d.mutex);
    while (!d.init_over) pthread_cond_wait(&d.cond, &d.mutex);
    pthread_mutex_unlock(&d.mutex);
  }
  const double torch_start_ms = ms_since_start();
  void* torch = dlopen(libtorch, RTLD_LAZY | RTLD_LOCAL);
  const double torch_ms = ms_since_start();
  int code = kDone;
  if (torch == NULL) {
    fprintf(stderr, "floor: dlopen of %s failed: %s\n", libtorch, dlerror());
    code = kNoLibTorch;
  }
  if (driver) {
    pthread_join(thread, NULL);
    if (d.code != kDone) {
      fprintf(stderr, "floor: %s\n", d.message);
      if (code == kDone) code = d.code;
    }
  }
  if (times) {
    fprintf(stderr, "floor: LibTorch's dlopen %.1f -> %.1f ms", torch_start_ms, torch_ms);
    if (driver) {
      fprintf(stderr, "; libcuda loaded %.1f ms", d.loaded_ms);
      if (d.init_ms >= 0) fprintf(stderr, ", cuInit %.1f ms", d.init_ms);
      if (d.context_ms >= 0) fprintf(stderr, ", primary context %.1f ms", d.context_ms);
    }
    fprintf(stderr, "; done %.1f ms\n", ms_since_start());
  }
  fflush(stderr);
  _exit(code);
}
