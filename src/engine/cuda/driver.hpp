#pragma once
// The CUDA driver as the engine uses it, through dlopen of libcuda.so.1 (PRECISION_PROBE_LIBCUDA
// names another): the device a worker runs on (name, UUID, compute capability), its primary
// context (the one LibTorch's runtime uses too) made current on a thread, synchronisation, free
// memory, and events on LibTorch's current stream for timing and for waiting on one copy. The
// engine never links the driver; its few declarations are checked against cuda.h where the
// toolkit is at hand.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "precision_probe/expected.hpp"
#include "precision_probe/modes.hpp"
#include "wire/cuda_snapshot.hpp"

namespace precision_probe::engine {

class CudaDriver {
 public:
  // dlopen and cuInit(0). The error names the library or cuInit's error.
  static Expected<std::unique_ptr<CudaDriver>> open();
  // The two steps apart: load() is the dlopen (it holds the loader's lock), init() is cuInit(0)
  // (it does not: it may run beside another library's dlopen).
  static Expected<std::unique_ptr<CudaDriver>> load();
  Expected<void> init();
  // Another handle on this loaded (and started) driver, unbound, for another thread's device: no
  // dlopen and no dlsym, so it never waits for the loader's lock that a library's dlopen holds
  // (LibTorch's, for the half second its initialisers run).
  std::unique_ptr<CudaDriver> another() const;
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;
  ~CudaDriver();

  int device_count() const;
  // cuInit's answer, as the driver's agent reads it (wire/cuda_snapshot.hpp): the driver started
  // (init() answered), its devices and their peer links, through the entry points load() found
  // (no dlsym or dladdr here, which would wait for the loader's lock a library's dlopen holds).
  CudaSnapshot snapshot() const;
  // How a thread waits for its context's GPU (cuda.h's CU_CTX_SCHED_*): as the driver chooses
  // (it spins where the process has no more contexts than the system has logical CPUs, whatever
  // a CPU quota allows), spinning, yielding its CPU between looks, or blocked until the GPU is
  // done (the engine's events are then made blocking too: an event's wait spins otherwise).
  enum class Waiting : unsigned { automatic = 0, spin = 1, yield = 2, blocking = 4 };

  // Device `ordinal` (as this process sees them), its primary context retained (the one LibTorch's
  // runtime uses), or with `own_context` a context of its own (cuCtxCreate: the bench's copies of
  // one GPU, PRECISION_PROBE_BENCH_GPU_COPIES), current on the calling thread. A `waiting` other
  // than automatic is set on the context first (cuDevicePrimaryCtxSetFlags: every thread of the
  // process that uses the primary context then waits so, LibTorch's too).
  Expected<void> bind(int ordinal, bool own_context = false, Waiting waiting = Waiting::automatic);
  // How the bound context's threads wait, as the driver says (nullopt where it does not, or
  // before bind).
  std::optional<Waiting> waiting() const;
  int ordinal() const { return ordinal_; }
  // The bound device's primary context, current on the calling thread.
  void make_current() const;
  std::string name() const;
  std::string uuid() const;  // "GPU-..."
  std::optional<ComputeCapability> capability() const;
  // Waits for everything queued on the bound device (from any thread).
  void synchronize() const;
  // Bytes the driver has free on the bound device (LibTorch's cache holds more for itself).
  std::optional<std::int64_t> free_memory() const;

  // An event recorded on a stream (LibTorch's current one: aoti_torch_get_current_cuda_stream).
  class Event {
   public:
    Event(const CudaDriver& driver, bool timing);
    Event(Event&& other) noexcept;
    Event& operator=(Event&& other) noexcept;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event();
    void record(void* stream);
    void wait() const;
    // Milliseconds from `start` to this event, both recorded and complete.
    double since(const Event& start) const;

   private:
    const CudaDriver* driver_;
    void* event_ = nullptr;
  };

  // For messages: a CUresult's name ("CUDA_ERROR_OUT_OF_MEMORY").
  std::string error_name(int result) const;

 private:
  CudaDriver() = default;
  struct Api;
  std::unique_ptr<Api> api_;
  int device_ = 0;
  int ordinal_ = -1;
  // The device's primary context's flags (CU_CTX_*; active or not), or with `own` those of the
  // context of its own, made current; nullopt where the driver does not say.
  std::optional<unsigned> context_flags(bool own) const;
  void* context_ = nullptr;
  bool own_context_ = false;
  Waiting waiting_ = Waiting::automatic;  // as read back when bound: the events' flag follows it
};

// Throws std::runtime_error naming `what` and the result when `result` is not CUDA_SUCCESS.
void cuda_check(const CudaDriver& driver, int result, const char* what);

}  // namespace precision_probe::engine
