#pragma once
// `precision-probe summarize` (docs/summarize.md): the reports read, summarised and printed. Its
// command line is the CLI's (SummarizeOptions), its delivery and exit the program's (delivery.hpp).

#include <optional>
#include <string>
#include <string_view>

#include "probe/cli/options.hpp"
#include "probe/fleet/summary.hpp"
#include "probe/outputs/output.hpp"

namespace precision_probe {

// Why there is no summary: "usage" (the output is one of the reports read: exit 2) or
// "interrupted" (a signal came: exit 5, nothing is written).
struct SummaryFailure {
  std::string_view kind;
  int code = 0;
  std::string message;
  bool stdout_is_a_report = false;  // the summary on stdout would have gone into a report read
};

struct Summarized {
  FleetSummary summary;
  std::string printed;                    // the summary in the format asked for
  std::optional<SummaryFailure> failure;  // set: no summary
};

// Reads the reports on every core and summarises them (`streams`: stdout redirected to one of
// them is refused). An internal error (memory ran out) is thrown.
Summarized summarize_reports(const SummarizeOptions& options, const StandardStreams& streams);

// The JSON document of a summary that could not be made or delivered: kind "usage" (exit 2),
// "internal" (4), "interrupted" (5) or "output" (6).
std::string summary_error_document(std::string_view kind, int code, const std::string& message);

}  // namespace precision_probe
