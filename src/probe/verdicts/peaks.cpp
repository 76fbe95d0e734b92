#include "probe/verdicts/peaks.hpp"

#include <cctype>

#include <fmt/format.h>

#include "strings/strings.hpp"

namespace precision_probe {

// Dense (no sparsity) peaks in TFLOP/s from NVIDIA's datasheets and architecture whitepapers;
// docs/peaks.md lists the sources. GeForce cards: the rates with fp32 accumulation, which is what
// PyTorch's matmuls use. More specific names come first.
const std::vector<PeakEntry>& peak_table() {
  static const std::vector<PeakEntry> table = {
      //  product       fp32   tf32    fp16    bf16    fp8     fp4     int8 (TOPS)
      {"B200", 75.0, 1125.0, 2250.0, 2250.0, 4500.0, 9000.0, 4500.0},
      {"H200 NVL", 60.0, 417.5, 835.5, 835.5, 1670.5, 0.0, 1670.5},
      {"H200", 67.0, 494.7, 989.4, 989.4, 1978.9, 0.0, 1978.9},
      {"GH200", 67.0, 494.7, 989.4, 989.4, 1978.9, 0.0, 1978.9},
      {"H100 NVL", 60.0, 417.5, 835.5, 835.5, 1670.5, 0.0, 1670.5},
      {"H100 PCIe", 51.2, 378.0, 756.0, 756.0, 1513.0, 0.0, 1513.0},
      {"H100", 67.0, 494.7, 989.4, 989.4, 1978.9, 0.0, 1978.9},
      {"A100", 19.5, 156.0, 312.0, 312.0, 0.0, 0.0, 624.0},
      {"A30", 10.3, 82.0, 165.0, 165.0, 0.0, 0.0, 330.0},
      {"A10", 31.2, 62.5, 125.0, 125.0, 0.0, 0.0, 250.0},
      {"L40S", 91.6, 183.0, 362.0, 362.0, 733.0, 0.0, 733.0},
      {"L40", 90.5, 90.5, 181.0, 181.0, 362.0, 0.0, 362.0},
      {"L4", 30.3, 60.0, 121.0, 121.0, 242.0, 0.0, 242.0},
      {"V100-PCIE", 14.0, 0.0, 112.0, 0.0, 0.0, 0.0, 0.0},
      {"V100", 15.7, 0.0, 125.0, 0.0, 0.0, 0.0, 0.0},
      {"T4", 8.1, 0.0, 65.0, 0.0, 0.0, 0.0, 130.0},
      {"RTX 3090", 35.6, 35.6, 71.0, 71.0, 0.0, 0.0, 284.0},
      {"RTX 4090", 82.6, 82.6, 165.2, 165.2, 330.3, 0.0, 660.6},
      {"RTX 5090", 104.8, 104.8, 209.5, 209.5, 419.0, 838.0, 0.0},
  };
  return table;
}

namespace {

// `token` occurs in `name` as a whole word (not followed or preceded by a letter or digit), so
// that "A10" does not match "A100" or "A10G", nor "L4" match "L40S".
bool names(std::string_view name, std::string_view token) {
  const std::string n = to_lower(name);
  const std::string t = to_lower(token);
  std::size_t pos = 0;
  while ((pos = n.find(t, pos)) != std::string::npos) {
    const bool left = pos == 0 || std::isalnum(static_cast<unsigned char>(n[pos - 1])) == 0;
    const std::size_t end = pos + t.size();
    const bool right = end == n.size() || std::isalnum(static_cast<unsigned char>(n[end])) == 0;
    if (left && right) return true;
    ++pos;
  }
  return false;
}

double value_for(const PeakEntry& e, Mode mode) {
  switch (mode_info(mode).peak) {
    case PeakColumn::fp32: return e.fp32;
    case PeakColumn::tf32: return e.tf32;
    case PeakColumn::fp16: return e.fp16;
    case PeakColumn::bf16: return e.bf16;
    case PeakColumn::fp8: return e.fp8;
    case PeakColumn::fp4: return e.fp4;
    case PeakColumn::int8: return e.int8;
    case PeakColumn::none: return 0.0;
  }
  return 0.0;
}

}  // namespace

double flops_per_clock_per_sm(ComputeCapability cc, Mode mode) {
  // FP32: two FLOP per lane per clock; 64 lanes per SM on GP100, Volta, Turing and GA100, 128 on
  // consumer Pascal, GA10x, Ada, Hopper and Blackwell.
  const bool wide_fp32 = cc.as_int() == 61 || cc.as_int() >= 86;
  const double fp32 = wide_fp32 ? 256.0 : 128.0;
  // Dense FP16 tensor-core FLOP per clock per SM (data-centre parts).
  double fp16 = 0.0;
  if (cc.major == 7) fp16 = 1024.0;
  if (cc.as_int() == 80) fp16 = 2048.0;
  if (cc.as_int() >= 86 && cc.major == 8) fp16 = 1024.0;
  if (cc.major == 9) fp16 = 4096.0;
  if (cc.major >= 10) fp16 = 8192.0;
  if (cc.major == 12) fp16 = 1024.0;
  // Tensor-core formats only where the architecture has them (the mode table's rule).
  if (gpu_hardware_support(cc, mode).hardware != Hardware::native) return 0.0;
  switch (mode_info(mode).peak) {
    case PeakColumn::fp32: return fp32;
    case PeakColumn::tf32: return fp16 / 2.0;
    case PeakColumn::fp16:
    case PeakColumn::bf16: return fp16;
    case PeakColumn::fp8: return fp16 * 2.0;
    case PeakColumn::fp4: return fp16 * (cc.as_int() == 103 ? 6.0 : 4.0);  // B300: "Ultra" FP4
    case PeakColumn::int8: return cc.major == 7 && cc.minor < 2 ? 0.0 : fp16 * 2.0;
    case PeakColumn::none: return 0.0;
  }
  return 0.0;
}

std::optional<Peak> dense_peak(std::string_view device_name, std::optional<ComputeCapability> cc,
                               std::optional<int> sm_count, std::optional<double> clock_ghz,
                               Mode mode) {
  for (const PeakEntry& e : peak_table()) {
    if (!names(device_name, e.product)) continue;
    const double v = value_for(e, mode);
    if (v > 0.0) return Peak{v, fmt::format("datasheet: NVIDIA {}", e.product)};
    break;  // no datasheet figure: the formula, which is 0 where the hardware lacks the mode
  }
  if (!cc || !sm_count || !clock_ghz || *sm_count <= 0 || *clock_ghz <= 0.0) return std::nullopt;
  const double rate = flops_per_clock_per_sm(*cc, mode);
  if (rate <= 0.0) return std::nullopt;
  return Peak{*sm_count * *clock_ghz * rate / 1000.0,
              fmt::format("formula: {} SMs x {:.3g} GHz x {:.0f} FLOP/clk/SM", *sm_count,
                          *clock_ghz, rate)};
}

}  // namespace precision_probe
