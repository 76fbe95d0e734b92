#include "wire/training_check.hpp"

#include <cmath>

#include <fmt/format.h>

namespace precision_probe {
namespace {

bool finite(const std::optional<double>& v) { return v && std::isfinite(*v); }

std::string dtype_problem(Mode mode, const AmpOutcome& o) {
  const DType low = mode == Mode::amp_fp16 ? DType::fp16 : DType::bf16;
  if (o.matmul_dtype != low) {
    return fmt::format("the run did not do the matmuls in {} (they ran in {})", to_string(low),
                       to_string(o.matmul_dtype));
  }
  if (o.loss_dtype != DType::fp32) {
    return fmt::format("the run did not keep the loss in fp32 (it is {})", to_string(o.loss_dtype));
  }
  // Where autocast keeps them in fp32, so do the engine's casts (docs/report.md); the model has
  // no layer norm ("none").
  if (o.softmax_dtype != DType::fp32 ||
      (o.layer_norm_dtype != DType::none && o.layer_norm_dtype != DType::fp32)) {
    return fmt::format("the run did not keep log-softmax and layer norm in fp32 ({}, {})",
                       to_string(o.softmax_dtype), to_string(o.layer_norm_dtype));
  }
  return "";
}

std::string scaler_problem(const AmpOutcome& o) {
  if (!o.overflow_handled || !o.injected_overflow_step) {
    return "the loss scaler did not skip the step with the injected overflow";
  }
  if (o.skipped_steps < 1 || o.skipped_steps >= o.steps) {
    return fmt::format("the loss scaler skipped {} of {} steps", o.skipped_steps, o.steps);
  }
  return "";
}

}  // namespace

std::optional<double> loss_distance(const AmpOutcome& o) {
  if (!finite(o.loss_end) || !finite(o.fp32_loss_end) || !(*o.fp32_loss_end > 0.0)) {
    return std::nullopt;
  }
  return std::abs(*o.loss_end - *o.fp32_loss_end) / *o.fp32_loss_end;
}

std::string training_problem(Mode mode, const AmpOutcome& o) {
  if (!o.ran) return "the training run did not run";
  if (o.steps < 2) return fmt::format("a training run of {} steps", o.steps);
  if (!finite(o.loss_start) || !finite(o.loss_end) || !finite(o.fp32_loss_end)) {
    return "wrong result: the loss became NaN or Inf, or is missing";
  }
  if (std::string dtypes = dtype_problem(mode, o); !dtypes.empty()) return dtypes;
  if (!(*o.loss_end < 0.9 * *o.loss_start)) {
    return fmt::format("wrong result: the loss did not go down ({:.4f} -> {:.4f})", *o.loss_start,
                       *o.loss_end);
  }
  if (!o.params_changed) return "wrong result: the parameters did not change";
  const std::optional<double> distance = loss_distance(o);
  const double tolerance = mode_info(mode).tolerance;
  if (!distance) return "wrong result: the fp32 run's final loss is not positive";
  if (!(*distance <= tolerance)) {
    return fmt::format(
        "wrong result: final loss {:.5f} differs from the fp32 run's {:.5f} by {:.3g} (tolerance "
        "{:.3g})",
        *o.loss_end, *o.fp32_loss_end, *distance, tolerance);
  }
  return mode == Mode::amp_fp16 ? scaler_problem(o) : "";
}

}  // namespace precision_probe
