#include "wire/injection.hpp"

#include "strings/strings.hpp"

namespace precision_probe {

bool HangInjection::applies_to(DeviceKind kind, int index) const {
  if (device.empty()) return true;
  return kind == DeviceKind::cpu ? device == "cpu" : device == std::to_string(index);
}

Expected<HangInjection> parse_hang_injection(std::string_view text) {
  const std::vector<std::string> parts = split(text, ':');
  const std::string usage = std::string(kInjectHangVariable) + "='" + printable(text, 60) +
                            "' is not MODE[:DEVICE] (e.g. bf16:0 or fp32:cpu)";
  if (parts.empty() || parts.size() > 2) return Unexpected{usage};
  HangInjection h;
  const auto mode = parse_mode(to_lower(trim(parts[0])));
  if (!mode || mode_info(*mode).kind != ModeKind::matmul) {
    return Unexpected{usage + ": no matmul mode '" + printable(parts[0], 20) + "'"};
  }
  h.mode = *mode;
  if (parts.size() == 2) {
    h.device = to_lower(trim(parts[1]));
    const auto index = parse_int(h.device);
    if (h.device != "cpu" && (!index || *index < 0 || *index > 1023)) {
      return Unexpected{usage + ": DEVICE is a visible GPU index or cpu"};
    }
    if (index) h.device = std::to_string(*index);
  }
  return h;
}

}  // namespace precision_probe
