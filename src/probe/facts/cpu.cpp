#include "probe/facts/cpu.hpp"

#include <algorithm>
#include <exception>
#include <string>

#include "strings/strings.hpp"

namespace precision_probe {

const std::vector<std::string>& relevant_cpu_features() {
  static const std::vector<std::string> features = {
      // x86
      "avx2", "fma", "f16c", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni", "avx_vnni",
      "amx_tile", "amx_bf16", "amx_fp16", "amx_int8",
      // Arm
      "asimd", "fphp", "asimdhp", "asimddp", "bf16", "i8mm", "sve", "sve2", "svebf16", "sme",
      "sme2"};
  return features;
}

namespace {

bool is_arm(std::string_view machine) {
  return machine == "aarch64" || machine == "arm64" || starts_with(machine, "armv");
}

// Arm cores by the MIDR fields /proc/cpuinfo prints ("CPU implementer", "CPU part"): aarch64
// kernels print no "model name". The data-centre cores and the common Cortex ones, named as lscpu
// (util-linux) names them (HiSilicon's 0xd01, lscpu's TaiShan-v110, by its product's name), the
// implementer's name first. An NVIDIA Grace is Arm's Neoverse-V2 (0x41, 0xd4f), as is an AWS
// Graviton4: the MIDR does not tell them apart.
struct ArmPart {
  int implementer;
  int part;
  std::string_view name;
};
constexpr ArmPart kArmParts[] = {
    {0x41, 0xd03, "Arm Cortex-A53"},        {0x41, 0xd05, "Arm Cortex-A55"},
    {0x41, 0xd07, "Arm Cortex-A57"},        {0x41, 0xd08, "Arm Cortex-A72"},
    {0x41, 0xd0b, "Arm Cortex-A76"},        {0x41, 0xd0c, "Arm Neoverse-N1"},
    {0x41, 0xd40, "Arm Neoverse-V1"},       {0x41, 0xd41, "Arm Cortex-A78"},
    {0x41, 0xd42, "Arm Cortex-A78AE"},      {0x41, 0xd47, "Arm Cortex-A710"},
    {0x41, 0xd49, "Arm Neoverse-N2"},       {0x41, 0xd4a, "Arm Neoverse-E1"},
    {0x41, 0xd4f, "Arm Neoverse-V2"},       {0x41, 0xd84, "Arm Neoverse-V3"},
    {0x41, 0xd8e, "Arm Neoverse-N3"},       {0x46, 0x001, "Fujitsu A64FX"},
    {0x48, 0xd01, "HiSilicon Kunpeng-920"}, {0x4e, 0x004, "NVIDIA Carmel"},
    {0xc0, 0xac3, "Ampere Ampere-1"},       {0xc0, 0xac4, "Ampere Ampere-1a"},
};

// "Arm Neoverse-V2" for "0x41" and "0xd4f"; the numbers where the table does not know the core.
std::string arm_model(const std::string& implementer, const std::string& part) {
  const auto number = [](const std::string& hex) {
    std::size_t used = 0;
    try {
      const int n = std::stoi(hex, &used, 16);
      return used == hex.size() ? n : -1;
    } catch (const std::exception&) {
      return -1;
    }
  };
  const int i = number(implementer);
  const int p = number(part);
  for (const ArmPart& known : kArmParts) {
    if (known.implementer == i && known.part == p) return std::string(known.name);
  }
  return "Arm CPU (implementer " + implementer + ", part " + part + ")";
}

}  // namespace

CpuInfo parse_cpuinfo(std::string_view cpuinfo_text, std::string_view machine) {
  CpuInfo cpu;
  cpu.architecture = std::string(machine);
  std::vector<std::string> flags;
  std::string implementer;
  std::string part;
  int cores_per_package = 0;
  int siblings = 0;
  for (const std::string& line : split(cpuinfo_text, '\n')) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = to_lower(trim(std::string_view(line).substr(0, colon)));
    const std::string value = trim(std::string_view(line).substr(colon + 1));
    if (key == "processor") {
      ++cpu.logical_cores;
    } else if ((key == "model name" || key == "hardware" || key == "model") && cpu.model.empty() &&
               !value.empty() && !parse_int(value)) {
      cpu.model = value;
    } else if ((key == "flags" || key == "features") && flags.empty()) {
      for (const std::string& flag : split(value, ' ')) {
        if (!flag.empty()) flags.push_back(to_lower(flag));
      }
    } else if (key == "cpu mhz" && !cpu.mhz) {
      try {
        const double mhz = std::stod(value);
        if (mhz > 0.0 && mhz < 100000.0) cpu.mhz = mhz;
      } catch (const std::exception&) {
        // not a number: no clock
      }
    } else if (key == "cpu cores" && cores_per_package == 0) {
      cores_per_package = static_cast<int>(parse_int(value).value_or(0));
    } else if (key == "siblings" && siblings == 0) {
      siblings = static_cast<int>(parse_int(value).value_or(0));
    } else if (key == "cpu implementer" && implementer.empty()) {
      implementer = value;
    } else if (key == "cpu part" && part.empty()) {
      part = value;
    }
  }
  if (cpu.model.empty() && !implementer.empty()) cpu.model = arm_model(implementer, part);
  if (cpu.model.empty()) cpu.model = "unknown CPU";
  cpu.physical_cores = cpu.logical_cores;
  if (cores_per_package > 0 && siblings >= cores_per_package && siblings <= 1024) {
    cpu.physical_cores = std::max(1, cpu.logical_cores * cores_per_package / siblings);
  }
  for (const std::string& wanted : relevant_cpu_features()) {
    if (std::find(flags.begin(), flags.end(), wanted) != flags.end()) {
      cpu.features.push_back(wanted);
    }
  }
  return cpu;
}

int cpu_fp32_flops_per_cycle(const CpuInfo& cpu) {
  if (is_arm(cpu.architecture)) return 16;
  if (has_feature(cpu, "avx512f")) return 64;
  if (has_feature(cpu, "avx2") && has_feature(cpu, "fma")) return 32;
  return 16;
}

std::optional<double> cpu_fp32_peak_gflops(const CpuInfo& cpu) {
  if (!cpu.mhz || cpu.physical_cores <= 0) return std::nullopt;
  return cpu.physical_cores * (*cpu.mhz / 1000.0) * cpu_fp32_flops_per_cycle(cpu);
}

bool has_feature(const CpuInfo& cpu, std::string_view feature) {
  return std::find(cpu.features.begin(), cpu.features.end(), feature) != cpu.features.end();
}

HardwareVerdict cpu_hardware_support(const CpuInfo& cpu, Mode mode) {
  const bool arm = is_arm(cpu.architecture);
  const bool fp16_isa = arm ? (has_feature(cpu, "asimdhp") || has_feature(cpu, "fphp"))
                            : (has_feature(cpu, "avx512_fp16") || has_feature(cpu, "amx_fp16"));
  const bool bf16_isa = arm ? has_feature(cpu, "bf16")
                            : (has_feature(cpu, "avx512_bf16") || has_feature(cpu, "amx_bf16"));
  const bool int8_isa = arm ? (has_feature(cpu, "i8mm") || has_feature(cpu, "asimddp"))
                            : (has_feature(cpu, "avx512_vnni") || has_feature(cpu, "avx_vnni") ||
                               has_feature(cpu, "amx_int8"));
  const std::string fp16_names = arm ? "FP16 arithmetic (asimdhp)" : "AVX512-FP16 or AMX-FP16";
  const std::string bf16_names = arm ? "BF16 instructions (bf16)" : "AVX512-BF16 or AMX-BF16";
  const ModeInfo& info = mode_info(mode);
  switch (info.cpu) {
    case CpuNeeds::nothing: return {Hardware::native, ""};
    case CpuNeeds::unavailable: return {Hardware::unsupported, std::string(info.cpu_why)};
    case CpuNeeds::fp16_isa:
      if (fp16_isa) return {Hardware::native, ""};
      return {Hardware::emulated, "no " + fp16_names +
                                      ": LibTorch converts FP16 to FP32 for the arithmetic, "
                                      "slower than FP32"};
    case CpuNeeds::bf16_isa:
      if (bf16_isa) return {Hardware::native, ""};
      return {Hardware::emulated, "no " + bf16_names +
                                      ": LibTorch converts BF16 to FP32 for the arithmetic, "
                                      "slower than FP32"};
    case CpuNeeds::int8_isa:
      if (int8_isa) return {Hardware::native, ""};
      return {Hardware::emulated,
              std::string("no int8 dot-product instructions (") +
                  (arm ? "asimddp or i8mm" : "AVX512-VNNI, AVX-VNNI or AMX-INT8") +
                  "): int8 GEMMs widen to 16 or 32 bits for the arithmetic"};
  }
  return {Hardware::unsupported, "unknown mode"};
}

}  // namespace precision_probe
