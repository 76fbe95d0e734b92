#include "precision_probe/modes.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "strings/strings.hpp"

namespace precision_probe {

const ModeInfo& mode_info(Mode mode) {
  // The table's rows are in the enum's order (a test checks it).
  return kModeTable[mode_index(mode)];
}

namespace {

std::vector<Mode> modes_where(bool (*keep)(const ModeInfo&)) {
  std::vector<Mode> modes;
  for (const ModeInfo& info : kModeTable) {
    if (keep(info)) modes.push_back(info.mode);
  }
  return modes;
}

}  // namespace

const std::vector<Mode>& all_modes() {
  static const std::vector<Mode> modes = modes_where([](const ModeInfo&) { return true; });
  return modes;
}

const std::vector<Mode>& matmul_modes() {
  static const std::vector<Mode> modes =
      modes_where([](const ModeInfo& i) { return i.kind == ModeKind::matmul; });
  return modes;
}

const std::vector<Mode>& training_modes() {
  static const std::vector<Mode> modes =
      modes_where([](const ModeInfo& i) { return i.kind == ModeKind::training; });
  return modes;
}

std::string missing_for(Mode mode, Version libtorch, std::optional<Version> cuda,
                        std::optional<ComputeCapability> cc) {
  const ModeInfo& info = mode_info(mode);
  if (libtorch < info.libtorch) {
    return fmt::format(
        "this LibTorch ({}) cannot run the {} check ({}) through its stable C ABI: upgrade to "
        "LibTorch (PyTorch) {} or later",
        libtorch.to_string(), info.key, info.api, info.libtorch.to_string());
  }
  if (cuda && *cuda < info.cuda) {
    return fmt::format(
        "this LibTorch was built with CUDA {}, and {} needs CUDA {}+ (the cuBLASLt it ships): use "
        "a LibTorch built with CUDA {} or later",
        cuda->to_string(), info.key, info.cuda.to_string(), info.cuda.to_string());
  }
  // LibTorch's own architecture check, as read up to the version the rule names.
  if (cc && !info.torch.accepts(*cc) && !(info.torch.through < libtorch)) {
    return fmt::format("cc {}: {} (LibTorch {})", cc->to_string(), info.torch.why_not,
                       libtorch.to_string());
  }
  return "";
}

std::string_view mode_key(Mode mode) { return mode_info(mode).key; }

std::optional<Mode> parse_mode(std::string_view key) {
  for (const ModeInfo& info : kModeTable) {
    if (info.key == key) return info.mode;
  }
  return std::nullopt;
}

bool is_amp_mode(Mode mode) { return mode_info(mode).kind == ModeKind::training; }

double smoke_tolerance(Mode mode) { return is_amp_mode(mode) ? 0.0 : mode_info(mode).tolerance; }

double amp_loss_tolerance(Mode mode) { return is_amp_mode(mode) ? mode_info(mode).tolerance : 0.0; }

std::string accepted_mode_keys() {
  std::vector<std::string> keys;
  keys.reserve(kModeTable.size() + kModeAliases.size());
  for (const ModeInfo& info : kModeTable) keys.emplace_back(info.key);
  for (const ModeAlias& alias : kModeAliases) {
    std::string stands_for(mode_key(alias.modes[0]));
    if (alias.count > 1) stands_for += " and " + std::string(mode_key(alias.modes[1]));
    keys.push_back(std::string(alias.key) + " (" + stands_for + ")");
  }
  return join(keys, ", ");
}

Expected<std::vector<Mode>> parse_mode_list(std::string_view text) {
  std::vector<Mode> modes;
  auto add = [&modes](Mode mode) {
    if (std::find(modes.begin(), modes.end(), mode) == modes.end()) modes.push_back(mode);
  };
  if (trim(text).empty()) return Unexpected{"empty mode list"};
  for (const std::string& raw : split(text, ',')) {
    const std::string key = to_lower(trim(raw));
    if (key.empty()) return Unexpected{"empty entry in mode list '" + printable(text) + "'"};
    const auto alias = std::find_if(kModeAliases.begin(), kModeAliases.end(),
                                    [&key](const ModeAlias& a) { return a.key == key; });
    if (alias != kModeAliases.end()) {
      for (std::size_t i = 0; i < alias->count; ++i) add(alias->modes[i]);
    } else if (auto mode = parse_mode(key)) {
      add(*mode);
    } else {
      return Unexpected{"unknown mode '" + printable(raw) + "' (known: " + accepted_mode_keys() +
                        ")"};
    }
  }
  return modes;
}

std::string_view to_string(Hardware hardware) {
  switch (hardware) {
    case Hardware::native: return "native";
    case Hardware::emulated: return "emulated";
    case Hardware::unsupported: return "unsupported";
  }
  return "?";
}

std::string_view to_string(Status status) {
  const auto i = static_cast<std::size_t>(status);
  return i < kStatuses.size() ? kStatuses[i].key : "?";
}

const StatusInfo& status_info(Status status) {
  return kStatuses.at(static_cast<std::size_t>(status));
}

namespace {

const KnownCc* known_cc(ComputeCapability cc) {
  const auto it = std::find_if(kKnownCcs.begin(), kKnownCcs.end(),
                               [cc](const KnownCc& known) { return known.cc == cc; });
  return it != kKnownCcs.end() ? &*it : nullptr;
}

}  // namespace

bool known_gpu_cc(ComputeCapability cc) { return known_cc(cc) != nullptr; }

std::string unknown_cc_reason(ComputeCapability cc) {
  if (known_gpu_cc(cc)) return "";
  const ComputeCapability first = kKnownCcs.front().cc;
  const ComputeCapability last = kKnownCcs.back().cc;
  if (last < cc) {
    return fmt::format(
        "cc {}: unknown compute capability, newer than every one this precision-probe knows "
        "({} to {}): nothing is claimed for its hardware; a newer precision-probe may know it",
        cc.to_string(), first.to_string(), last.to_string());
  }
  return fmt::format(
      "cc {}: unknown compute capability: no NVIDIA GPU has it (those that exist, {} to {}, are "
      "listed in docs/precision-matrix.md), so nothing is claimed for its hardware",
      cc.to_string(), first.to_string(), last.to_string());
}

std::string architecture_name(ComputeCapability cc) {
  const KnownCc* known = known_cc(cc);
  return known != nullptr ? std::string(known->architecture) : std::string("unknown");
}

}  // namespace precision_probe
