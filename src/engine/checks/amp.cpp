// Mixed-precision training steps as PyTorch's AMP runs them, through LibTorch's stable C ABI:
// the matmuls in fp16 or bf16 with fp32 master weights, the loss and its log-softmax in fp32, the
// backward pass written out (no C function reads a tensor's .grad), and for fp16 dynamic loss
// scaling with GradScaler's semantics through LibTorch's own kernels. Autocast has no C entry:
// its casts are applied explicitly, as autocast would place them for this model, and each run's
// `method` says so. Each run is checked against an fp32 run of the same steps on the same data.
//
// The model: Linear -> tanh -> Linear -> log-softmax -> cross-entropy (one-hot), every operator
// without list, string or Scalar arguments, so that 2.9's C ABI runs it; the fp16 scaler's unscale
// (a tensor list) and the fused SGD step need 2.10, and on 2.9 are written out per tensor.

#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "engine/host/host_math.hpp"
#include "threads/threads.hpp"
#include "trace/trace.hpp"
#include "wire/training_check.hpp"
#include "engine/checks/checks.hpp"

namespace precision_probe::engine {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kSteps = 24;
// The batch: on a GPU large enough that activations, not parameters, dominate the memory
// measurement; on a CPU small, since there the arithmetic is real time, and smaller where one CPU
// is usable (amp_batch).
constexpr std::int64_t kGpuBatch = 2048;
constexpr std::int64_t kCpuBatch = 256;
constexpr std::int64_t kOneCpuBatch = 64;
constexpr std::int64_t kIn = 256;
constexpr std::int64_t kHidden = 256;
constexpr std::int64_t kClasses = 256;
constexpr double kLearningRate = 0.25;
constexpr double kInitialScale = 65536.0;
constexpr int kGrowthInterval = 8;  // short, so that growth happens within the run
constexpr int kInjectedOverflowStep = 3;

Scalar low_of(Mode mode) { return mode == Mode::amp_fp16 ? Scalar::f16 : Scalar::bf16; }

DType dtype_of(Scalar s) {
  switch (s) {
    case Scalar::f32: return DType::fp32;
    case Scalar::f16: return DType::fp16;
    case Scalar::bf16: return DType::bf16;
    case Scalar::f64: return DType::fp64;
    case Scalar::e4m3:
    case Scalar::e5m2:
    case Scalar::e8m0:
    case Scalar::fp4x2:
    case Scalar::i8:
    case Scalar::u8:
    case Scalar::i16:
    case Scalar::i32:
    case Scalar::i64:
    case Scalar::boolean: break;
  }
  return DType::other;
}

// The tensors every step of a run uses.
struct Inputs {
  Tensor x;              // [batch, in] fp32
  Tensor x_low;          // in the matmuls' dtype
  Tensor grad_logp;      // d(loss)/d(log p) = -onehot / batch, fp32
  Tensor ones_low;       // [batch] in the matmuls' dtype, for the bias gradients
  Tensor neg_inv_batch;  // [] fp32: -1 / batch
  Tensor onehot;         // [batch, classes] fp32
  Tensor zero;           // [1] fp32
  Tensor zero_bias;      // [hidden] fp32 zeros, the fp32 runs' alone (weight_gradient)
};

// What one step's forward pass left for its backward pass and the report.
struct Forward {
  Tensor w1, b1, w2, b2;  // the parameters in the matmuls' dtype (autocast's casts)
  Tensor h;               // tanh's output
  Tensor logp;            // fp32, contiguous
  Tensor loss;            // [1] fp32
  Scalar matmul = Scalar::f32;
};

Forward forward(const std::vector<Tensor>& p, const Inputs& in, Scalar low) {
  Forward f;
  f.w1 = converted(p[0], low);
  f.b1 = converted(p[1], low);
  const Tensor pre = linear(in.x_low, f.w1, f.b1);
  f.matmul = pre.scalar();
  f.h = tanh(pre);
  f.w2 = converted(p[2], low);
  f.b2 = converted(p[3], low);
  const Tensor logits = linear(f.h, f.w2, f.b2);
  f.logp = log_softmax(converted(logits, Scalar::f32), 1);  // autocast: log_softmax in fp32
  // The loss, -sum(onehot * logp) / batch: the sum as a GEMV of the flattened tensors, whose
  // kernels the fp32 runs' bias gradients load anyway (a reduction loads a module of its own).
  const std::int64_t n = f.logp.numel();
  f.loss = mul(mv(f.logp.view({1, n}, {n, 1}), in.onehot.view({n}, {1})), in.neg_inv_batch);
  return f;
}

// A weight's gradient, g^T x. The fp32 runs (the AMP runs' references) take LibTorch's linear with
// a zero bias: cuBLASLt's fp32 GEMM, whose kernels the forward pass's linear has loaded (on an H100
// with 2.11 the same losses to the bit as mm). As mm, the transposed product's first call took
// cuBLAS's classic path, which nothing else in the run uses: the tree held 14-15 MiB more on an
// H100 (docs/performance.md). The AMP runs' own gradients stay mm, as autograd runs them.
Tensor weight_gradient(const Tensor& g_t, const Tensor& x, const Inputs& in, Scalar low) {
  if (low != Scalar::f32) return mm(g_t, x);
  static_assert(kIn == kHidden, "one zero bias serves both weight gradients");
  return linear(g_t, x.t(), in.zero_bias);
}

// The gradients of the fp32 parameters, the loss multiplied by `scale` (or by 1).
std::vector<Tensor> backward(const Forward& f, const Inputs& in, Scalar low, const Tensor* scale) {
  const Tensor grad_logp = scale != nullptr ? mul(in.grad_logp, *scale) : in.grad_logp.share();
  const Tensor g_logits = converted(log_softmax_backward(grad_logp, f.logp, 1, Scalar::f32), low);
  const Tensor g_logits_t = g_logits.t();
  const Tensor gw2 = weight_gradient(g_logits_t, f.h, in, low);
  const Tensor gb2 = mv(g_logits_t, in.ones_low);
  const Tensor g_pre = tanh_backward(mm(g_logits, f.w2), f.h);
  const Tensor g_pre_t = g_pre.t();
  const Tensor gw1 = weight_gradient(g_pre_t, in.x_low, in, low);
  const Tensor gb1 = mv(g_pre_t, in.ones_low);
  // Back through autocast's casts: the master weights' gradients in fp32.
  std::vector<Tensor> grads;
  for (const Tensor* g : {&gw1, &gb1, &gw2, &gb2}) grads.push_back(converted(*g, Scalar::f32));
  return grads;
}

// GradScaler's unscale: the gradients times 1/scale, found_inf set where one is not finite.
// 2.10: LibTorch's own kernel (it takes a tensor list); 2.9: the same, written out per tensor.
void unscale(const std::vector<Tensor>& grads, const Tensor& found_inf, const Tensor& scale) {
  const Tensor inv_scale = reciprocal(scale);
  const Torch& torch = scale.torch();
  if (op_problem(torch, Op::amp_unscale).empty()) {
    amp_unscale(grads, found_inf, inv_scale);
    return;
  }
  for (const Tensor& g : grads) {
    copy_into(g, mul(g, inv_scale));
    const Tensor bad = converted(logical_not(all(isfinite(g))), Scalar::f32);
    copy_into(found_inf, maximum(found_inf, bad.view({1}, {1})));
  }
}

// One SGD step (no momentum), skipped on the device where `skip` holds 1: what GradScaler.step
// does with SGD(fused=True), without a host sync. 2.10: LibTorch's fused SGD; 2.9 (no lists): per
// tensor, the old value kept where the step is skipped (its gradients hold inf or NaN).
void sgd_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
              const Tensor* skip, const Inputs& in, bool fused) {
  if (fused) {
    fused_sgd(params, grads, kLearningRate, skip);
    return;
  }
  std::optional<Tensor> skipped;
  if (skip != nullptr) skipped = ne(*skip, in.zero);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor stepped = add(params[i], grads[i], -kLearningRate);
    if (skipped) {
      copy_into(params[i], where(*skipped, params[i], stepped));
    } else {
      copy_into(params[i], stepped);
    }
  }
}

struct Run {
  std::vector<double> losses;
  std::vector<bool> found_inf;  // per step (loss scaling only)
  std::vector<double> scales;   // the scale after each step (loss scaling only)
  std::vector<std::vector<double>> params;
  Scalar matmul = Scalar::f32, softmax = Scalar::f32, loss = Scalar::f32;
  double ms = 0.0;  // wall time of the run, results read back included
};

std::vector<Tensor> fresh_params(const AmpSetup& s, const Target& target) {
  const Sizes shapes[4] = {{kHidden, kIn}, {kHidden}, {kClasses, kHidden}, {kClasses}};
  std::vector<Tensor> params;
  for (std::size_t i = 0; i < 4; ++i) {
    params.push_back(upload(*target.torch, s.init[i], shapes[i], Scalar::f32, target.device));
  }
  return params;
}

Inputs inputs_for(const AmpSetup& s, const Target& target, Scalar low) {
  const Torch& torch = *target.torch;
  Inputs in;
  in.x = upload(torch, s.x, {s.batch, kIn}, Scalar::f32, target.device);
  in.x_low = converted(in.x, low);
  in.onehot = upload(torch, s.onehot, {s.batch, kClasses}, Scalar::f32, target.device);
  in.neg_inv_batch = upload(torch, std::vector<float>{-1.0F / static_cast<float>(s.batch)}, {},
                            Scalar::f32, target.device);
  in.grad_logp = mul(in.onehot, in.neg_inv_batch);
  in.zero = upload(torch, std::vector<float>{0.0F}, {1}, Scalar::f32, target.device);
  if (low == Scalar::f32) {
    in.zero_bias = upload(torch, std::vector<float>(static_cast<std::size_t>(kHidden), 0.0F),
                          {kHidden}, Scalar::f32, target.device);
  }
  in.ones_low = converted(upload(torch, std::vector<float>(static_cast<std::size_t>(s.batch), 1.0F),
                                 {s.batch}, Scalar::f32, target.device),
                          low);
  return in;
}

// A one-element view of `t` at `index` (slots of the per-step records).
Tensor slot(const Tensor& t, std::int64_t index) { return t.view({1}, {1}, index); }

// How a run scales its loss: GradScaler's (fp16), following another run's skips (the fp32
// reference of fp16), or not at all.
struct Scaling {
  bool scaler = false;
  const std::vector<bool>* skip_like = nullptr;
};

Run train(const AmpSetup& s, const Target& target, Scalar low, Scaling how, bool fused) {
  const auto start = Clock::now();
  const Torch& torch = *target.torch;
  const std::string label =
      fmt::format("training {}{}{}", scalar_info(low).name, how.scaler ? " with loss scaling" : "",
                  how.skip_like != nullptr ? ", skipping like fp16" : "");
  trace(label + ": started");
  Run run;
  const Inputs in = inputs_for(s, target, low);
  std::vector<Tensor> params = fresh_params(s, target);
  const Tensor scale = upload(torch, std::vector<float>{static_cast<float>(kInitialScale)}, {1},
                              Scalar::f32, target.device);
  const Tensor growth =
      upload(torch, std::vector<std::int32_t>{0}, {1}, Scalar::i32, target.device);
  const Tensor losses = empty(torch, {kSteps}, Scalar::f32, target.device);
  const Tensor found_log = empty(torch, {kSteps}, Scalar::f32, target.device);
  const Tensor scale_log = empty(torch, {kSteps}, Scalar::f32, target.device);
  // The injected overflow: an infinity copied into a gradient (a copy's kernels are loaded for
  // autocast's casts anyway; a fill would load a module of kernels of its own, on the host too).
  std::optional<Tensor> infinity;
  if (how.scaler) {
    infinity = upload(torch, std::vector<float>{HUGE_VALF}, {1}, Scalar::f32, target.device);
  }
  std::optional<Tensor> skips;
  if (how.skip_like != nullptr) {
    std::vector<float> flags;
    for (bool skip : *how.skip_like) flags.push_back(skip ? 1.0F : 0.0F);
    skips = upload(torch, flags, {kSteps}, Scalar::f32, target.device);
  }
  for (int step = 0; step < kSteps; ++step) {
    const Forward f = forward(params, in, low);
    if (step == 0) {
      run.matmul = f.matmul;
      run.softmax = f.logp.scalar();
      run.loss = f.loss.scalar();
    }
    copy_into(slot(losses, step), f.loss.view({1}, {1}));
    const std::vector<Tensor> grads = backward(f, in, low, how.scaler ? &scale : nullptr);
    std::optional<Tensor> skip;
    if (how.scaler) {
      if (step == kInjectedOverflowStep) copy_into(grads[0].view({1}, {1}), *infinity);
      skip = upload(torch, std::vector<float>{0.0F}, {1}, Scalar::f32, target.device);
      unscale(grads, *skip, scale);
      amp_update_scale(scale, growth, *skip, 2.0, 0.5, kGrowthInterval);
      copy_into(slot(found_log, step), *skip);
      copy_into(slot(scale_log, step), scale);
    } else if (skips) {
      skip = slot(*skips, step);
    }
    sgd_step(params, grads, skip ? &*skip : nullptr, in, fused);
    if (step == 0) trace(label + ": first step launched");
  }
  for (double v : download_values(losses)) run.losses.push_back(v);
  if (how.scaler) {
    for (double v : download_values(found_log)) run.found_inf.push_back(v != 0.0);
    run.scales = download_values(scale_log);
  }
  for (const Tensor& p : params) run.params.push_back(download_values(p));
  run.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  trace(fmt::format("{}: done in {:.1f} ms", label, run.ms));
  return run;
}

}  // namespace
}  // namespace precision_probe::engine

namespace precision_probe::engine {

namespace {

bool all_finite(const std::vector<double>& values) {
  for (double v : values) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

// The loss scale's whole sequence against GradScaler's rule, and the injected overflow caught;
// "" when it holds.
std::string scaler_problem(const Run& run, AmpOutcome& o) {
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
    return fmt::format("the overflow injected at step {} was not detected", kInjectedOverflowStep);
  }
  const double before =
      kInjectedOverflowStep == 0 ? kInitialScale : run.scales[kInjectedOverflowStep - 1];
  if (run.scales[kInjectedOverflowStep] != before * 0.5) {
    return "the loss scale did not halve after the injected overflow";
  }
  o.overflow_handled = true;
  return "";
}

// One training run's result, or why it has none.
struct Attempt {
  std::optional<Run> run;
  std::string error;
  ErrorKind kind = ErrorKind::none;
};

Attempt attempt(const std::function<Run()>& fn) {
  Attempt a;
  try {
    a.run = fn();
  } catch (const std::exception& e) {
    SmokeOutcome failed;
    record_failure(failed, e);
    a.error = failed.error;
    a.kind = failed.error_kind;
  }
  return a;
}

AmpOutcome outcome_of(Mode mode, const Attempt& amp, const Attempt& fp32, const AmpSetup& s,
                      const Target& target) {
  AmpOutcome o;
  o.steps = kSteps;
  o.loss_tolerance = amp_loss_tolerance(mode);
  o.method = fmt::format("{}; {} steps at a batch of {}", amp_method(mode, *target.torch), kSteps,
                         s.batch);
  if (!amp.run) {
    o.error = amp.error;
    o.error_kind = amp.kind;
    return o;
  }
  if (!fp32.run) {
    o.error = "the fp32 reference run failed: " + fp32.error;
    o.error_kind = fp32.kind;
    return o;
  }
  const Run& run = *amp.run;
  o.ran = true;
  o.ms = run.ms;
  o.loss_start = run.losses.front();
  o.loss_end = run.losses.back();
  o.fp32_loss_end = fp32.run->losses.back();
  o.loss_rel_diff = loss_distance(o);
  o.matmul_dtype = dtype_of(run.matmul);
  o.softmax_dtype = dtype_of(run.softmax);
  o.loss_dtype = dtype_of(run.loss);
  for (std::size_t i = 0; i < run.params.size(); ++i) {
    for (std::size_t j = 0; j < run.params[i].size(); ++j) {
      if (run.params[i][j] != static_cast<double>(s.init[i][j])) o.params_changed = true;
    }
  }
  if (mode == Mode::amp_fp16) {
    o.initial_scale = kInitialScale;
    o.final_scale = run.scales.back();
    o.injected_overflow_step = kInjectedOverflowStep;
    for (bool skipped : run.found_inf) o.skipped_steps += skipped ? 1 : 0;
  }
  if (!all_finite(run.losses)) {
    o.error = "wrong result: the loss became NaN or Inf";
  } else if (mode == Mode::amp_fp16) {
    o.error = scaler_problem(run, o);
  }
  if (o.error.empty()) o.error = training_problem(mode, o);
  o.ok = o.error.empty();
  if (!o.ok) o.error_kind = ErrorKind::wrong_result;
  return o;
}

// Whether this LibTorch has a fused SGD for the device (a build may lack its kernel, a release
// its list arguments), tried once on a one-element tensor.
bool fused_sgd_works(const Target& target) {
  if (!op_problem(*target.torch, Op::fused_sgd).empty()) return false;
  try {
    std::vector<Tensor> p;
    std::vector<Tensor> g;
    p.push_back(upload(*target.torch, std::vector<float>{1.0F}, {1}, Scalar::f32, target.device));
    g.push_back(upload(*target.torch, std::vector<float>{1.0F}, {1}, Scalar::f32, target.device));
    fused_sgd(p, g, 0.5, nullptr);
    return download_values(p.front()).at(0) == 0.5;
  } catch (const std::exception&) {
    return false;
  }
}

// Peak bytes of the tensors one training step holds (counted by the engine: MemoryLedger).
std::optional<std::int64_t> step_bytes(const AmpSetup& s, const Target& target, Scalar low) {
  try {
    const Inputs in = inputs_for(s, target, low);
    const std::vector<Tensor> params = fresh_params(s, target);
    const MemoryLedger ledger;
    {
      const Forward f = forward(params, in, low);
      backward(f, in, low, nullptr);
    }
    return ledger.peak_bytes();
  } catch (const std::exception& e) {
    // Memory figures are informative: a failure leaves them empty, the verdict stands.
    trace(std::string("memory measurement failed: ") + e.what());
    return std::nullopt;
  }
}

}  // namespace

std::string amp_method(Mode mode, const Torch& torch) {
  std::string method = fmt::format(
      "explicit casts as autocast places them (the C ABI has no autocast): matmuls in {}, "
      "log-softmax and loss in fp32, fp32 master weights; backward pass written out",
      mode == Mode::amp_fp16 ? "fp16" : "bf16");
  const bool lists = op_problem(torch, Op::amp_unscale).empty();
  if (mode == Mode::amp_fp16) {
    method += lists ? "; GradScaler's _amp_foreach_non_finite_check_and_unscale_ and "
                      "_amp_update_scale_"
                    : fmt::format(
                          "; _amp_update_scale_, the unscale written out per tensor "
                          "({} passes no tensor lists)",
                          torch.release_text());
  }
  method += op_problem(torch, Op::fused_sgd).empty()
                ? "; SGD by _fused_sgd_ where the device has it"
                : "; SGD per tensor";
  return method;
}

std::int64_t amp_batch(bool gpu, unsigned cpus) {
  if (gpu) return kGpuBatch;
  return cpus <= 1 ? kOneCpuBatch : kCpuBatch;
}

AmpSetup prepare_amp(std::int64_t batch, std::uint64_t seed) {
  AmpSetup s;
  s.batch = batch;
  HostRandom random(seed);
  auto normals = [&random](std::int64_t count, double scale) {
    std::vector<float> v(static_cast<std::size_t>(count));
    for (float& x : v) x = static_cast<float>(random.normal() * scale);
    return v;
  };
  s.x = normals(s.batch * kIn, 1.0);
  // Labels from a random linear teacher: learnable, so a correct run's loss goes down.
  const std::vector<float> teacher = normals(kIn * kClasses, 1.0);
  s.onehot = argmax_labels(s.x, teacher, s.batch, kIn, kClasses);
  s.init = {normals(kHidden * kIn, 1.0 / std::sqrt(static_cast<double>(kIn))),
            std::vector<float>(kHidden, 0.0F),
            normals(kClasses * kHidden, 1.0 / std::sqrt(static_cast<double>(kHidden))),
            std::vector<float>(kClasses, 0.0F)};
  return s;
}

std::vector<Preload> amp_preloads(const std::vector<Mode>& modes, const AmpSetup& setup,
                                  const Target& target) {
  std::vector<Preload> preloads;
  if (!target.on_gpu() || modes.empty()) return preloads;
  // One step of each run's kind, alone, at the training shapes: its kernels' code is loaded.
  std::vector<Scalar> lows = {Scalar::f32};
  for (Mode mode : modes) lows.push_back(low_of(mode));
  for (Scalar low : lows) {
    preloads.emplace_back([&setup, &target, low] {
      const Inputs in = inputs_for(setup, target, low);
      const std::vector<Tensor> params = fresh_params(setup, target);
      const Forward f = forward(params, in, low);
      backward(f, in, low, nullptr);
      target.synchronize();
    });
  }
  return preloads;
}

PerMode<AmpOutcome> run_amp(const std::vector<Mode>& modes, const AmpSetup& s, const Target& target,
                            CpuRuns cpu_runs) {
  const bool fused = fused_sgd_works(target);
  // fp16 skips the step whose gradient overflows, so its reference skips the same step: the
  // injected one, unless the fp16 run shows otherwise (then the reference runs again, following
  // the steps it really skipped).
  std::vector<bool> expected_skips(kSteps, false);
  expected_skips[kInjectedOverflowStep] = true;
  std::vector<std::function<Run()>> jobs;
  for (Mode mode : modes) {
    const bool scaler = mode == Mode::amp_fp16;
    jobs.emplace_back([&, mode, scaler] {
      return train(s, target, low_of(mode), {scaler, nullptr}, fused);
    });
    jobs.emplace_back([&, scaler] {
      return train(s, target, Scalar::f32, {false, scaler ? &expected_skips : nullptr}, fused);
    });
  }
  std::vector<Attempt> attempts(jobs.size());
  Threads threads;
  const bool in_turn = !target.on_gpu() && cpu_runs == CpuRuns::in_turn;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto work = [&attempts, &jobs, i] { attempts[i] = attempt(jobs[i]); };
    if (in_turn || i + 1 == jobs.size() || !threads.start(work)) threads.run_here(work);
  }
  threads.wait();
  PerMode<AmpOutcome> outcomes;
  std::optional<std::int64_t> fp32_bytes;
  for (std::size_t i = 0; i < modes.size(); ++i) {
    const Attempt& amp = attempts[2 * i];
    Attempt& fp32 = attempts[2 * i + 1];
    if (modes[i] == Mode::amp_fp16 && amp.run && amp.run->found_inf != expected_skips) {
      const std::vector<bool> skipped = amp.run->found_inf;
      fp32 = attempt([&] { return train(s, target, Scalar::f32, {false, &skipped}, fused); });
    }
    AmpOutcome o = outcome_of(modes[i], amp, fp32, s, target);
    if (target.on_gpu() && o.ran) {
      if (!fp32_bytes) fp32_bytes = step_bytes(s, target, Scalar::f32);
      o.fp32_peak_bytes = fp32_bytes;
      o.peak_bytes = step_bytes(s, target, low_of(modes[i]));
    }
    outcomes.set(modes[i], o);
  }
  return outcomes;
}

}  // namespace precision_probe::engine
