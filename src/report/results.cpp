#include "precision_probe/results.hpp"

#include <array>
#include <cmath>
#include <utility>

#include "strings/strings.hpp"

namespace precision_probe {

namespace {
constexpr std::array<std::pair<ErrorKind, std::string_view>, 12> kErrorKinds = {{
    {ErrorKind::none, "none"},
    {ErrorKind::not_run, "not_run"},
    {ErrorKind::not_supported, "not_supported"},
    {ErrorKind::wrong_result, "wrong_result"},
    {ErrorKind::runtime, "runtime"},
    {ErrorKind::environment, "environment"},
    {ErrorKind::timed_out, "timed_out"},
    {ErrorKind::crashed, "crashed"},
    {ErrorKind::unavailable, "unavailable"},
    {ErrorKind::refused, "refused"},
    {ErrorKind::out_of_time, "out_of_time"},
    {ErrorKind::interrupted, "interrupted"},
}};
}  // namespace

std::string_view to_string(ErrorKind kind) {
  for (const auto& [k, name] : kErrorKinds) {
    if (k == kind) return name;
  }
  return "?";
}

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::none: return "";
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::other: return "other";
  }
  return "?";
}

std::optional<ErrorKind> parse_error_kind(std::string_view text) {
  for (const auto& [k, name] : kErrorKinds) {
    if (name == text) return k;
  }
  return std::nullopt;
}

bool LossScaleModel::update(bool found_inf) {
  if (found_inf) {
    scale *= backoff_factor;
    growth_tracker = 0;
    return false;
  }
  if (++growth_tracker == growth_interval) {
    if (std::isfinite(scale * growth_factor)) scale *= growth_factor;
    growth_tracker = 0;
  }
  return true;
}

ErrorKind classify_error(std::string_view message) {
  const std::string m = to_lower(message);
  auto has = [&m](std::string_view needle) { return m.find(needle) != std::string::npos; };
  if (has("out of memory") || has("status_alloc_failed") || has("memoryallocation") ||
      has("error while loading shared libraries") || has("symbol lookup error")) {
    return ErrorKind::unavailable;
  }
  if (has("no kernel image is available") || has("driver version is insufficient") ||
      has("forward compatibility was attempted") || has("cuda driver initialization failed") ||
      has("found no nvidia driver")) {
    return ErrorKind::environment;
  }
  // cudaErrorDevicesUnavailable / CUDA_ERROR_DEVICE_UNAVAILABLE: the compute mode refused a
  // context (Prohibited, or Exclusive Process with another process holding the GPU).
  if (has("busy or unavailable") || has("device_unavailable") || has("devices unavailable")) {
    return ErrorKind::refused;
  }
  if (has("not implemented for") || has("not supported") || has("only support") ||
      has("not_supported") || has("unsupported") || has("notimplementederror") ||
      has("could not run '")) {
    return ErrorKind::not_supported;
  }
  return ErrorKind::runtime;
}

}  // namespace precision_probe
