#include "wire/engine_settings.hpp"

#include <vector>

#include "strings/strings.hpp"

namespace precision_probe {

std::string bad_engine_setting(const EngineSetting& setting, std::string_view value) {
  if (value.empty()) return "";
  const std::vector<std::string> values = split(setting.values, ' ');
  for (const std::string& v : values) {
    if (v == value) return "";
  }
  return std::string(setting.variable) + "='" + printable(value, 30) + "' is not one of " +
         join(values, ", ") + " (docs/engine.md)";
}

}  // namespace precision_probe
