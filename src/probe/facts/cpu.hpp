#pragma once
// The CPU: model, ISA features that matter for low precision, and what they mean per mode.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "precision_probe/modes.hpp"
#include "arch/arch.hpp"
#include "precision_probe/report.hpp"

namespace precision_probe {

// What the cores, clock and vector ISA allow for fp32 FMAs, in GFLOP/s: physical cores x GHz x
// FLOP per cycle (x86: 64 with AVX-512, 32 with AVX2 and FMA, 16 otherwise; Arm: 16). An upper
// bound (turbo and FMA units vary), for telling an optimised BLAS from a reference one.
std::optional<double> cpu_fp32_peak_gflops(const CpuInfo& cpu);
int cpu_fp32_flops_per_cycle(const CpuInfo& cpu);

// The ISA flags the probe looks for, per architecture family.
const std::vector<std::string>& relevant_cpu_features();

// Parses the text of /proc/cpuinfo. `machine` is uname's machine ("x86_64").
CpuInfo parse_cpuinfo(std::string_view cpuinfo_text, std::string_view machine);

bool has_feature(const CpuInfo& cpu, std::string_view feature);

// What the CPU offers for a mode: native when the ISA has the instructions, emulated when
// LibTorch converts to FP32, unsupported for tensor-core-only formats (TF32, FP8, FP4).
HardwareVerdict cpu_hardware_support(const CpuInfo& cpu, Mode mode);

}  // namespace precision_probe
