#include "precision_probe/modes.hpp"

#include <algorithm>

#include "precision_probe/strings.hpp"

namespace precision_probe {

std::string_view mode_key(Mode mode) {
  switch (mode) {
    case Mode::fp32: return "fp32";
    case Mode::tf32: return "tf32";
    case Mode::fp16: return "fp16";
    case Mode::bf16: return "bf16";
    case Mode::fp8_e4m3: return "fp8_e4m3";
    case Mode::fp8_e5m2: return "fp8_e5m2";
    case Mode::fp4: return "fp4";
    case Mode::amp_fp16: return "amp_fp16";
    case Mode::amp_bf16: return "amp_bf16";
  }
  return "?";
}

std::optional<Mode> parse_mode(std::string_view key) {
  for (Mode mode : kAllModes) {
    if (mode_key(mode) == key) return mode;
  }
  return std::nullopt;
}

bool is_amp_mode(Mode mode) { return mode == Mode::amp_fp16 || mode == Mode::amp_bf16; }

std::string accepted_mode_keys() {
  std::vector<std::string> keys;
  keys.reserve(kAllModes.size() + kModeAliases.size());
  for (Mode mode : kAllModes) keys.emplace_back(mode_key(mode));
  for (const ModeAlias& alias : kModeAliases) {
    keys.push_back(std::string(alias.key) + " (" + std::string(mode_key(alias.modes[0])) + " and " +
                   std::string(mode_key(alias.modes[1])) + ")");
  }
  return join(keys, ", ");
}

ModeListParse parse_mode_list(std::string_view text) {
  ModeListParse result;
  auto add = [&result](Mode mode) {
    if (std::find(result.modes.begin(), result.modes.end(), mode) == result.modes.end()) {
      result.modes.push_back(mode);
    }
  };
  if (trim(text).empty()) {
    result.error = "empty mode list";
    return result;
  }
  for (const std::string& raw : split(text, ',')) {
    const std::string key = to_lower(trim(raw));
    if (key.empty()) {
      result.error = "empty entry in mode list '" + printable(text) + "'";
      return result;
    }
    const auto alias = std::find_if(kModeAliases.begin(), kModeAliases.end(),
                                    [&key](const ModeAlias& a) { return a.key == key; });
    if (alias != kModeAliases.end()) {
      for (Mode mode : alias->modes) add(mode);
    } else if (auto mode = parse_mode(key)) {
      add(*mode);
    } else {
      result.error = "unknown mode '" + printable(raw) + "' (known: " + accepted_mode_keys() + ")";
      return result;
    }
  }
  return result;
}

double smoke_tolerance(Mode mode) {
  switch (mode) {
    case Mode::fp32: return 1e-5;  // fp32 accumulation over K=256: ~1e-7
    case Mode::tf32: return 5e-3;  // inputs rounded to 10 mantissa bits: ~3e-4
    case Mode::fp16:
      return 1e-3;  // fp16 output rounding: <= 2^-11 ~ 4.9e-4
    // bf16: its output rounding, <= 2^-8 ~ 3.9e-3; fp8 and fp4: exact low-precision inputs,
    // bf16 output rounding.
    case Mode::bf16:
    case Mode::fp8_e4m3:
    case Mode::fp8_e5m2:
    case Mode::fp4: return 1e-2;
    case Mode::amp_fp16:
    case Mode::amp_bf16: return 0.0;
  }
  return 0.0;
}

double amp_loss_tolerance(Mode mode) { return mode == Mode::amp_fp16 ? 0.02 : 0.05; }

std::string_view to_string(Hardware hardware) {
  switch (hardware) {
    case Hardware::native: return "native";
    case Hardware::emulated: return "emulated";
    case Hardware::unsupported: return "unsupported";
  }
  return "?";
}

std::string_view to_string(Status status) {
  switch (status) {
    case Status::native: return "native";
    case Status::emulated: return "emulated";
    case Status::unsupported: return "unsupported";
    case Status::failed: return "failed";
    case Status::not_tested: return "not_tested";
  }
  return "?";
}

}  // namespace precision_probe
