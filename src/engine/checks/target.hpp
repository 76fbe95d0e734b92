#pragma once
// Where a worker's checks run: the LibTorch it loaded, and on a GPU the device it sees (always
// index 0: the probe narrows CUDA_VISIBLE_DEVICES to one GPU) with the driver that times and
// synchronises it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/cuda/driver.hpp"
#include "engine/torch/tensor.hpp"

namespace precision_probe::engine {

struct Target {
  const Torch* torch = nullptr;
  const CudaDriver* cuda = nullptr;  // GPU workers only
  Device device;

  bool on_gpu() const { return device.cuda; }
  // LibTorch's current stream on the device (aoti_torch_get_current_cuda_stream); nullptr on CPUs.
  void* stream() const;
  // Waits for the device (a CPU has nothing queued).
  void synchronize() const;
  // The calling thread uses the device's primary context (the driver's calls need it current).
  void enter() const;
};

// A 64-bit device value on its way to the host: copied into page-locked memory behind the work
// queued so far, with an event after it, so that waiting for it waits for nothing queued later.
class PendingInt64 {
 public:
  PendingInt64(const Tensor& value, const Target& target);
  std::int64_t wait() const;

 private:
  Tensor host_;
  std::optional<CudaDriver::Event> event_;
};

// Times `reps` calls of `call(i)` after `warmup` untimed ones queued back to back and, on a GPU,
// calls for at least `min_warmup`; CUDA events on LibTorch's current stream around each timed call
// on a GPU, a steady clock on the CPU. Each timed call's milliseconds.
std::vector<double> time_calls(const Target& target, int warmup,
                               std::chrono::milliseconds min_warmup, int reps,
                               const std::function<void(int)>& call);

}  // namespace precision_probe::engine
