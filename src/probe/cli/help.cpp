// The help of the probe, `arch` and `summarize` (command_line.hpp): the options each lists are its
// CLI11 app's (the option table in cli.cpp, read into a CommandSpec), everything in 80 columns.

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "strings/strings.hpp"
#include "precision_probe/modes.hpp"
#include "probe/cli/cli.hpp"
#include "probe/cli/command_line.hpp"
#include "probe/verdicts/exit_codes.hpp"

namespace precision_probe::cli {

namespace {

constexpr std::size_t kColumns = 80;

using Rows = std::vector<std::pair<std::string, std::string>>;

std::string paragraph(std::string_view text) { return join(wrap(text, kColumns), "\n") + "\n"; }

// Two columns: the first as wide as its widest entry (at most 32), the second wrapped under
// itself. An entry wider than its column has its text on the lines below.
std::string two_columns(const Rows& rows) {
  std::size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  width = std::min<std::size_t>(width, 32);
  std::string text;
  for (const auto& [left, right] : rows) {
    const std::vector<std::string> lines = wrap(right, kColumns - 4 - width);
    const bool own_line = left.size() > width;
    if (own_line) text += "  " + left + "\n";
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string first = i == 0 && !own_line ? left : "";
      text += fmt::format("  {:<{}}  {}\n", first, width, lines[i]);
    }
  }
  return text;
}

// The options a command's help lists: its own, and for `arch` (whose words after CC are the
// probe's) the probe's options that apply to it.
Rows option_rows(const CommandSpec& command) {
  std::vector<const OptionSpec*> options;
  for (const OptionSpec& o : command.options) options.push_back(&o);
  if (command.falls_through && command.parent != nullptr) {
    for (const OptionSpec& o : command.parent->options) {
      if (o.group == kAlsoArch) options.push_back(&o);
    }
  }
  Rows rows;
  for (const OptionSpec* o : options) {
    rows.emplace_back(o->names + (o->value.empty() ? "" : " " + o->value), o->help);
  }
  return rows;
}

std::string modes_for_require() {
  return paragraph("Modes for --require: " + accepted_mode_keys() + ".");
}

std::string probe_help(const CommandSpec& probe) {
  std::string text =
      "precision-probe: which numeric precisions can this machine really train in?\n"
      "Checks every visible NVIDIA GPU and the CPU: hardware support, matmul smoke\n"
      "tests against a float64 reference, training steps, and a verdict per precision\n"
      "(native, emulated, unsupported, failed, not_tested).\n\n"
      "Usage: precision-probe [OPTIONS]\n"
      "       precision-probe arch CC [OPTIONS]\n"
      "       precision-probe summarize [OPTIONS] FILE|DIR|- ...\n\n"
      "Options:\n" +
      two_columns(option_rows(probe)) + "\nSubcommands (each has its own --help):\n";
  Rows subcommands;
  for (const CommandSpec* sub : probe.subcommands) {
    subcommands.emplace_back(sub->name, sub->description);
  }
  text += two_columns(subcommands) + "\n" + modes_for_require() + "\nExit codes:\n";
  Rows codes;
  for (const exit_code::Meaning& m : exit_code::kMeanings) {
    codes.emplace_back(std::to_string(m.code), m.meaning);
  }
  Rows variables;
  for (const EnvironmentVariable& v : kEnvironmentVariables) {
    variables.emplace_back(v.name, v.effect);
  }
  return text + two_columns(codes) + "\nEnvironment:\n" + two_columns(variables) +
         "\nDocumentation: README.md and docs/ (exit codes: docs/exit-codes.md).\n";
}

std::string arch_help(const CommandSpec& arch) {
  return "Usage: precision-probe arch CC [OPTIONS]\n\n" +
         paragraph(
             "Offline: the precision matrix for a compute capability (CC: 8.9, 89 or sm_89), and "
             "whether the image's LibTorch carries kernels for it. It runs no kernels and needs no "
             "GPU; --require gates on its verdicts (exit 1 where one is not native).") +
         "\nOptions:\n" + two_columns(option_rows(arch)) + "\n" + modes_for_require() +
         "\nExit codes and the environment: precision-probe --help.\n";
}

std::string summarize_help(const CommandSpec& summarize) {
  std::vector<std::string> order;
  for (const int code : exit_code::by_severity()) {
    if (code != exit_code::kTimedOut)
      order.push_back(std::to_string(code));  // 5: nothing is written
  }
  return "precision-probe summarize: a fleet's reports in one view\n\n"
         "Usage: precision-probe summarize [OPTIONS] FILE|DIR|- ...\n\n" +
         paragraph(
             "Reads precision-probe JSON reports: files, every *.json file of a directory, or JSON "
             "Lines on standard input (-). Per GPU model and per mode: how many GPUs are native, "
             "emulated, unsupported or failed, and which are not native with the reason; "
             "throughput outliers (more than 10 % below the median of their model, from --bench or "
             "--soak figures); stale, unreadable and unknown reports. Of two reports from one host "
             "the newer counts; a report dated more than 5 minutes ahead of this clock is listed, "
             "and never counts over another report of its host.") +
         "\nOptions:\n" + two_columns(option_rows(summarize)) + "\n" +
         paragraph(
             "Exit codes: 0 every node known, nothing failed, every requirement met; 1 a required "
             "mode not native somewhere; 2 bad input (an output that is one of the reports read, "
             "too); 3 a node unknown (a stale or unreadable report, or one that exited 2, 3 or 5); "
             "4 a device its report gated failed, or an internal error (memory ran out); 5 "
             "interrupted (SIGINT, SIGTERM, SIGHUP, SIGQUIT): nothing written; 6 the summary could "
             "not be delivered. Silent data corruption (a --soak mismatch on a gated device) is 4 "
             "before anything else; then the most severe wins: " +
             join(order, ", ") + ".");
}

}  // namespace

std::string help_text(const CommandSpec& command) {
  if (command.name == "arch") return arch_help(command);
  if (command.name == "summarize") return summarize_help(command);
  return probe_help(command);
}

}  // namespace precision_probe::cli
