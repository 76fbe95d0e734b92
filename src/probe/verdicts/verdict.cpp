#include "probe/verdicts/verdict.hpp"

#include <fmt/format.h>

#include "probe/verdicts/peaks.hpp"

namespace precision_probe {

Status status_of_failure(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::not_supported: return Status::unsupported;
    case ErrorKind::wrong_result:
    case ErrorKind::runtime:
    case ErrorKind::timed_out:
    case ErrorKind::crashed: return Status::failed;
    case ErrorKind::environment: return Status::cannot_run;
    case ErrorKind::refused: return Status::refused;
    case ErrorKind::out_of_time: return Status::out_of_time;
    case ErrorKind::interrupted: return Status::interrupted;
    case ErrorKind::unavailable:
    case ErrorKind::none:
    case ErrorKind::not_run: return Status::not_tested;
  }
  return Status::failed;
}

Status status_of_broken_check(ErrorKind kind) {
  const Status cut = status_of_failure(kind);
  return cut == Status::unsupported || cut == Status::not_tested ? Status::failed : cut;
}

PrecisionResult combine_verdict(const HardwareVerdict& hardware,
                                const std::optional<SmokeOutcome>& smoke,
                                const std::string& not_run_reason) {
  PrecisionResult r;
  r.hardware = hardware.hardware;
  r.hardware_reason = hardware.reason;
  if (smoke) r.smoke = *smoke;

  // The hardware has it and the stack does not (the mode table's word, which the engine follows
  // too: it never runs such a mode, so an answer for one is not taken). A failure still shows.
  if (!hardware.stack_lacks.empty() && hardware.hardware != Hardware::unsupported &&
      !(smoke && smoke->ran && !smoke->ok)) {
    r.status = Status::unsupported;
    r.reason = hardware.stack_lacks;
    return r;
  }
  if (!smoke || !smoke->ran) {
    const bool skipped =
        !smoke || smoke->error_kind == ErrorKind::not_run || smoke->error_kind == ErrorKind::none;
    if (hardware.hardware == Hardware::unsupported && skipped) {
      r.status = Status::unsupported;
      r.reason = hardware.reason;
      return r;
    }

    const ErrorKind kind = smoke ? smoke->error_kind : ErrorKind::not_run;
    const std::string why = smoke && !smoke->error.empty() ? smoke->error : not_run_reason;
    r.status = status_of_failure(kind);
    // A failure names its kind; an unsupported operation and a skipped check have none.
    if (kind != ErrorKind::not_supported && kind != ErrorKind::none && kind != ErrorKind::not_run) {
      r.failure = kind;
    }
    r.reason = why.empty() && r.status == Status::not_tested ? "not tested" : why;
    return r;
  }
  if (!smoke->ok) {
    r.failure = smoke->error_kind == ErrorKind::none ? ErrorKind::wrong_result : smoke->error_kind;
    r.status = status_of_broken_check(r.failure);
    if (!smoke->error.empty()) {
      r.reason = smoke->error;
    } else if (smoke->rel_error) {
      r.reason = fmt::format("wrong result: relative error {:.3g} exceeds the tolerance {:.3g}",
                             *smoke->rel_error, smoke->tolerance);
    } else {
      r.reason = "wrong result: the output contains NaN or Inf";
    }
    return r;
  }
  switch (hardware.hardware) {
    case Hardware::native: r.status = Status::native; return r;
    case Hardware::emulated:
      r.status = Status::emulated;
      r.reason = hardware.reason;
      return r;
    case Hardware::unsupported:
      r.status = Status::emulated;
      r.reason =
          "ran correctly although the hardware has no support for it (" + hardware.reason + ")";
      return r;
  }
  return r;
}

PrecisionResult combine_amp_verdict(const HardwareVerdict& hardware,
                                    const std::optional<AmpOutcome>& amp,
                                    const std::string& not_run_reason) {
  std::optional<SmokeOutcome> check;
  if (amp) {
    SmokeOutcome s;
    s.ran = amp->ran;
    s.ok = amp->ok;
    s.error_kind = amp->error_kind;
    s.error = amp->error;
    if (s.ok) {
      // A passed run carries its measure of closeness, as a smoke test does.
      s.rel_error = amp->loss_rel_diff;
      s.tolerance = amp->loss_tolerance;
    } else if (s.ran && s.error.empty()) {
      s.error = "wrong result: the training run did not pass its checks";
    }
    check = s;
  }
  PrecisionResult r = combine_verdict(hardware, check, not_run_reason);
  r.smoke = SmokeOutcome{};
  r.amp = amp;
  return r;
}

void apply_bench(DeviceReport& device, const PerMode<BenchOutcome>& bench) {
  const BenchOutcome* fp32 = bench.find(Mode::fp32);
  // 0 when fp32 was not measured: then no ratio is formed.
  const double fp32_tflops = fp32 != nullptr && fp32->ok ? fp32->tflops.value_or(0.0) : 0.0;
  for (auto [mode, p] : device.precisions) {
    const BenchOutcome* answer = bench.find(mode);
    if (answer == nullptr) continue;
    BenchResult b;
    b.outcome = *answer;
    if (b.outcome.ok && b.outcome.tflops && fp32_tflops > 0.0) {
      b.ratio_to_fp32 = *b.outcome.tflops / fp32_tflops;
    }
    if (device.gpu) {
      if (auto peak = dense_peak(device.name, device.gpu->cc, device.gpu->sm_count,
                                 device.gpu->clock_ghz, mode)) {
        b.peak_tflops = peak->tflops;
        b.peak_source = peak->source;
        if (b.outcome.ok && b.outcome.tflops)
          b.percent_of_peak = 100.0 * *b.outcome.tflops / peak->tflops;
      }
    }
    if (mode != Mode::fp32 && p.status == Status::native && b.ratio_to_fp32 &&
        *b.ratio_to_fp32 <= 1.0) {
      const double measured = b.outcome.tflops.value_or(0.0);
      const double baseline = fp32_tflops;
      p.status = Status::emulated;
      p.reason = fmt::format(
          "measured {:.3g} TFLOP/s, no faster than fp32's {:.3g} TFLOP/s ({:.2f}x): no hardware "
          "speed-up here",
          measured, baseline, measured / baseline);
    }
    p.bench = b;
  }
  device.recommendation = recommend(device);
}

namespace {

// A mode counts as usable when it is native, or when its hardware is native and it was simply
// not tested (--quick). Anything failed, or kept from running by the machine, rules it out.
bool usable(const DeviceReport& device, Mode mode) {
  const PrecisionResult* p = device.find(mode);
  if (p == nullptr) return false;
  return p->status == Status::native ||
         (p->status == Status::not_tested && p->hardware == Hardware::native &&
          p->failure != ErrorKind::unavailable);
}

// Said when a recommendation rests on the hardware alone: no kernel ran for it.
std::string on_hardware_alone(const DeviceReport& device, Mode mode) {
  const PrecisionResult* p = device.find(mode);
  return p != nullptr && p->status == Status::not_tested
             ? "; this rests on the hardware alone: no kernel ran (--quick)"
             : "";
}

// No reduced precision is usable: why, without claiming the hardware lacks what it has.
Recommendation fp32_because(const DeviceReport& device, const std::string& where) {
  const std::string tf32 =
      usable(device, Mode::tf32) ? " (TF32 matmuls are native: enable them)" : "";
  for (Mode mode : {Mode::bf16, Mode::fp16}) {
    const PrecisionResult* p = device.find(mode);
    if (p == nullptr || p->hardware != Hardware::native) continue;
    return {DType::fp32, false,
            fmt::format("{} has {} in hardware, but here it is {}{}: train in fp32{} until that "
                        "is resolved",
                        where, mode_key(mode), to_string(p->status),
                        p->reason.empty() ? "" : " (" + p->reason + ")", tf32)};
  }
  return {DType::fp32, false,
          fmt::format("{} has no native BF16 or FP16: train in fp32{}", where, tf32)};
}

}  // namespace

Recommendation recommend(const DeviceReport& device) {
  const bool bf16 = usable(device, Mode::bf16) &&
                    (device.find(Mode::amp_bf16) == nullptr || usable(device, Mode::amp_bf16));
  const bool fp16 = usable(device, Mode::fp16) &&
                    (device.find(Mode::amp_fp16) == nullptr || usable(device, Mode::amp_fp16));
  const std::string where = device.kind == DeviceKind::cuda && device.gpu && device.gpu->cc
                                ? fmt::format("cc {} ({})", device.gpu->cc->to_string(),
                                              architecture_name(*device.gpu->cc))
                            : device.kind == DeviceKind::cuda ? std::string("this GPU")
                                                              : std::string("this CPU");
  if (bf16) {
    return {DType::bf16, false,
            fmt::format("{} runs BF16 natively: autocast to bf16; BF16 keeps FP32's exponent "
                        "range, so no loss scaling is needed{}",
                        where, on_hardware_alone(device, Mode::bf16))};
  }
  if (fp16) {
    return {DType::fp16, true,
            fmt::format("{} runs FP16 natively but not BF16: autocast to fp16 with dynamic loss "
                        "scaling (a gradient scaler){}",
                        where, on_hardware_alone(device, Mode::fp16))};
  }
  // Native matmuls whose training run did not pass: say which, rather than "no native bf16".
  for (const auto& [matmul, training] :
       {std::pair{Mode::bf16, Mode::amp_bf16}, std::pair{Mode::fp16, Mode::amp_fp16}}) {
    const PrecisionResult* run = device.find(training);
    if (usable(device, matmul) && run != nullptr && !usable(device, training)) {
      return {DType::fp32, false,
              fmt::format(
                  "{}: {} matmuls are native, but autocast training in {} is {} ({}): train "
                  "in fp32",
                  where, mode_key(matmul), mode_key(matmul), to_string(run->status), run->reason)};
    }
  }
  return fp32_because(device, where);
}

}  // namespace precision_probe
