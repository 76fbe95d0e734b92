#pragma once
// From hardware support and smoke outcome to a status with its reason; the recommendation.

#include <optional>
#include <string>

#include "arch/arch.hpp"
#include "precision_probe/report.hpp"

namespace precision_probe {

// The status of a check that did not pass, by what kept it from passing: failed only for wrong
// numbers, a runtime error, a crash or a hang past --check-timeout; cannot_run, refused,
// out_of_time and interrupted for a stack, a setting, the run's deadline or a signal; unsupported
// and not_tested for a refusal of the operation and a check that did not run.
Status status_of_failure(ErrorKind kind);
// The same for a check that ran and did not pass: failed, but where a deadline, a signal, a stack
// or a setting cut it off.
Status status_of_broken_check(ErrorKind kind);

// Combines what the hardware offers with what the smoke test showed:
//   ran correctly:        native (hardware native) or emulated (otherwise, with the reason)
//   refused as unsupported: unsupported, with LibTorch's message
//   did not pass:          status_of_failure (failed for wrong numbers and errors)
//   not run:               unsupported when the hardware has no support, else not_tested
PrecisionResult combine_verdict(const HardwareVerdict& hardware,
                                const std::optional<SmokeOutcome>& smoke,
                                const std::string& not_run_reason);

// The same for a training mode: its run stands where the smoke test stands for a matmul mode.
PrecisionResult combine_amp_verdict(const HardwareVerdict& hardware,
                                    const std::optional<AmpOutcome>& amp,
                                    const std::string& not_run_reason);

// Adds the measured throughput to each precision of `device`: the ratio to fp32, the dense peak
// (datasheet, else formula) and its share. A reduced precision that is not faster than fp32 is not
// native, whatever the table says: its status becomes emulated, and the reason says why.
void apply_bench(DeviceReport& device, const PerMode<BenchOutcome>& bench);

// The usual practice: bf16 autocast without loss scaling where BF16 is native, fp16 autocast with
// dynamic loss scaling where only FP16 is, fp32 otherwise.
Recommendation recommend(const DeviceReport& device);

}  // namespace precision_probe
