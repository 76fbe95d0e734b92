#include "common/arch.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/strings.hpp"

namespace precision_probe {

namespace {

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

std::optional<ComputeCapability> make_cc(std::int64_t major, std::int64_t minor) {
  if (major < 1 || major > 15 || minor < 0 || minor > 9) return std::nullopt;
  return ComputeCapability{static_cast<int>(major), static_cast<int>(minor)};
}

// "89" -> 8.9, "100" -> 10.0, "120" -> 12.0: the last digit is the minor version.
std::optional<ComputeCapability> from_packed_digits(std::string_view digits) {
  if (!all_digits(digits) || digits.size() < 2 || digits.size() > 3) return std::nullopt;
  const auto value = parse_int(digits);
  if (!value) return std::nullopt;
  return make_cc(*value / 10, *value % 10);
}

}  // namespace

std::optional<ComputeCapability> parse_compute_capability(std::string_view text) {
  const std::string s = to_lower(trim(text));
  std::string_view view = s;
  for (std::string_view prefix : {"sm_", "sm", "compute_"}) {
    if (starts_with(view, prefix)) {
      return from_packed_digits(view.substr(prefix.size()));
    }
  }
  const std::size_t dot = view.find('.');
  if (dot == std::string_view::npos) return from_packed_digits(view);
  const std::string_view major = view.substr(0, dot);
  const std::string_view minor = view.substr(dot + 1);
  if (!all_digits(major) || major.size() > 2 || !all_digits(minor) || minor.size() != 1) {
    return std::nullopt;
  }
  return make_cc(*parse_int(major), *parse_int(minor));
}

HardwareVerdict gpu_hardware_support(ComputeCapability cc, Mode mode) {
  const GpuRule& rule = mode_info(mode).gpu;
  for (const CcSpan& span : rule.native) {
    if (span.holds(cc)) return {Hardware::native, ""};
  }
  return {rule.otherwise, fmt::format("cc {}: {}", cc.to_string(), rule.why_not)};
}

std::optional<Version> parse_version(std::string_view text) {
  const std::vector<std::string> parts = split(trim(text), '.');
  if (parts.size() < 2) return std::nullopt;
  std::string minor = parts[1];
  minor = minor.substr(0, minor.find_first_not_of("0123456789"));
  const auto major_value = parse_int(parts[0]);
  const auto minor_value = parse_int(minor);
  if (!major_value || !minor_value || *major_value < 0 || *major_value > 999 || *minor_value < 0 ||
      *minor_value > 999) {
    return std::nullopt;
  }
  return Version{static_cast<int>(*major_value), static_cast<int>(*minor_value)};
}

HardwareVerdict gpu_support(ComputeCapability cc, Mode mode, const StackInfo& stack) {
  HardwareVerdict verdict = gpu_hardware_support(cc, mode);
  // A stack without CUDA runs nothing on GPUs: its blocker says so, not a version.
  if (verdict.hardware == Hardware::unsupported || !stack.available || !stack.cuda_built) {
    return verdict;
  }
  const std::optional<Version> libtorch = parse_version(stack.libtorch_version);
  if (!libtorch) return verdict;
  verdict.stack_lacks = missing_for(mode, *libtorch, parse_version(stack.cuda_version), cc);
  return verdict;
}

std::string ArchTarget::to_string() const {
  std::string out = fmt::format("{}_{}{}", ptx ? "compute" : "sm", cc.as_int(), "");
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
    ArchTarget target;
    std::string digits;
    if (starts_with(t, "sm_")) {
      digits = t.substr(3);
    } else if (starts_with(t, "compute_")) {
      digits = t.substr(8);
      target.ptx = true;
    } else {
      return;
    }
    if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) {
      target.variant = digits.back();
      digits.pop_back();
    }
    const auto cc = from_packed_digits(digits);
    if (!cc) return;
    target.cc = *cc;
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
