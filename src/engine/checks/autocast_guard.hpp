#pragma once
// Autocast has no RAII guard in LibTorch's C++ API: this is one. It saves the calling thread's
// autocast state for the device type, enables autocast to `dtype`, and restores the state on exit,
// clearing the autocast cast cache when the outermost guard ends (as torch.autocast does).
// Autocast state is thread-local: the guard affects only the thread that made it.

#include <ATen/autocast_mode.h>

#include "engine/engine.hpp"

namespace precision_probe::engine {

class AutocastGuard {
 public:
  AutocastGuard(at::DeviceType device, at::ScalarType dtype) : device_(device) {
#if PP_TORCH_AT_LEAST(2, 4)
    saved_enabled_ = at::autocast::is_autocast_enabled(device);
    saved_dtype_ = at::autocast::get_autocast_dtype(device);
    at::autocast::set_autocast_dtype(device, dtype);
    at::autocast::set_autocast_enabled(device, true);
#else
    if (device == at::kCUDA) {
      saved_enabled_ = at::autocast::is_enabled();
      saved_dtype_ = at::autocast::get_autocast_gpu_dtype();
      at::autocast::set_autocast_gpu_dtype(dtype);
      at::autocast::set_enabled(true);
    } else {
      saved_enabled_ = at::autocast::is_cpu_enabled();
      saved_dtype_ = at::autocast::get_autocast_cpu_dtype();
      at::autocast::set_autocast_cpu_dtype(dtype);
      at::autocast::set_cpu_enabled(true);
    }
#endif
    at::autocast::increment_nesting();
  }

  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

  ~AutocastGuard() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if PP_TORCH_AT_LEAST(2, 4)
    at::autocast::set_autocast_enabled(device_, saved_enabled_);
    at::autocast::set_autocast_dtype(device_, saved_dtype_);
#else
    if (device_ == at::kCUDA) {
      at::autocast::set_enabled(saved_enabled_);
      at::autocast::set_autocast_gpu_dtype(saved_dtype_);
    } else {
      at::autocast::set_cpu_enabled(saved_enabled_);
      at::autocast::set_autocast_cpu_dtype(saved_dtype_);
    }
#endif
  }

 private:
  at::DeviceType device_;
  bool saved_enabled_ = false;
  at::ScalarType saved_dtype_ = at::kFloat;
};

}  // namespace precision_probe::engine
