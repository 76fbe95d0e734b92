#include "arch/arch.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "strings/strings.hpp"

namespace precision_probe {

HardwareVerdict gpu_hardware_support(ComputeCapability cc, Mode mode) {
  // No family's verdicts for a compute capability no GPU has, and none for a future one.
  if (std::string unknown = unknown_cc_reason(cc); !unknown.empty()) {
    return {Hardware::unsupported, std::move(unknown)};
  }
  const GpuRule& rule = mode_info(mode).gpu;
  for (const CcSpan& span : rule.native) {
    if (span.holds(cc)) return {Hardware::native, ""};
  }
  return {rule.otherwise, fmt::format("cc {}: {}", cc.to_string(), rule.why_not)};
}

HardwareVerdict gpu_support(ComputeCapability cc, Mode mode, const StackInfo& stack) {
  HardwareVerdict verdict = gpu_hardware_support(cc, mode);
  // A stack without CUDA runs nothing on GPUs: its blocker says so, not a version.
  if (verdict.hardware == Hardware::unsupported || !stack.available || !stack.cuda_built) {
    return verdict;
  }
  const std::optional<Version> libtorch = Version::parse(stack.libtorch_version);
  if (!libtorch) return verdict;
  verdict.stack_lacks = missing_for(mode, *libtorch, stack.cuda_version, cc);
  return verdict;
}

std::optional<ArchTarget> ArchTarget::parse(std::string_view name) {
  ArchTarget target;
  target.ptx = starts_with(name, "compute_");
  if (!target.ptx && !starts_with(name, "sm_")) return std::nullopt;
  std::string_view cc_name = name;
  if (cc_name.back() == 'a' || cc_name.back() == 'f') {
    target.variant = cc_name.back();
    cc_name.remove_suffix(1);
  }
  const auto cc = ComputeCapability::parse(cc_name);
  if (!cc) return std::nullopt;
  target.cc = *cc;
  // Exactly as the name is written: no spaces, no capitals.
  if (target.to_string() != name) return std::nullopt;
  return target;
}

std::string ArchTarget::to_string() const {
  std::string out = fmt::format("{}_{}", ptx ? "compute" : "sm", cc.as_int());
  if (variant != '\0') out += variant;
  return out;
}

std::vector<ArchTarget> parse_arch_list(std::string_view text) {
  std::vector<ArchTarget> targets;
  std::string token;
  auto flush = [&targets, &token]() {
    std::string t = to_lower(token);
    token.clear();
    if (starts_with(t, "arch=") || starts_with(t, "-")) return;  // virtual arch / flag names
    if (starts_with(t, "code=")) t = t.substr(5);
    t.erase(std::remove_if(t.begin(), t.end(), [](char c) { return c == '[' || c == ']'; }),
            t.end());
    const auto parsed = ArchTarget::parse(t);
    if (!parsed) return;
    const ArchTarget& target = *parsed;
    const bool seen = std::any_of(targets.begin(), targets.end(), [&target](const ArchTarget& t2) {
      return t2.cc == target.cc && t2.ptx == target.ptx && t2.variant == target.variant;
    });
    if (!seen) targets.push_back(target);
  };
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0 || c == ';' || c == ',') {
      flush();
    } else {
      token += c;
    }
  }
  flush();
  return targets;
}

KernelCoverage kernel_coverage(ComputeCapability cc, const std::vector<ArchTarget>& targets) {
  // A cubin for sm_XY runs on the same major version with minor >= Y ('a': exactly XY).
  for (const ArchTarget& t : targets) {
    if (t.ptx) continue;
    const bool runs = t.variant == 'a' ? t.cc == cc : (t.cc.major == cc.major && cc >= t.cc);
    if (runs) return {true, t.to_string(), ""};
  }
  // PTX for compute_XY is JIT-compiled by the driver for any cc >= XY.
  const ArchTarget* best = nullptr;
  for (const ArchTarget& t : targets) {
    if (!t.ptx || t.variant == 'a' || t.cc.as_int() > cc.as_int()) continue;
    if (best == nullptr || best->cc < t.cc) best = &t;
  }
  if (best != nullptr) {
    return {true, best->to_string() + " (PTX, JIT-compiled by the driver at first use)", "", true};
  }
  std::vector<std::string> names;
  names.reserve(targets.size());
  for (const ArchTarget& t : targets) names.push_back(t.to_string());
  return {
      false, "",
      fmt::format("this LibTorch build has no kernels for sm_{} ({}): it carries {}; CUDA "
                  "calls fail with 'no kernel image is available for execution on the device'",
                  cc.as_int(), architecture_name(cc), names.empty() ? "none" : join(names, " "))};
}

}  // namespace precision_probe
