#pragma once
// The part of the early CUDA context (early_context.hpp) that runs before main(): started from
// the engine executable's .preinit_array, which the loader runs before any library's
// initialiser, on a thread that begins once the C library has initialised itself.
//
// Plain C types only: the thread runs while the C++ runtime and LibTorch are being initialised.

extern "C" {

// Where the thread stopped.
enum PpEarlyStage {
  kPpEarlyDone = 0,   // the context exists
  kPpEarlyNoThread,   // no thread could be started
  kPpEarlyNoDriver,   // the driver library did not load (dl_error says why)
  kPpEarlyNoSymbols,  // the driver lacks an entry point
  kPpEarlyInit,       // cuInit failed
  kPpEarlyCount,      // cuDeviceGetCount failed, or the count is not 1
  kPpEarlyDevice,     // device 0 or its UUID could not be read
  kPpEarlyRetain,     // cuDevicePrimaryCtxRetain failed
};

struct PpEarlyRaw {
  int started;           // 1: asked for (`--worker --early-context`) and begun
  int cuda_initialised;  // 1: cuInit was called
  enum PpEarlyStage stage;
  int result;  // the CUresult of the call that failed
  int device_count;
  unsigned char uuid[16];  // device 0's
  double started_at_ms;    // the trace's clock (boot_clock_ms()): the thread was started
  double libc_at_ms;       // the C library was ready
  double init_at_ms;       // cuInit returned
  double ready_at_ms;      // the context existed
  char dl_error[256];
};

// Waits for the thread, if one was started, and returns what it found. Call once, from main().
const struct PpEarlyRaw* pp_early_context_join(void);

}  // extern "C"
