/* Which kernel modules a CUDA program makes the driver load, and what host memory each costs: a
 * CUDA injection library (the driver loads it at cuInit where CUDA_INJECTION64_PATH names it) that
 * subscribes to CUPTI's resource and driver-API callbacks. bench/module_trace.py builds it with cc
 * against the CUDA toolkit's cupti.h, runs a command under it and sums the log up
 * (docs/performance.md). Bench-only: the probe never loads it, and it links nothing: CUPTI is
 * dlopen'ed (PP_MODULE_TRACE_CUPTI, else libcupti.so.13, .so.12, .so).
 *
 * PP_MODULE_TRACE_OUT  the log, appended to (required): a line per event, tab-separated, the
 *                      process's id and milliseconds since it started (CLOCK_BOOTTIME, as the
 *                      probe's trace counts them) first:
 *   P pid ms name                      the process, once
 *   S pid ms anon_kib                  the trace started: the anonymous memory then
 *   M pid ms id cubin_bytes kernels first_kernel     a module loaded (printed after its call)
 *   C pid ms function added_kib anon_kib modules     a driver call that loaded a module or added
 *                                                    1 MiB or more of anonymous memory
 *   O pid ms before_function added_kib anon_kib      1 MiB or more grown outside the driver since
 *                                                    its last call returned
 *   G pid ms when mapping added_kib    a mapping whose Private_Dirty grew 1 MiB or more (with
 *                                      PP_MODULE_TRACE_SMAPS=1: an anonymous one is named after
 *                                      the mapping before it, where a library's .bss sits)
 *   E pid ms message                   what kept the trace from running
 * Anonymous memory is statm's resident minus shared pages. */
#define _GNU_SOURCE
#include <cupti_callbacks.h> /* (cupti.h's activity API is not needed, nor -Wpedantic-clean) */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kGrowthKib = 1024, kPendingModules = 8, kMaxMappings = 8192 };

static int out_fd = -1;
static int smaps_wanted = 0;
static double start_ms = 0;
static __thread long call_start_kib = -1;
static __thread long last_return_kib = -1;
static __thread int modules_in_call = 0;
static __thread char pending[kPendingModules][512];

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_BOOTTIME, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6 - start_ms;
}

/* A line of the log; a write that fails ends the log (the traced program goes on). */
static void emit(const char* kind, const char* format, ...) {
  char line[1024];
  int n = snprintf(line, sizeof line, "%s\t%d\t%.1f\t", kind, (int)getpid(), now_ms());
  va_list ap;
  va_start(ap, format);
  n += vsnprintf(line + n, sizeof line - (size_t)n, format, ap);
  va_end(ap);
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  if (out_fd >= 0 && write(out_fd, line, (size_t)n) != n) {
    close(out_fd);
    out_fd = -1;
  }
}

static int read_small(const char* path, char* buf, size_t size) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  return 1;
}

static long anon_kib(void) {
  char buf[128];
  long size = 0, resident = 0, shared = 0;
  if (!read_small("/proc/self/statm", buf, sizeof buf) ||
      sscanf(buf, "%ld %ld %ld", &size, &resident, &shared) != 3) {
    return -1;
  }
  return (resident - shared) * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The process's start (field 22 of /proc/self/stat, after the name's closing parenthesis). */
static void read_start(void) {
  char buf[1024];
  if (!read_small("/proc/self/stat", buf, sizeof buf)) return;
  char* p = strrchr(buf, ')');
  for (int field = 2; field < 22 && p != NULL; ++field) {
    p = strchr(p + 1, ' ');
  }
  if (p != NULL) start_ms = strtod(p + 1, NULL) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

/* A cubin's kernels (its .text.* sections) and the first one's name. */
static int kernels_of(const char* p, size_t size, char* first, size_t cap) {
  first[0] = '\0';
  if (p == NULL || size < sizeof(Elf64_Ehdr) || memcmp(p, ELFMAG, SELFMAG) != 0) return 0;
  const Elf64_Ehdr* e = (const Elf64_Ehdr*)(const void*)p;
  if (e->e_shoff == 0 || e->e_shstrndx >= e->e_shnum ||
      e->e_shoff + (size_t)e->e_shnum * sizeof(Elf64_Shdr) > size) {
    return 0;
  }
  const Elf64_Shdr* sh = (const Elf64_Shdr*)(const void*)(p + e->e_shoff);
  if (sh[e->e_shstrndx].sh_offset >= size) return 0;
  const char* names = p + sh[e->e_shstrndx].sh_offset;
  int count = 0;
  for (int i = 0; i < e->e_shnum; ++i) {
    if (sh[i].sh_name >= size - sh[e->e_shstrndx].sh_offset) continue;
    const char* name = names + sh[i].sh_name;
    if (strncmp(name, ".text.", 6) != 0) continue;
    if (count++ == 0) snprintf(first, cap, "%.300s", name + 6);
  }
  return count;
}

/* PP_MODULE_TRACE_SMAPS: the mappings whose Private_Dirty grew since the last look. */
static void mappings_grown(const char* when) {
  static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  static unsigned long starts[kMaxMappings], fresh_starts[kMaxMappings];
  static long dirty[kMaxMappings], fresh_dirty[kMaxMappings];
  static int count = 0;
  if (!smaps_wanted) return;
  pthread_mutex_lock(&mutex);
  FILE* f = fopen("/proc/self/smaps", "r");
  int n = 0;
  char line[1024], named[256] = "", name[300] = "";
  unsigned long start = 0;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    unsigned long a = 0, b = 0;
    int at = 0;
    long kib = 0;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &a, &b, &at) == 2 && at > 0) {
      start = a;
      char* path = line + at;
      path[strcspn(path, "\n")] = '\0';
      const char* base = strrchr(path, '/');
      if (path[0] != '\0') snprintf(named, sizeof named, "%s", base != NULL ? base + 1 : path);
      snprintf(name, sizeof name, "%s%s", path[0] != '\0' ? "" : "anon after ", named);
    } else if (sscanf(line, "Private_Dirty: %ld kB", &kib) == 1 && n < kMaxMappings) {
      long before = 0;
      for (int i = 0; i < count; ++i) {
        if (starts[i] == start) before = dirty[i];
      }
      if (count > 0 && kib - before >= kGrowthKib)
        emit("G", "%s\t%s\t%ld", when, name, kib - before);
      fresh_starts[n] = start;
      fresh_dirty[n++] = kib;
    }
  }
  if (f != NULL) fclose(f);
  memcpy(starts, fresh_starts, sizeof starts[0] * (size_t)n);
  memcpy(dirty, fresh_dirty, sizeof dirty[0] * (size_t)n);
  count = n;
  pthread_mutex_unlock(&mutex);
}

static void on_driver_call(const CUpti_CallbackData* d) {
  if (d->callbackSite == CUPTI_API_ENTER) {
    call_start_kib = anon_kib();
    if (last_return_kib >= 0 && call_start_kib - last_return_kib >= kGrowthKib) {
      emit("O", "%s\t%ld\t%ld", d->functionName, call_start_kib - last_return_kib, call_start_kib);
      mappings_grown("outside");
    }
    modules_in_call = 0;
    return;
  }
  const long after = anon_kib();
  const long added = after - call_start_kib;
  last_return_kib = after;
  if (modules_in_call == 0 && added < kGrowthKib) return;
  for (int i = 0; i < modules_in_call && i < kPendingModules; ++i) emit("M", "%s", pending[i]);
  emit("C", "%s\t%ld\t%ld\t%d", d->functionName, added, after, modules_in_call);
  modules_in_call = 0;
  if (added >= kGrowthKib) mappings_grown(d->functionName);
}

static void on_module(const CUpti_ModuleResourceData* m) {
  char first[320];
  const int kernels = kernels_of(m->pCubin, m->cubinSize, first, sizeof first);
  if (modules_in_call < kPendingModules) {
    snprintf(pending[modules_in_call], sizeof pending[0], "%u\t%zu\t%d\t%s", m->moduleId,
             m->cubinSize, kernels, first);
  } else {
    emit("M", "%u\t%zu\t%d\t%s", m->moduleId, m->cubinSize, kernels, first);
  }
  ++modules_in_call;
}

static void CUPTIAPI on_callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                 const void* data) {
  (void)user;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    on_driver_call((const CUpti_CallbackData*)data);
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
    const CUpti_ResourceData* r = (const CUpti_ResourceData*)data;
    on_module((const CUpti_ModuleResourceData*)r->resourceDescriptor);
  }
}

static void* open_cupti(void) {
  const char* chosen = getenv("PP_MODULE_TRACE_CUPTI");
  if (chosen != NULL && chosen[0] != '\0') return dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
  const char* names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    void* lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib != NULL) return lib;
  }
  return NULL;
}

/* The driver calls this once, at cuInit; 1 where the trace runs. */
int InitializeInjection(void) {
  read_start();
  const char* path = getenv("PP_MODULE_TRACE_OUT");
  if (path == NULL || path[0] == '\0') return 0;
  out_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out_fd < 0) return 0;
  smaps_wanted = getenv("PP_MODULE_TRACE_SMAPS") != NULL;
  char name[64] = "?";
  if (read_small("/proc/self/comm", name, sizeof name)) name[strcspn(name, "\n")] = '\0';
  emit("P", "%s", name);
  void* cupti = open_cupti();
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = NULL;
  CUptiResult (*enable)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain) = NULL;
  if (cupti != NULL) {
    *(void**)(&subscribe) = dlsym(cupti, "cuptiSubscribe");
    *(void**)(&enable) = dlsym(cupti, "cuptiEnableDomain");
  }
  if (subscribe == NULL || enable == NULL) {
    emit("E", "no CUPTI with cuptiSubscribe and cuptiEnableDomain (%s)",
         cupti == NULL ? dlerror() : "a library without them");
    return 0;
  }
  CUpti_SubscriberHandle subscriber;
  CUptiResult result = subscribe(&subscriber, on_callback, NULL);
  if (result == CUPTI_SUCCESS) result = enable(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
  if (result == CUPTI_SUCCESS) result = enable(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  if (result != CUPTI_SUCCESS) {
    emit("E", "CUPTI's subscription failed (CUptiResult %d)", (int)result);
    return 0;
  }
  mappings_grown("start");
  emit("S", "%ld", anon_kib());
  return 1;
}
