#pragma once
// The CPU: model, ISA features that matter for low precision, and what they mean per mode.

#include <string>
#include <string_view>
#include <vector>

#include "precision_probe/modes.hpp"
#include "precision_probe/arch.hpp"

namespace precision_probe {

struct CpuInfo {
  std::string model;         // "Intel(R) Xeon(R) Platinum 8480+"
  std::string architecture;  // "x86_64", "aarch64"
  int logical_cores = 0;
  std::vector<std::string> features;  // the ISA features that matter, as the kernel names them
};

// The ISA flags the probe looks for, per architecture family.
const std::vector<std::string>& relevant_cpu_features();

// Parses the text of /proc/cpuinfo. `machine` is uname's machine ("x86_64").
CpuInfo parse_cpuinfo(std::string_view cpuinfo_text, std::string_view machine);

bool has_feature(const CpuInfo& cpu, std::string_view feature);

// What the CPU offers for a mode: native when the ISA has the instructions, emulated when
// LibTorch converts to FP32, unsupported for tensor-core-only formats (TF32, FP8, FP4).
HardwareVerdict cpu_hardware_support(const CpuInfo& cpu, Mode mode);

}  // namespace precision_probe
