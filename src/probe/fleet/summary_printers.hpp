#pragma once
// The fleet's summary for people (text, Markdown) and for dashboards (JSON, docs/summarize.md).
// Printers take the finished summary; they collect nothing.

#include <string>

#include "probe/fleet/summary.hpp"

namespace precision_probe {

inline constexpr int kSummarySchemaVersion = 1;

enum class SummaryFormat { text, json, markdown };

// `shown`: how many devices or nodes a list names in text and Markdown before "and N more" (JSON
// names them all).
std::string print_summary(const FleetSummary& summary, SummaryFormat format, std::size_t shown = 5);

// The JSON document of a summary that could not be made (--format json): the error's kind
// ("usage", "interrupted", "internal") and message, and the exit code.
std::string print_summary_error(const std::string& kind, int exit_code, const std::string& message,
                                const std::string& tool_version);

}  // namespace precision_probe
