#include "probe/fleet/summarize_command.hpp"

#include <sys/stat.h>

#include <array>
#include <chrono>

#include <fmt/format.h>

#include "common/build_info.hpp"
#include "common/strings.hpp"
#include "common/trace.hpp"
#include "probe/fleet/fleet_reader.hpp"
#include "probe/fleet/summary_printers.hpp"
#include "probe/platform/process.hpp"
#include "probe/verdicts/exit_codes.hpp"

namespace precision_probe {

namespace {

struct SummarizeOptions {
  SummaryFormat format = SummaryFormat::text;
  std::string output;  // "" is stdout
  std::string output_flag = "-o";
  SummaryOptions summary;
  bool quiet = false;
  bool help = false;
  bool json = false;         // --format json was asked for (an error is then a JSON document too)
  bool output_dash = false;  // -o - (stdout, named)
  std::vector<std::string> sources;
};

struct SummarizeOption {
  const char* names;
  const char* value;
  const char* help;
};

constexpr std::array<SummarizeOption, 6> kSummarizeOptions = {{
    {"--format", "FORMAT", "text (default), json (docs/summarize.md) or markdown"},
    {"-o,--output", "FILE", "write the summary to FILE instead of stdout (replaced atomically)"},
    {"--max-age", "DURATION", "a report older than this (90m, 24h, 7d) is stale: its node unknown"},
    {"--require", "MODES", "every gated device of every node must run these natively (repeatable)"},
    {"-q,--quiet", "", "nothing on stdout: the exit code tells the result"},
    {"-h,--help", "", "this help"},
}};

// A paragraph of the help, wrapped to 80 columns as the summary's text is.
std::string paragraph(std::string_view text) { return join(wrap(text, 80), "\n") + "\n"; }

std::string summarize_help() {
  std::string text =
      "precision-probe summarize: a fleet's reports in one view\n\n"
      "Usage: precision-probe summarize [OPTIONS] FILE|DIR|- ...\n\n" +
      paragraph(
          "Reads precision-probe JSON reports: files, every *.json file of a directory, or JSON "
          "Lines on standard input (-). Per GPU model and per mode: how many GPUs are native, "
          "emulated, unsupported or failed, and which are not native with the reason; throughput "
          "outliers (more than 10 % below the median of their model, from --bench or --soak "
          "figures); stale, unreadable and unknown reports. Of two reports from one host the "
          "newer counts; a report dated more than 5 minutes ahead of this clock is listed, and "
          "never counts over another report of its host.") +
      "\nOptions:\n";
  for (const SummarizeOption& o : kSummarizeOptions) {
    const std::string names = fmt::format("{} {}", o.names, o.value);
    const std::vector<std::string> lines = wrap(o.help, 80 - 29);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      text += fmt::format("  {:<26} {}\n", i == 0 ? names : "", lines[i]);
    }
  }
  text += "\n" + paragraph(
                     "Exit codes: 0 every node known, nothing failed, every requirement met; 1 a "
                     "required mode not native somewhere; 2 bad input (an output that is one of "
                     "the reports read, too); 3 a node unknown (a stale or unreadable report, or "
                     "one that exited 2, 3 or 5); 4 a device its report gated failed, or an "
                     "internal error (memory ran out); 5 interrupted (SIGINT, SIGTERM): nothing "
                     "written; 6 the summary could not be delivered. Silent data corruption (a "
                     "--soak mismatch on a gated device) is 4 before anything else; then the most "
                     "severe wins: 2, 3, 4, 6, 1, 0.");
  return text;
}

const SummarizeOption* find_summarize_option(std::string_view name) {
  for (const SummarizeOption& o : kSummarizeOptions) {
    for (const std::string& n : split(o.names, ',')) {
      if (n == name) return &o;
    }
  }
  return nullptr;
}

std::string apply(SummarizeOptions& o, const std::string& name, const std::string& value) {
  if (name == "--format") {
    if (value == "json")
      o.format = SummaryFormat::json;
    else if (value == "markdown" || value == "md")
      o.format = SummaryFormat::markdown;
    else if (value == "text")
      o.format = SummaryFormat::text;
    else
      return fmt::format("--format: '{}' is not a format of summarize (text, json, markdown)",
                         printable(value, 40));
  } else if (name == "-o" || name == "--output") {
    o.output = value == "-" ? "" : value;
    o.output_dash = value == "-";
    o.output_flag = name;
  } else if (name == "--max-age") {
    const auto age = parse_duration(value);
    if (!age || *age <= 0) {
      return fmt::format("--max-age: '{}' is not a duration (such as 90m, 24h or 7d)",
                         printable(value, 40));
    }
    o.summary.max_age_s = *age;
  } else if (name == "--require") {
    const ModeListParse modes = parse_mode_list(value);
    if (!modes.error.empty()) return "--require: " + modes.error;
    for (Mode m : modes.modes) {
      if (std::find(o.summary.require.begin(), o.summary.require.end(), m) ==
          o.summary.require.end()) {
        o.summary.require.push_back(m);
      }
    }
  }
  return "";
}

// One pass over argv[2...]: "" or the first problem, as the user typed it.
std::string parse_summarize(int argc, const char* const* argv, SummarizeOptions& o) {
  std::string error;
  std::vector<std::string> seen;
  bool rest = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i] != nullptr ? argv[i] : "";
    if (rest || arg == "-" || arg.empty() || arg.front() != '-') {
      o.sources.push_back(arg);
      continue;
    }
    if (arg == "--") {
      rest = true;
      continue;
    }
    const std::size_t eq = arg.compare(0, 2, "--") == 0 ? arg.find('=') : std::string::npos;
    const std::string name = arg.substr(0, eq);
    const SummarizeOption* spec = find_summarize_option(name);
    if (spec == nullptr) {
      if (error.empty())
        error = fmt::format(
            "summarize: unknown option '{}' (precision-probe summarize --help lists them)",
            printable(name, 40));
      continue;
    }
    if (*spec->value == '\0') {
      if (eq != std::string::npos && error.empty()) error = fmt::format("{} takes no value", name);
      if (name == "-q" || name == "--quiet") o.quiet = true;
      if (name == "-h" || name == "--help") o.help = true;
      continue;
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc && argv[i + 1] != nullptr) {
      value = argv[++i];
      if (value.size() > 1 && value.front() == '-' && error.empty()) {
        error = fmt::format("{}: '{}' looks like an option, not a {} (write {}={} if you mean it)",
                            name, printable(value, 40), spec->value,
                            name == "-o" ? "--output" : name, printable(value, 40));
      }
    } else {
      if (error.empty()) error = fmt::format("{}: {} is missing", name, spec->value);
      continue;
    }
    if (value == "json" && name == "--format") o.json = true;
    if (value.empty() && error.empty()) error = fmt::format("{}: empty value", name);
    const std::string primary = name == "-o" ? "--output" : name;
    if (primary != "--require" && std::find(seen.begin(), seen.end(), primary) != seen.end() &&
        error.empty()) {
      error = fmt::format("{} is given more than once", name);
    }
    seen.push_back(primary);
    if (error.empty()) error = apply(o, name, value);
  }
  if (error.empty() && !o.help && o.sources.empty()) {
    error = "summarize: no reports given (name files, directories, or - for JSON Lines on stdin)";
  }
  if (error.empty() && std::count(o.sources.begin(), o.sources.end(), "-") > 1) {
    error = "summarize: - (standard input) is named more than once";
  }
  if (error.empty() && o.quiet && o.output_dash) {
    error = fmt::format("-q keeps stdout silent, but {} - writes to it", o.output_flag);
  }
  return error;
}

const std::string kError = "precision-probe: error: ";

void say(const StandardStreams& streams, const std::string& line) {
  (void)write_all(streams.err_fd, terminal_safe(line) + "\n");
}

// A summary that could not be made: one line on stderr and, with --format json, still a JSON
// document on stdout. `kind` "usage" (bad input, exit 2), "interrupted" (a signal, exit 5) or
// "internal" (exit 4).
int error_exit(const char* kind, int code, const std::string& message, const SummarizeOptions& o,
               const StandardStreams& streams) {
  say(streams, kError + message);
  if (o.json && !o.quiet && !streams.out_closed) {
    (void)write_all(streams.out_fd, print_summary_error(kind, code, message, build_info::kVersion));
  }
  return code;
}

int usage_error(const std::string& message, const SummarizeOptions& o,
                const StandardStreams& streams) {
  return error_exit("usage", exit_code::kUsage, message, o, streams);
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int interrupted(const char* when, const SummarizeOptions& o, const StandardStreams& streams) {
  return error_exit("interrupted", exit_code::kTimedOut,
                    fmt::format("interrupted by {} {}: nothing was written",
                                signal_name(interrupt_signal()), when),
                    o, streams);
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

// The reports read and summarised, the summary's time and version set; or, where there is no
// summary (the output is one of the reports, a signal came), the exit code, error_exit having
// said why.
struct Made {
  FleetSummary summary;
  int code = -1;  // >= 0: no summary, this exit (error_exit said why)
};

Made make_summary(SummarizeOptions& o, const StandardStreams& streams) {
  const auto start = std::chrono::steady_clock::now();
  o.summary.now_ms = now_ms();
  FleetReadOptions read;
  read.required = o.summary.require;
  read.stop = [] { return interrupt_requested(); };
  read.output = output_identity(o, streams);
  FleetInputs inputs = read_fleet_reports(o.sources, 0, read);
  trace("reports read");
  if (!inputs.conflict.empty()) return {{}, usage_error(same_file(inputs.conflict, o), o, streams)};
  if (inputs.stopped || interrupt_requested()) {
    return {{}, interrupted("while the reports were read", o, streams)};
  }
  Made made{summarize(std::move(inputs), o.summary)};
  trace("summarised");
  FleetSummary& s = made.summary;
  s.generated_at = format_utc_timestamp(o.summary.now_ms / 1000);
  s.tool_version = build_info::kVersion;
  s.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return made;
}

}  // namespace

int run_summarize(int argc, const char* const* argv, const StandardStreams& streams) {
  SummarizeOptions o;
  if (const std::string error = parse_summarize(argc, argv, o); !error.empty()) {
    return usage_error(error, o, streams);
  }
  if (o.help) {
    if (o.quiet) return exit_code::kOk;
    return write_all(streams.out_fd, summarize_help()).empty() ? exit_code::kOk
                                                               : exit_code::kOutputFailed;
  }
  std::vector<OutputRequest> requests;
  if (!o.output.empty())
    requests.push_back({o.output, o.output_flag});
  else if (!o.quiet)
    requests.push_back({"-", "the summary on stdout"});
  PreparedOutputsResult prepared = prepare_outputs(requests, streams, o.quiet ? "-q" : "");
  if (!prepared.error.empty()) return usage_error(prepared.error, o, streams);

  FleetSummary s;
  std::vector<std::string> text;
  try {
    Made made = make_summary(o, streams);
    if (made.code >= 0) return made.code;
    s = std::move(made.summary);
    text = {print_summary(s, o.format)};
    trace("summary printed");
  } catch (const std::exception& e) {
    // Memory ran out, say: nothing of the summary is delivered, and JSON still gets a document.
    return error_exit("internal", exit_code::kCheckFailed,
                      std::string("internal error: ") + e.what(), o, streams);
  }
  // A signal that came while the summary was made: nothing is written, exit 5 (as the probe's
  // interrupted run, whose report says so; a summary cut short would say nothing true).
  if (interrupt_requested()) return interrupted("before the summary was delivered", o, streams);
  bool stdout_failed = false;
  const std::string problem =
      prepared.outputs->deliver(text, std::chrono::steady_clock::now() + std::chrono::seconds(30),
                                stdout_failed, [] { return interrupt_requested(); });
  if (!problem.empty() && interrupt_requested()) {
    // A signal while the reader did not read: no file was replaced; what a stream already took
    // cannot be taken back. An error document only where stdout did not carry the summary.
    const std::string message = fmt::format(
        "interrupted by {} while the summary was being delivered", signal_name(interrupt_signal()));
    if (o.output.empty()) {
      say(streams, kError + message);
      return exit_code::kTimedOut;
    }
    return error_exit("interrupted", exit_code::kTimedOut, message, o, streams);
  }
  if (!problem.empty()) {
    say(streams, kError + "the summary could not be delivered: " + problem);
    return s.exit_code == exit_code::kOk || s.exit_code == exit_code::kRequirementNotMet
               ? exit_code::kOutputFailed
               : s.exit_code;
  }
  if (s.exit_code != exit_code::kOk &&
      (requests.empty() || !o.output.empty() || o.format != SummaryFormat::text)) {
    say(streams, fmt::format("precision-probe: exit {}: {}", s.exit_code, s.exit_reason));
  }
  return s.exit_code;
}

}  // namespace precision_probe
