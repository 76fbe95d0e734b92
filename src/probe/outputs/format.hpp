#pragma once
// The formats a report is printed in (a printer each: printers.hpp), by the names the command line
// takes.

#include <optional>
#include <string_view>

namespace precision_probe {

enum class Format { text, json, markdown, prometheus, nfd };
// A format's name ("md" and "prom" too), in any case ("JSON"), nullopt for none.
std::optional<Format> parse_format(std::string_view text);
std::string_view to_string(Format format);
// The formats fleets read unattended (metrics, node labels): a run ended by a signal leaves the
// files of these that an earlier run wrote as they are (docs/reliability.md).
inline bool node_facing(Format format) {
  return format == Format::prometheus || format == Format::nfd;
}

}  // namespace precision_probe
