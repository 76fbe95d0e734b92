// Device helpers for a CUDA build of LibTorch. Compiled only when LibTorch carries CUDA (and, on
// CPU-only machines, by a compile-only target so that this path always builds).

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>

#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "engine/engine.hpp"
#include "common/strings.hpp"

namespace precision_probe::engine {

std::optional<Version> cuda_build_version() {
  // CUDA_VERSION: 12080 for 12.8, from the toolkit's headers LibTorch was built against.
  return Version{CUDA_VERSION / 1000, (CUDA_VERSION % 1000) / 10};
}

std::optional<ComputeCapability> device_capability(const Target& target) {
  // Asked before a check runs, also of a worker that has no GPU (its plan named none it can see):
  // then nothing is known, and the check meets the missing device itself.
  if (!target.cuda || !at::hasCUDA()) return std::nullopt;
  try {
    const cudaDeviceProp* props = at::cuda::getDeviceProperties(target.device.index());
    return ComputeCapability{props->major, props->minor};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string unusable_reason(const Target& target) {
  if (!target.cuda) return "";
  if (!at::hasCUDA()) {
    return "LibTorch sees no CUDA device (the driver or the device is unavailable to it)";
  }
  return "";
}

std::string device_name(const Target& target) {
  if (!target.cuda) return "CPU";
  const cudaDeviceProp* props = at::cuda::getDeviceProperties(target.device.index());
  return fmt::format("{} (cc {}.{}, {} SMs)", props->name, props->major, props->minor,
                     props->multiProcessorCount);
}

std::string device_uuid(const Target& target) {
  if (!target.cuda) return "";
  const cudaDeviceProp* props = at::cuda::getDeviceProperties(target.device.index());
  unsigned char bytes[16];
  static_assert(sizeof bytes == sizeof props->uuid.bytes);
  std::memcpy(bytes, props->uuid.bytes, sizeof bytes);
  return format_uuid(bytes, false);
}

PendingInt64::PendingInt64(const at::Tensor& value, const Target& target) {
  if (!target.cuda) {
    host_ = value;
    return;
  }
  host_ = at::empty({1}, at::TensorOptions().dtype(at::kLong).pinned_memory(true));
  host_.copy_(value.reshape({1}), /*non_blocking=*/true);
  auto event = std::make_shared<at::cuda::CUDAEvent>();
  event->record();
  event_ = event;
}

std::int64_t PendingInt64::wait() const {
  if (event_) static_cast<at::cuda::CUDAEvent*>(event_.get())->synchronize();
  return host_.reshape({1})[0].item<std::int64_t>();
}

void synchronize(const Target& target) {
  if (target.cuda) c10::cuda::device_synchronize();
}

std::optional<std::int64_t> allocated_bytes(const Target& target) {
  if (!target.cuda) return std::nullopt;
  // Index 0 of each statistic is the aggregate over pool types, in every LibTorch version.
  return c10::cuda::CUDACachingAllocator::getDeviceStats(target.device.index())
      .allocated_bytes[0]
      .current;
}

std::optional<std::int64_t> peak_allocated_bytes(const Target& target) {
  if (!target.cuda) return std::nullopt;
  return c10::cuda::CUDACachingAllocator::getDeviceStats(target.device.index())
      .allocated_bytes[0]
      .peak;
}

std::optional<std::int64_t> free_device_memory(const Target& target) {
  if (!target.cuda) return std::nullopt;
  c10::cuda::CUDACachingAllocator::emptyCache();
  std::size_t free = 0;
  std::size_t total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return std::nullopt;
  return static_cast<std::int64_t>(free);
}

void reset_peak_memory(const Target& target) {
  if (target.cuda) c10::cuda::CUDACachingAllocator::resetPeakStats(target.device.index());
}

std::vector<double> time_calls(const Target& target, int warmup,
                               std::chrono::milliseconds min_warmup, int reps,
                               const std::function<void(int)>& call) {
  if (!target.cuda) return time_calls_on_cpu(warmup, reps, call);
  const auto begin = std::chrono::steady_clock::now();
  int done = 0;
  // The first `warmup` calls back to back, the timed ones right behind them, so that the GPU runs
  // one uninterrupted load (waiting after each warm-up call made the figures wander:
  // docs/performance.md, "Why the method matters").
  while (done < warmup) call(done++);
  // A load held for `min_warmup`: waiting for each call, so that the host's clock measures the
  // GPU's time rather than how fast calls can be queued.
  while (std::chrono::steady_clock::now() - begin < min_warmup) {
    call(done++);
    c10::cuda::device_synchronize();
  }
  warmup = done;
  // Events that record time (the default flags of CUDAEvent disable timing).
  std::vector<at::cuda::CUDAEvent> starts;
  std::vector<at::cuda::CUDAEvent> ends;
  starts.reserve(static_cast<std::size_t>(reps));
  ends.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    starts.emplace_back(cudaEventDefault);
    ends.emplace_back(cudaEventDefault);
  }
  const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(target.device.index());
  for (int i = 0; i < reps; ++i) {
    starts[static_cast<std::size_t>(i)].record(stream);
    call(warmup + i);
    ends[static_cast<std::size_t>(i)].record(stream);
  }
  c10::cuda::device_synchronize();
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    ms.push_back(
        starts[static_cast<std::size_t>(i)].elapsed_time(ends[static_cast<std::size_t>(i)]));
  }
  return ms;
}

void warm_up(const Target& target) {
  if (!target.cuda || !unusable_reason(target).empty()) return;
  const c10::cuda::CUDAGuard guard(target.device);
  at::empty({1}, at::TensorOptions().device(target.device));  // the primary context
  trace("context ready");
  at::cuda::getCurrentCUDABlasHandle();
#if PP_TORCH_AT_LEAST(2, 1)
  at::cuda::getCurrentCUDABlasLtHandle();
#endif
  trace("cuBLAS handles ready");
}

}  // namespace precision_probe::engine
