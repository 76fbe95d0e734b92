#pragma once
// Datasheet dense peak throughput per product and precision, with a formula fallback (SMs x clock
// x per-SM rate of the architecture) for products not in the table. Sources: docs/peaks.md.

#include <optional>
#include <string>
#include <string_view>

#include "arch/arch.hpp"
#include "precision_probe/modes.hpp"

namespace precision_probe {

struct PeakEntry {
  std::string_view product;  // matched as a case-insensitive substring of the device name
  double fp32, tf32, fp16, bf16, fp8, fp4;  // dense TFLOP/s; 0 where the product has none
  double int8;                              // dense TOPS; 0 where the product has none
};

// The table, most specific names first ("H100 PCIe" before "H100").
const std::vector<PeakEntry>& peak_table();

struct Peak {
  double tflops = 0.0;
  std::string source;  // "datasheet: NVIDIA H200" or "formula: 132 SMs x 1.98 GHz x 4096 FLOP/clk"
};

// The dense peak for a mode on a device: the table when the name matches, else the formula when
// the compute capability, SM count and clock are known. nullopt when neither applies or the
// product has no such precision.
std::optional<Peak> dense_peak(std::string_view device_name, std::optional<ComputeCapability> cc,
                               std::optional<int> sm_count, std::optional<double> clock_ghz,
                               Mode mode);

// Dense FLOP per clock per SM for a mode on an architecture (the formula's rate); 0 if none.
double flops_per_clock_per_sm(ComputeCapability cc, Mode mode);

}  // namespace precision_probe
