#include "probe/fleet/summarize_command.hpp"

#include <sys/stat.h>

#include <chrono>

#include <fmt/format.h>

#include "version/build_info.hpp"
#include "strings/strings.hpp"
#include "trace/trace.hpp"
#include "probe/fleet/fleet_reader.hpp"
#include "probe/fleet/summary_printers.hpp"
#include "process/process.hpp"
#include "probe/verdicts/exit_codes.hpp"

namespace precision_probe {

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The file the summary goes to, where it exists and is a regular file (-o FILE by any spelling,
// or stdout redirected to one): never one of the reports read.
std::optional<FileIdentity> output_identity(const SummarizeOptions& o,
                                            const StandardStreams& streams) {
  struct stat st {};
  const bool known = !o.output.empty() ? ::stat(o.output.c_str(), &st) == 0
                     : o.quiet         ? false
                                       : ::fstat(streams.out_fd, &st) == 0;
  if (!known || !S_ISREG(st.st_mode)) return std::nullopt;
  return FileIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

std::string same_file(const std::string& source, const SummarizeOptions& o) {
  const std::string output = o.output.empty() ? "the summary on stdout" : o.output_flag;
  return fmt::format(
      "{} and the report {} name the same file ({}): the summary would replace a "
      "report it reads",
      output, source == "-" ? "on standard input" : printable_path(source),
      printable_path(o.output.empty() ? source : o.output));
}

SummaryFailure interrupted(const char* when) {
  return {"interrupted", exit_code::kTimedOut,
          fmt::format("interrupted by {} {}: nothing was written", signal_name(interrupt_signal()),
                      when)};
}

SummaryFormat summary_format(Format format) {
  switch (format) {
    case Format::json: return SummaryFormat::json;
    case Format::markdown: return SummaryFormat::markdown;
    case Format::text:
    case Format::prometheus:
    case Format::nfd: break;  // the command line takes text, json and markdown
  }
  return SummaryFormat::text;
}

}  // namespace

Summarized summarize_reports(const SummarizeOptions& o, const StandardStreams& streams) {
  const auto start = std::chrono::steady_clock::now();
  SummaryOptions options{o.require, o.max_age_s, now_ms()};
  FleetReadOptions read;
  read.required = o.require;
  read.stop = [] { return interrupt_requested(); };
  read.output = output_identity(o, streams);
  FleetInputs inputs = read_fleet_reports(o.sources, 0, read);
  trace("reports read");
  Summarized made;
  if (!inputs.conflict.empty()) {
    made.failure =
        SummaryFailure{"usage", exit_code::kUsage, same_file(inputs.conflict, o), o.output.empty()};
    return made;
  }
  if (inputs.stopped || interrupt_requested()) {
    made.failure = interrupted("while the reports were read");
    return made;
  }
  made.summary = summarize(std::move(inputs), options);
  trace("summarised");
  FleetSummary& s = made.summary;
  s.generated_at = format_utc_timestamp(options.now_ms / 1000);
  s.tool_version = build_info::kVersion;
  s.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  made.printed = print_summary(s, summary_format(o.format));
  trace("summary printed");
  // A signal that came while the summary was made: nothing is written, exit 5 (as the probe's
  // interrupted run, whose report says so; a summary cut short would say nothing true).
  if (interrupt_requested()) made.failure = interrupted("before the summary was delivered");
  return made;
}

std::string summary_error_document(std::string_view kind, int code, const std::string& message) {
  return print_summary_error(std::string(kind), code, message, build_info::kVersion);
}

}  // namespace precision_probe
