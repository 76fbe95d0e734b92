#pragma once
// A release's version and a GPU's compute capability: one type each, with one parse and one text
// form, for every place that meets one (the command line, the driver's numbers, an image's files,
// the engine's release, arch lists and fat binaries, the report's JSON and the worker's lines).

#include <optional>
#include <string>
#include <string_view>

namespace precision_probe {

// A release as major.minor: LibTorch's (2.11), CUDA's (13.0).
struct Version {
  int major = 0;
  int minor = 0;

  // The major.minor a version text starts with, each of 1 to 3 digits: "2.11.0+cu130" -> 2.11,
  // "13.0" -> 13.0, " 12.8 " -> 12.8. nullopt where the text does not start with one.
  static std::optional<Version> parse(std::string_view text);
  // CUDA's number for its version (cuDriverGetVersion, cudaRuntimeGetVersion, NVML's
  // nvmlSystemGetCudaDriverVersion): 13000 -> 13.0, 12040 -> 12.4.
  static constexpr Version from_cuda_number(int number) {
    return {number / 1000, number % 1000 / 10};
  }
  std::string to_string() const;  // "2.11", "13.0"

  friend constexpr bool operator<(Version a, Version b) {
    return a.major != b.major ? a.major < b.major : a.minor < b.minor;
  }
  friend constexpr bool operator==(Version a, Version b) {
    return a.major == b.major && a.minor == b.minor;
  }
  friend constexpr bool operator>=(Version a, Version b) { return !(a < b); }
  friend constexpr bool operator!=(Version a, Version b) { return !(a == b); }
};

// "13.0", or "" where there is none (a stack built without CUDA).
std::string version_or_empty(const std::optional<Version>& version);

// A GPU's compute capability, major.minor (NVML and CUDA give the two numbers).
struct ComputeCapability {
  int major = 0;
  int minor = 0;

  // Every spelling of one: "8.9", "89", "sm_89", "sm89", "compute_89", any case, spaces around;
  // major 1..99 (two digits at most before a dot, no leading zero in "89"), minor 0..9. A target
  // variant ("sm_90a") is an arch target's (arch/arch.hpp), not part of a compute capability.
  static std::optional<ComputeCapability> parse(std::string_view text);
  // The number CUDA names it by (sm_89, a fat binary's entries): 89 -> 8.9, 100 -> 10.0.
  static constexpr ComputeCapability from_number(int number) { return {number / 10, number % 10}; }
  constexpr int as_int() const { return major * 10 + minor; }  // 8.9 -> 89
  std::string to_string() const;                               // "8.9"
  // Within what the precision matrix and fat binaries cover: 1.0 to 15.9 (sm_10 to sm_159).
  constexpr bool known() const;

  friend constexpr bool operator==(ComputeCapability a, ComputeCapability b) {
    return a.major == b.major && a.minor == b.minor;
  }
  friend constexpr bool operator!=(ComputeCapability a, ComputeCapability b) { return !(a == b); }
  friend constexpr bool operator<(ComputeCapability a, ComputeCapability b) {
    return a.as_int() < b.as_int();
  }
  friend constexpr bool operator>=(ComputeCapability a, ComputeCapability b) { return !(a < b); }
};

// The last compute capability the mode table's spans reach.
inline constexpr ComputeCapability kLastCc{15, 9};

constexpr bool ComputeCapability::known() const { return major >= 1 && !(kLastCc < *this); }

}  // namespace precision_probe
