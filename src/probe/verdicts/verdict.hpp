#pragma once
// From hardware support and smoke outcome to a status with its reason; the recommendation.

#include <optional>
#include <string>

#include "common/arch.hpp"
#include "precision_probe/report.hpp"

namespace precision_probe {

// Combines what the hardware offers with what the smoke test showed:
//   ran correctly:        native (hardware native) or emulated (otherwise, with the reason)
//   refused as unsupported: unsupported, with LibTorch's message
//   wrong numbers, errors: failed
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
