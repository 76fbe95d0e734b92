#include "engine/checks/target.hpp"

#include <chrono>
#include <cstring>

namespace precision_probe::engine {

void* Target::stream() const {
  if (!on_gpu()) return nullptr;
  void* stream = nullptr;
  check(*torch, torch->c().aoti_torch_get_current_cuda_stream(device.index, &stream),
        "get_current_cuda_stream");
  return stream;
}

void Target::synchronize() const {
  if (on_gpu()) cuda->synchronize();
}

void Target::enter() const {
  if (on_gpu()) cuda->make_current();
}

PendingInt64::PendingInt64(const Tensor& value, const Target& target) {
  if (!target.on_gpu()) {
    host_ = value.view({1}, {1});
    return;
  }
  host_ = empty(*target.torch, {1}, Scalar::i64, Device{}, {}, /*pinned=*/true);
  copy_into(host_, value.view({1}, {1}), /*non_blocking=*/true);
  target.enter();
  event_.emplace(*target.cuda, false);
  event_->record(target.stream());
}

std::int64_t PendingInt64::wait() const {
  if (event_) event_->wait();
  std::int64_t value = 0;
  if (!event_) {
    const std::vector<std::uint8_t> bytes = download_bytes(host_);
    std::memcpy(&value, bytes.data(), sizeof value);
    return value;
  }
  std::memcpy(&value, host_.data(), sizeof value);
  return value;
}

std::vector<double> time_calls(const Target& target, int warmup,
                               std::chrono::milliseconds min_warmup, int reps,
                               const std::function<void(int)>& call) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(reps));
  if (!target.on_gpu()) {
    for (int i = 0; i < warmup; ++i) call(i);
    for (int i = 0; i < reps; ++i) {
      const auto start = Clock::now();
      call(warmup + i);
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    return ms;
  }
  const auto begin = Clock::now();
  int done = 0;
  // The warm-up calls back to back, the timed ones right behind them: one uninterrupted load.
  while (done < warmup) call(done++);
  // A load held for `min_warmup`, waiting after each call so that the host's clock measures the
  // GPU's time, not how fast calls are queued.
  while (Clock::now() - begin < min_warmup) {
    call(done++);
    target.synchronize();
  }
  target.enter();
  void* stream = target.stream();
  std::vector<CudaDriver::Event> starts;
  std::vector<CudaDriver::Event> ends;
  starts.reserve(static_cast<std::size_t>(reps));
  ends.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    starts.emplace_back(*target.cuda, true);
    ends.emplace_back(*target.cuda, true);
  }
  for (int i = 0; i < reps; ++i) {
    starts[static_cast<std::size_t>(i)].record(stream);
    call(done + i);
    ends[static_cast<std::size_t>(i)].record(stream);
  }
  target.synchronize();
  for (int i = 0; i < reps; ++i) {
    ms.push_back(ends[static_cast<std::size_t>(i)].since(starts[static_cast<std::size_t>(i)]));
  }
  return ms;
}

}  // namespace precision_probe::engine
