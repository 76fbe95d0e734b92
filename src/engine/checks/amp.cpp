// Mixed-precision training steps, the way PyTorch's AMP does them, in C++: autocast to the low
// precision, and for fp16 dynamic loss scaling with GradScaler's semantics through LibTorch's own
// kernels (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_). Each run is checked
// against an fp32 run of the same steps on the same data.

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "common/training_check.hpp"
#include "engine/checks/autocast_guard.hpp"
#include "engine/engine.hpp"
#include "engine/error_text.hpp"

namespace precision_probe::engine {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kSteps = 24;
// The batch: on a GPU large enough that activations, not parameters, dominate the memory
// measurement, which then runs at the training shapes (no new kernels to load); on a CPU small,
// since there the arithmetic is real time.
constexpr std::int64_t kGpuBatch = 2048;
constexpr std::int64_t kCpuBatch = 256;
constexpr std::int64_t kIn = 256;
constexpr std::int64_t kHidden = 256;
constexpr std::int64_t kClasses = 256;
constexpr double kLearningRate = 0.25;
constexpr double kInitialScale = 65536.0;
constexpr int kGrowthInterval = 8;  // short, so that growth happens within the run
constexpr int kInjectedOverflowStep = 3;

at::ScalarType low_dtype(Mode mode) { return mode == Mode::amp_fp16 ? at::kHalf : at::kBFloat16; }

DType dtype_of(at::ScalarType t) {
  if (t == at::kFloat) return DType::fp32;
  if (t == at::kHalf) return DType::fp16;
  if (t == at::kBFloat16) return DType::bf16;
  if (t == at::kDouble) return DType::fp64;
  return DType::other;
}

struct Forward {
  at::Tensor loss;
  at::ScalarType matmul = at::kFloat, layer_norm = at::kFloat, softmax = at::kFloat;
};

// An operation of the model refused the dtypes autocast gave it: autocast is incomplete in this
// LibTorch for that operation (LibTorch 1.13's CPU autocast leaves layer_norm's parameters in
// fp32 next to a bf16 input, for one). Reported as unsupported, naming the operation.
struct AutocastGap : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename Fn>
at::Tensor stage(const char* name, Fn&& fn) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    const std::string text = error_text(e);
    if (text.find("expected scalar type") != std::string::npos ||
        text.find("expected both inputs to have same dtype") != std::string::npos) {
      throw AutocastGap(std::string(name) + " does not run under autocast in this LibTorch (" +
                        TORCH_VERSION + "): " + text);
    }
    throw;
  }
}

// Linear -> GELU -> LayerNorm -> Linear -> log-softmax + NLL (softmax cross-entropy).
Forward forward(const std::vector<at::Tensor>& p, const at::Tensor& x, const at::Tensor& y) {
  Forward f;
  const at::Tensor h = stage("linear", [&] { return at::linear(x, p[0], p[1]); });
  f.matmul = h.scalar_type();
  const at::Tensor g = stage("gelu", [&] { return at::gelu(h); });
  const at::Tensor n =
      stage("layer_norm", [&] { return at::layer_norm(g, {kHidden}, p[2], p[3]); });
  f.layer_norm = n.scalar_type();
  const at::Tensor logits = stage("linear", [&] { return at::linear(n, p[4], p[5]); });
  const at::Tensor logp = stage("log_softmax", [&] { return at::log_softmax(logits, 1); });
  f.softmax = logp.scalar_type();
  f.loss = stage("nll_loss", [&] { return at::nll_loss(logp, y); });
  return f;
}

std::vector<at::Tensor> fresh_params(const std::vector<at::Tensor>& init) {
  std::vector<at::Tensor> params;
  params.reserve(init.size());
  for (const at::Tensor& t : init) params.push_back(t.clone().detach().requires_grad_(true));
  return params;
}

struct Run {
  std::vector<double> losses;
  std::vector<at::Tensor> params;
  Forward first;
  std::vector<bool> found_inf;  // per step (loss scaling only)
  std::vector<double> scales;   // the scale after each step (loss scaling only)
  double ms = 0.0;              // wall time of the run, results read back included
};

// One SGD step (no momentum) that is skipped, on the device, where `found_inf` is 1: what
// GradScaler.step does with SGD(fused=True), without a host sync; the per-tensor update where
// this LibTorch has no fused SGD for the device (`fused` false). Gradients hold inf/NaN on a
// skipped step.
void sgd_step(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads,
              const std::optional<at::Tensor>& found_inf, const at::TensorOptions& f32,
              bool fused) {
#if PP_TORCH_AT_LEAST(2, 4)
  if (fused) {
    at::_fused_sgd_(params, grads, {}, /*weight_decay=*/0.0, /*momentum=*/0.0, kLearningRate,
                    /*dampening=*/0.0, /*nesterov=*/false, /*maximize=*/false,
                    /*is_first_step=*/false, /*grad_scale=*/std::nullopt, found_inf);
    return;
  }
#else
  static_cast<void>(fused);
#endif
  at::Tensor rate = at::full({1}, kLearningRate, f32);
  if (found_inf) rate = rate * found_inf->eq(0).to(at::kFloat);
  for (std::size_t i = 0; i < params.size(); ++i) {
    // A skipped step's gradients hold inf/NaN: zeroed before the (zero-rate) update, as skipping
    // the optimizer step leaves the parameters untouched.
    params[i].sub_(at::nan_to_num(grads[i], 0.0, 0.0, 0.0) * rate);
  }
}

// `steps` SGD steps; autocast to `dtype` when given; GradScaler-style loss scaling when asked,
// with an overflow injected into one gradient at kInjectedOverflowStep. `skip_like` (per-step
// flags) skips those steps, so that an fp32 run can follow an fp16 run step for step. Nothing
// waits for the device inside the loop: every value is read once at the end.
Run train(const AmpSetup& s, const Target& target, std::optional<at::ScalarType> dtype,
          bool loss_scaling, const std::vector<bool>* skip_like = nullptr) {
  const auto start = Clock::now();
  const std::string label = fmt::format(
      "training {}{}{}", to_string(dtype ? dtype_of(*dtype) : DType::fp32),
      loss_scaling ? " with loss scaling" : "", skip_like ? ", skipping like fp16" : "");
  trace(label + ": started");
  Run run;
  run.params = fresh_params(s.init);
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(target.device);
  at::Tensor scale = at::full({1}, kInitialScale, f32);
  at::Tensor growth_tracker = at::zeros({1}, f32.dtype(at::kInt));
  at::Tensor skip_mask;  // 1.0 at the steps to skip
  if (skip_like != nullptr) {
    std::vector<float> flags;
    for (bool skip : *skip_like) flags.push_back(skip ? 1.0F : 0.0F);
    skip_mask = at::tensor(flags, at::TensorOptions().dtype(at::kFloat)).to(target.device);
  }
  std::vector<at::Tensor> losses, found, scales;
  for (int step = 0; step < kSteps; ++step) {
    Forward f;
    {
      std::optional<AutocastGuard> autocast;
      if (dtype) autocast.emplace(target.device.type(), *dtype);
      f = forward(run.params, s.x, s.y);
    }
    if (step == 0) run.first = f;
    losses.push_back(f.loss.detach().to(at::kFloat).reshape({1}));
    (loss_scaling ? (f.loss * scale).sum() : f.loss).backward();

    const at::NoGradGuard no_grad;
    std::vector<at::Tensor> grads;
    grads.reserve(run.params.size());
    for (const at::Tensor& p : run.params) grads.push_back(p.grad());
    std::optional<at::Tensor> found_inf;
    if (loss_scaling) {
      if (step == kInjectedOverflowStep) {
        grads[0].view(-1).narrow(0, 0, 1).fill_(std::numeric_limits<float>::infinity());
      }
      found_inf = at::zeros({1}, f32);
      at::_amp_foreach_non_finite_check_and_unscale_(grads, *found_inf, scale.reciprocal());
      at::_amp_update_scale_(scale, growth_tracker, *found_inf, 2.0, 0.5, kGrowthInterval);
      found.push_back(*found_inf);
      scales.push_back(scale.clone());
    } else if (skip_mask.defined()) {
      found_inf = skip_mask.narrow(0, step, 1);
    }
    sgd_step(run.params, grads, found_inf, f32, s.fused_sgd);
    for (at::Tensor& p : run.params) p.mutable_grad().reset();  // zero_grad(set_to_none=True)
    if (step == 0) trace(label + ": first step launched");
  }
  const at::Tensor all_losses = at::cat(losses).to(at::kDouble).cpu();
  for (int i = 0; i < kSteps; ++i) run.losses.push_back(all_losses[i].item<double>());
  if (loss_scaling) {
    const at::Tensor f = at::cat(found).cpu();
    const at::Tensor sc = at::cat(scales).to(at::kDouble).cpu();
    for (int i = 0; i < kSteps; ++i) {
      run.found_inf.push_back(f[i].item<float>() != 0.0F);
      run.scales.push_back(sc[i].item<double>());
    }
  }
  run.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  trace(fmt::format("{}: done in {:.1f} ms", label, run.ms));
  return run;
}

bool all_finite(const std::vector<double>& values) {
  for (double v : values) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

// What a correct run must show; "" when it does, else the first problem. The figures are judged
// by training_problem(), as the probe judges them again; the loss scale's whole sequence only here.
std::string check(Mode mode, const Run& run, AmpOutcome& o, bool on_cuda) {
  if (!all_finite(run.losses)) return "wrong result: the loss became NaN or Inf";
  if (mode == Mode::amp_fp16) {
    // The scale sequence must follow GradScaler's rule for the overflows that occurred, and the
    // injected one must have been caught.
    LossScaleModel model;
    model.scale = kInitialScale;
    model.growth_interval = kGrowthInterval;
    for (std::size_t i = 0; i < run.scales.size(); ++i) {
      model.update(run.found_inf[i]);
      if (model.scale != run.scales[i]) {
        return fmt::format("the loss scale after step {} is {} where GradScaler's rule gives {}", i,
                           run.scales[i], model.scale);
      }
    }
    if (!run.found_inf.at(kInjectedOverflowStep)) {
      return fmt::format("the overflow injected at step {} was not detected",
                         kInjectedOverflowStep);
    }
    const double before =
        kInjectedOverflowStep == 0 ? kInitialScale : run.scales[kInjectedOverflowStep - 1];
    if (run.scales[kInjectedOverflowStep] != before * 0.5) {
      return "the loss scale did not halve after the injected overflow";
    }
    o.overflow_handled = true;
  }
  return training_problem(mode, o, on_cuda);
}

}  // namespace

namespace {

// Whether this LibTorch has a fused SGD for the device (a build may lack its kernel), tried once
// on a one-element tensor.
bool fused_sgd_available(const Target& target) {
#if PP_TORCH_AT_LEAST(2, 4)
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(target.device);
  try {
    const at::Tensor p = at::zeros({1}, f32);
    sgd_step({p}, {at::zeros({1}, f32)}, at::zeros({1}, f32), f32, true);
    return true;
  } catch (const c10::NotImplementedError&) {
    return false;
  }
#else
  static_cast<void>(target);
  return false;
#endif
}

}  // namespace

AmpSetup prepare_amp(const Target& target, std::uint64_t seed) {
  AmpSetup s;
  try {
    at::Generator gen = at::detail::createCPUGenerator(seed);
    const auto f32 = at::TensorOptions().dtype(at::kFloat);
    const std::int64_t batch = target.cuda ? kGpuBatch : kCpuBatch;
    const at::Tensor x = at::randn({batch, kIn}, gen, f32);
    // Labels from a random linear teacher: learnable, so a correct run's loss goes down.
    const at::Tensor teacher = at::randn({kIn, kClasses}, gen, f32);
    s.x = x.to(target.device);
    s.y = at::mm(x, teacher).argmax(1).to(target.device);
    s.init = {at::randn({kHidden, kIn}, gen, f32) / std::sqrt(static_cast<double>(kIn)),
              at::zeros({kHidden}, f32),
              at::ones({kHidden}, f32),
              at::zeros({kHidden}, f32),
              at::randn({kClasses, kHidden}, gen, f32) / std::sqrt(static_cast<double>(kHidden)),
              at::zeros({kClasses}, f32)};
    s.init_host = s.init;
    for (at::Tensor& t : s.init) t = t.to(target.device);
    s.fused_sgd = fused_sgd_available(target);
    s.ready = true;
  } catch (const std::exception& e) {
    s.error = "the training data could not be prepared: " + error_text(e);
  }
  return s;
}

std::vector<Preload> amp_preloads(const std::vector<Mode>& modes, const Target& target) {
  std::vector<Preload> preloads;
  if (!target.cuda || modes.empty() || !unusable_reason(target).empty()) return preloads;
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(target.device);
  // Tensors of the training shapes, on the device, made in the preloads themselves (zeros: the
  // values do not matter, and the kernel that fills them is one the training runs use too).
  struct Shapes {
    at::Tensor x, w, b, y;
  };
  auto shapes = [f32](at::ScalarType t) {
    return Shapes{at::zeros({kGpuBatch, kIn}, f32.dtype(t)),
                  at::zeros({kHidden, kIn}, f32.dtype(t)), at::zeros({kHidden}, f32.dtype(t)),
                  at::zeros({kGpuBatch}, f32.dtype(at::kLong))};
  };
  auto add = [&preloads, &target](std::function<void()> op) {
    preloads.emplace_back([op = std::move(op), &target] {
      const at::NoGradGuard no_grad;
      op();
      synchronize(target);
    });
  };
  // The operations of forward(), its backward pass, train() and sgd_step(): keep them in step.
  // One left out costs time only (its code loads when the training runs first meet it).
  std::vector<at::ScalarType> dtypes = {at::kFloat};
  for (Mode mode : modes) dtypes.push_back(low_dtype(mode));
  for (at::ScalarType t : dtypes) {
    // The linear layers, through cuBLAS (one module per type and layout): forward with its
    // bias, the input gradient, the weight gradient. Autocast's casts come with them.
    add([=] {
      const Shapes s = shapes(at::kFloat);
      at::linear(s.x.to(t), s.w.to(t), s.b.to(t));
    });
    add([=] {
      const Shapes s = shapes(t);
      at::mm(s.x, s.w);
    });
    add([=] {
      const Shapes s = shapes(t);
      at::mm(s.x.t(), s.x);
    });
  }
  add([=] { shapes(at::kFloat).x.sum(0); });  // bias gradients
  add([=] {
    const at::Tensor x = shapes(at::kFloat).x;
    at::gelu_backward(x, at::gelu(x));
  });
  add([=] {
    const Shapes s = shapes(at::kFloat);
    const auto [out, mean, rstd] = at::native_layer_norm(s.x, {kHidden}, s.b, s.b, 1e-5);
    at::native_layer_norm_backward(out, s.x, {kHidden}, mean, rstd, s.b, s.b, {true, true, true});
  });
  add([=] {
    const Shapes s = shapes(at::kFloat);
    const at::Tensor logp = at::log_softmax(s.x, 1);  // kIn columns stand for kClasses
    at::_log_softmax_backward_data(logp, logp, 1, at::kFloat);
    const auto [loss, total_weight] =
        at::nll_loss_forward(logp, s.y, {}, at::Reduction::Mean, -100);
    at::nll_loss_backward(loss, logp, s.y, {}, at::Reduction::Mean, -100, total_weight);
  });
  add([=] {
    // Loss scaling, and what train() does with the losses and flags it keeps.
    std::vector<at::Tensor> grads = {shapes(at::kFloat).w};
    at::Tensor scale = at::full({1}, kInitialScale, f32);
    at::Tensor growth_tracker = at::zeros({1}, f32.dtype(at::kInt));
    at::Tensor found_inf = at::zeros({1}, f32);
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, scale.reciprocal());
    at::_amp_update_scale_(scale, growth_tracker, found_inf, 2.0, 0.5, kGrowthInterval);
    at::cat({(found_inf * scale).sum().reshape({1}), found_inf}).to(at::kDouble);
  });
  add([=] {
    const Shapes s = shapes(at::kFloat);
    try {
      sgd_step({s.w, s.b}, {s.w.clone(), s.b.clone()}, at::zeros({1}, f32), f32, true);
    } catch (const std::exception&) {
      // No fused SGD for this device: prepare_amp() finds that out for the runs.
    }
  });
  return preloads;
}

std::vector<double> train_fp32(const AmpSetup& setup, const Target& target) {
  return train(setup, target, std::nullopt, false).losses;
}

namespace {

// One training run's result, or why it has none.
struct Attempt {
  std::optional<Run> run;
  std::string error;
  bool autocast_gap = false;
};

Attempt attempt(const std::function<Run()>& fn) {
  Attempt a;
  try {
    a.run = fn();
  } catch (const AutocastGap& e) {
    a.error = e.what();
    a.autocast_gap = true;
  } catch (const std::exception& e) {
    a.error = error_text(e);
  }
  return a;
}

// Runs every job at once and waits for all. Training is host-bound (many small kernels): threads
// overlap the launching.
std::vector<Attempt> run_all(const std::vector<std::function<Run()>>& jobs) {
  std::vector<Attempt> attempts(jobs.size());
  run_at_once(jobs.size(), [&](std::size_t i) { attempts[i] = attempt(jobs[i]); });
  return attempts;
}

// Whether this LibTorch refuses autocast to the mode's dtype on this device, or an operation of
// the model under it: one forward pass on a few rows finds out before the runs, so that a refused
// mode costs no training runs (its fp32 reference would be work whose answer is known). CPU
// autocast is where LibTorch refuses (1.13: fp16 at all, bf16 in layer_norm); CUDA autocast takes
// both dtypes, and a GPU's start-up has no milliseconds to spare.
std::optional<Attempt> refusal(Mode mode, const AmpSetup& s, const Target& target) {
  if (target.cuda) return std::nullopt;
  Attempt a = attempt([&] {
    const at::NoGradGuard no_grad;
    const AutocastGuard autocast(target.device.type(), low_dtype(mode));
    forward(s.init, s.x.narrow(0, 0, 8), s.y.narrow(0, 0, 8));
    return Run{};
  });
  if (a.run) return std::nullopt;
  return a;
}

AmpOutcome outcome_of(Mode mode, const Attempt& amp, const Attempt& fp32, const AmpSetup& s,
                      const Target& target) {
  AmpOutcome o;
  o.steps = kSteps;
  o.loss_tolerance = amp_loss_tolerance(mode);
  if (!amp.run) {
    o.error = amp.error;
    o.error_kind = amp.autocast_gap ? ErrorKind::not_supported : classify_error(amp.error);
    return o;
  }
  if (!fp32.run) {
    o.error = "the fp32 reference run failed: " + fp32.error;
    o.error_kind = classify_error(fp32.error);
    return o;
  }
  const Run& run = *amp.run;
  o.ran = true;
  o.ms = run.ms;
  o.loss_start = run.losses.front();
  o.loss_end = run.losses.back();
  o.fp32_loss_end = fp32.run->losses.back();
  o.loss_rel_diff = loss_distance(o);
  o.matmul_dtype = dtype_of(run.first.matmul);
  o.layer_norm_dtype = dtype_of(run.first.layer_norm);
  o.softmax_dtype = dtype_of(run.first.softmax);
  o.loss_dtype = dtype_of(run.first.loss.scalar_type());
  for (std::size_t i = 0; i < run.params.size(); ++i) {
    // Compared on the CPU: a copy back needs no kernel (and so no kernel to load).
    if (!at::equal(run.params[i].detach().cpu(), s.init_host[i])) o.params_changed = true;
  }
  if (mode == Mode::amp_fp16) {
    o.initial_scale = kInitialScale;
    o.final_scale = run.scales.back();
    o.injected_overflow_step = kInjectedOverflowStep;
    for (bool skipped : run.found_inf) o.skipped_steps += skipped ? 1 : 0;
  }
  o.error = check(mode, run, o, target.cuda);
  o.ok = o.error.empty();
  if (!o.ok) o.error_kind = ErrorKind::wrong_result;
  return o;
}

}  // namespace

std::vector<std::pair<Mode, AmpOutcome>> run_amp(const std::vector<Mode>& modes, const AmpSetup& s,
                                                 const Target& target) {
  std::vector<std::pair<Mode, AmpOutcome>> outcomes;
  std::string not_run = s.ready ? unusable_reason(target) : s.error;
  if (!not_run.empty()) {
    for (Mode mode : modes) {
      AmpOutcome o;
      o.steps = kSteps;
      o.loss_tolerance = amp_loss_tolerance(mode);
      o.error = not_run;
      o.error_kind = s.ready ? ErrorKind::unavailable : classify_error(not_run);
      outcomes.emplace_back(mode, o);
    }
    return outcomes;
  }
  // Every run at once: each AMP run, and its fp32 reference. fp16 skips the step whose gradient
  // overflows, so its reference skips the same step: the injected one, unless the fp16 run shows
  // otherwise (then the reference is run again, below, following the steps it really skipped).
  std::vector<bool> expected_skips(kSteps, false);
  expected_skips[kInjectedOverflowStep] = true;
  std::vector<std::function<Run()>> jobs;
  std::vector<std::pair<std::size_t, std::size_t>> pairs;  // (amp job, fp32 job) per mode
  std::vector<Mode> admitted;
  for (Mode mode : modes) {
    if (const auto refused = refusal(mode, s, target)) {
      AmpOutcome o = outcome_of(mode, *refused, *refused, s, target);
      outcomes.emplace_back(mode, o);
      continue;
    }
    admitted.push_back(mode);
    const bool scaling = mode == Mode::amp_fp16;
    const std::size_t amp_job = jobs.size();
    jobs.emplace_back(
        [&s, &target, mode, scaling] { return train(s, target, low_dtype(mode), scaling); });
    jobs.emplace_back([&s, &target, scaling, &expected_skips] {
      return train(s, target, std::nullopt, false, scaling ? &expected_skips : nullptr);
    });
    pairs.emplace_back(amp_job, amp_job + 1);
  }
  std::vector<Attempt> attempts = run_all(jobs);
  for (std::size_t i = 0; i < admitted.size(); ++i) {
    const Attempt& amp = attempts[pairs[i].first];
    Attempt& fp32 = attempts[pairs[i].second];
    if (admitted[i] == Mode::amp_fp16 && amp.run && amp.run->found_inf != expected_skips) {
      const std::vector<bool> skipped = amp.run->found_inf;
      fp32 = attempt([&] { return train(s, target, std::nullopt, false, &skipped); });
    }
    outcomes.emplace_back(admitted[i], outcome_of(admitted[i], amp, fp32, s, target));
  }
  // In the order asked for.
  std::vector<std::pair<Mode, AmpOutcome>> ordered;
  for (Mode mode : modes) {
    for (auto& entry : outcomes) {
      if (entry.first == mode) ordered.push_back(std::move(entry));
    }
  }
  return ordered;
}

void measure_amp_memory(Mode mode, AmpOutcome& o, AmpSetup& s, const Target& target) {
  if (!target.cuda || !o.ran || !s.ready) return;
  try {
    // The training step itself, at the training shapes: its kernels are loaded already.
    auto one_step = [&](std::optional<at::ScalarType> dtype) {
      std::vector<at::Tensor> params = fresh_params(s.init);
      synchronize(target);
      reset_peak_memory(target);
      const std::int64_t base = allocated_bytes(target).value_or(0);
      {
        std::optional<AutocastGuard> autocast;
        if (dtype) autocast.emplace(target.device.type(), *dtype);
        const Forward f = forward(params, s.x, s.y);
        f.loss.backward();
      }
      synchronize(target);
      const auto peak = peak_allocated_bytes(target);
      return peak ? std::optional<std::int64_t>(*peak - base) : std::nullopt;
    };
    if (!s.fp32_peak_bytes) s.fp32_peak_bytes = one_step(std::nullopt);  // once for every mode
    o.fp32_peak_bytes = s.fp32_peak_bytes;
    o.peak_bytes = one_step(low_dtype(mode));
  } catch (const std::exception& e) {
    // Memory figures are informative: a failure here leaves them empty, the verdict stands.
    trace(std::string("memory measurement failed: ") + error_text(e));
  }
}

}  // namespace precision_probe::engine
