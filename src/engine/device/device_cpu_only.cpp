// Device helpers for a CPU-only LibTorch: a GPU target cannot run anything.

#include "engine/engine.hpp"

namespace precision_probe::engine {

std::optional<Version> cuda_build_version() { return std::nullopt; }

std::optional<ComputeCapability> device_capability(const Target&) { return std::nullopt; }

std::string unusable_reason(const Target& target) {
  if (!target.cuda) return "";
  return "this LibTorch (" TORCH_VERSION ") was built without CUDA: no GPU kernel can run";
}

std::string device_name(const Target& target) { return target.cuda ? "CUDA device" : "CPU"; }

std::string device_uuid(const Target& /*target*/) { return ""; }

void synchronize(const Target& /*target*/) {}

void warm_up(const Target& /*target*/) {}

std::vector<double> time_calls(const Target& /*target*/, int warmup,
                               std::chrono::milliseconds /*min_warmup*/, int reps,
                               const std::function<void(int)>& call) {
  return time_calls_on_cpu(warmup, reps, call);
}

std::optional<std::int64_t> free_device_memory(const Target& /*target*/) { return std::nullopt; }
std::optional<std::int64_t> allocated_bytes(const Target& /*target*/) { return std::nullopt; }
std::optional<std::int64_t> peak_allocated_bytes(const Target& /*target*/) { return std::nullopt; }
void reset_peak_memory(const Target& /*target*/) {}

}  // namespace precision_probe::engine

namespace precision_probe::engine {

PendingInt64::PendingInt64(const at::Tensor& value, const Target& /*target*/) : host_(value) {}

std::int64_t PendingInt64::wait() const { return host_.item<std::int64_t>(); }

}  // namespace precision_probe::engine
