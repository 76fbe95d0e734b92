/* The floor of the probe's start-up: what any program that runs a kernel through the image's
 * LibTorch on a GPU must do first, and nothing else. LibTorch's dlopen (RTLD_LAZY | RTLD_LOCAL,
 * as the engine loads it) on the main thread, beside, on a thread of its own, libcuda's dlopen,
 * cuInit(0), GPU 0's primary context retained and made current; then _exit(0) (no static
 * destructors run, as the engine's workers end). bench/startup.py compiles it with cc and times
 * it in the same rounds as the probe and the Python check (docs/performance.md). Bench-only: the
 * probe never runs it.
 *
 *   usage: floor [--times] [--order beside|init-first] [--no-driver] [--gemms] LIBTORCH
 *
 *   LIBTORCH      the libtorch_cuda.so (libtorch_cpu.so with --no-driver) to load
 *   --times       print each phase's end on stderr, in ms from the start
 *   --order       beside (default): both started at once; init-first: LibTorch's dlopen waits
 *                 for cuInit (the engine's default order, docs/engine.md)
 *   --no-driver   no libcuda, no GPU: the floor of a CPU-only run
 *   --gemms       then one 256x256x256 GEMM of each dtype the probe's checks run through cuBLAS
 *                 (fp32, tf32, fp16, bf16, int8; fp8 left out: its checks loaded no cuBLASLt
 *                 library of their own, docs/performance.md), through the cuBLAS and the CUDA
 *                 runtime LibTorch's library loaded (dlsym on its handle), on GPU 0, each
 *                 synchronised: about what the image's stack charges for its GEMMs' first calls,
 *                 which the probe pays as any PyTorch program does (cuBLAS's classic entry points
 *                 at 256^3, where the engine's int8 goes through cuBLASLt and its shapes differ)
 *
 * libcuda is PRECISION_PROBE_LIBCUDA where set (as for the probe), else libcuda.so.1; it is
 * loaded with dlopen, never linked. Exit codes (each failure said on stderr, one line each; where
 * both sides fail, the lower code):
 *   0 done, 2 usage, 3 LibTorch's dlopen failed, 4 libcuda could not be loaded (or lacks a
 *   function), 5 cuInit failed (no GPU, no driver), 6 GPU 0 or its primary context failed,
 *   7 (--gemms) LibTorch's libraries lack a cuBLAS or CUDA runtime function, 8 (--gemms) a
 *   GEMM, its memory or its handle failed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
  kDone = 0,
  kUsage = 2,
  kNoLibTorch = 3,
  kNoDriverLibrary = 4,
  kNoGpu = 5,
  kNoContext = 6,
  kNoBlas = 7,
  kGemmFailed = 8
};

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

/* --gemms: cuBLAS and the CUDA runtime as LibTorch's library loaded them (its handle's dlsym
 * searches the libraries it depends on). Values as in cublas_api.h and library_types.h. */
enum { kOpN = 0, kOpT = 1, kR32F = 0, kR16F = 2, kR8I = 3, kR32I = 10, kR16BF = 14 };
enum { kCompute32F = 68, kCompute32I = 72, kCompute32FFastTf32 = 77, kGemmDefault = -1 };
enum { kSide = 256 };

struct blas {
  int (*set_device)(int);
  int (*malloc_device)(void**, size_t);
  int (*memset_device)(void*, int, size_t);
  int (*synchronize)(void);
  int (*create)(void**);
  int (*sgemm)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
               const float*, float*, int);
  int (*gemm_ex)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*,
                 int, int, const void*, void*, int, int, int, int);
};

/* The GEMMs --gemms runs, in order: each dtype's cuBLAS types (fp32 by cublasSgemm_v2, as PyTorch's
 * fp32 mm; the others by cublasGemmEx). */
struct gemm_kind {
  const char* name;
  int by_sgemm;
  int in_type, out_type, compute, trans_a; /* cuBLAS's int8 GEMM wants A transposed */
};
static const struct gemm_kind kGemms[] = {
    {"fp32", 1, kR32F, kR32F, kCompute32F, kOpN},
    {"tf32", 0, kR32F, kR32F, kCompute32FFastTf32, kOpN},
    {"fp16", 0, kR16F, kR16F, kCompute32F, kOpN},
    {"bf16", 0, kR16BF, kR16BF, kCompute32F, kOpN},
    {"int8", 0, kR8I, kR32I, kCompute32I, kOpT},
};
enum { kGemmCount = sizeof kGemms / sizeof kGemms[0] };

/* One GEMM of kind `g`: x, y and z hold kSide x kSide elements of the widest type. */
static int gemm_of(const struct blas* b, void* handle, const struct gemm_kind* g, void* x, void* y,
                   void* z) {
  const float one = 1.0F, zero = 0.0F;
  const int one_i = 1, zero_i = 0;
  if (g->by_sgemm) {
    return b->sgemm(handle, kOpN, kOpN, kSide, kSide, kSide, &one, x, kSide, y, kSide, &zero, z,
                    kSide);
  }
  const int integer = g->compute == kCompute32I;
  return b->gemm_ex(handle, g->trans_a, kOpN, kSide, kSide, kSide,
                    integer ? (const void*)&one_i : &one, x, g->in_type, kSide, y, g->in_type,
                    kSide, integer ? (const void*)&zero_i : &zero, z, g->out_type, kSide,
                    g->compute, kGemmDefault);
}

/* The GEMMs on GPU 0, each synchronised, its end in ends[i] (ms); 0, or the exit code with its
 * reason in `message`. */
static int run_gemms(void* torch, double* ends, char* message, size_t size) {
  struct blas b;
  LOOK_UP(torch, b.set_device, "cudaSetDevice");
  LOOK_UP(torch, b.malloc_device, "cudaMalloc");
  LOOK_UP(torch, b.memset_device, "cudaMemset");
  LOOK_UP(torch, b.synchronize, "cudaDeviceSynchronize");
  LOOK_UP(torch, b.create, "cublasCreate_v2");
  LOOK_UP(torch, b.sgemm, "cublasSgemm_v2");
  LOOK_UP(torch, b.gemm_ex, "cublasGemmEx");
  if (b.set_device == NULL || b.malloc_device == NULL || b.memset_device == NULL ||
      b.synchronize == NULL || b.create == NULL || b.sgemm == NULL || b.gemm_ex == NULL) {
    snprintf(message, size,
             "LibTorch's libraries lack cudaSetDevice, cudaMalloc, cudaMemset, "
             "cudaDeviceSynchronize, cublasCreate_v2, cublasSgemm_v2 or cublasGemmEx");
    return kNoBlas;
  }
  const size_t bytes = (size_t)kSide * kSide * sizeof(float);
  void* m[3] = {NULL, NULL, NULL};
  void* handle = NULL;
  int result = b.set_device(0);
  const char* step = "cudaSetDevice(0)";
  for (int i = 0; i < 3 && result == 0; ++i) {
    result = b.malloc_device(&m[i], bytes);
    step = "cudaMalloc";
    if (result == 0) {
      result = b.memset_device(m[i], 0, bytes);
      step = "cudaMemset";
    }
  }
  if (result == 0) {
    result = b.create(&handle);
    step = "cublasCreate_v2";
  }
  char what[64] = "";
  for (int i = 0; i < kGemmCount && result == 0; ++i) {
    result = gemm_of(&b, handle, &kGemms[i], m[0], m[1], m[2]);
    snprintf(what, sizeof what, "the %s GEMM", kGemms[i].name);
    step = what;
    if (result == 0) {
      result = b.synchronize();
      snprintf(what, sizeof what, "cudaDeviceSynchronize after the %s GEMM", kGemms[i].name);
    }
    if (result == 0) ends[i] = ms_since_start();
  }
  if (result == 0) return kDone;
  snprintf(message, size, "%s failed (status %d)", step, result);
  return kGemmFailed;
}

/* --times: each phase's end, in ms from the start, on one line of stderr. */
static void print_times(const double torch_span[2], const struct driver_side* d,
                        const double* gemm_ends) {
  fprintf(stderr, "floor: LibTorch's dlopen %.1f -> %.1f ms", torch_span[0], torch_span[1]);
  if (d != NULL) {
    fprintf(stderr, "; libcuda loaded %.1f ms", d->loaded_ms);
    if (d->init_ms >= 0) fprintf(stderr, ", cuInit %.1f ms", d->init_ms);
    if (d->context_ms >= 0) fprintf(stderr, ", primary context %.1f ms", d->context_ms);
  }
  for (int i = 0; i < kGemmCount; ++i) {
    if (gemm_ends[i] < 0) continue;
    fprintf(stderr, "%s %s GEMM %.1f ms", i ? "," : ";", kGemms[i].name, gemm_ends[i]);
  }
  fprintf(stderr, "; done %.1f ms\n", ms_since_start());
}

static int usage(const char* why) {
  fprintf(stderr,
          "floor: %s\nusage: floor [--times] [--order beside|init-first] [--no-driver] [--gemms] "
          "LIBTORCH\n",
          why);
  return kUsage;
}

int main(int argc, char** argv) {
  clock_gettime(CLOCK_MONOTONIC, &start_time);
  int times = 0, init_first = 0, driver = 1, gemms = 0;
  const char* libtorch = NULL;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--times") == 0) {
      times = 1;
    } else if (strcmp(argv[i], "--no-driver") == 0) {
      driver = 0;
    } else if (strcmp(argv[i], "--gemms") == 0) {
      gemms = 1;
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
  if (gemms && !driver) return usage("--gemms needs the driver (not with --no-driver)");

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
  double gemm_ends[kGemmCount];
  for (int i = 0; i < kGemmCount; ++i) gemm_ends[i] = -1;
  if (gemms && code == kDone) {
    char message[300];
    code = run_gemms(torch, gemm_ends, message, sizeof message);
    if (code != kDone) fprintf(stderr, "floor: %s\n", message);
  }
  if (times) {
    const double torch_span[2] = {torch_start_ms, torch_ms};
    print_times(torch_span, driver ? &d : NULL, gemm_ends);
  }
  fflush(stderr);
  _exit(code);
}
