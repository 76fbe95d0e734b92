#pragma once
// Inside the CLI layer: the command line's CLI11 apps (cli.cpp builds them from the option table),
// what the user typed, read before CLI11 parses (typed.cpp), CLI11's refusals said in the user's
// words (typed.cpp), and the help (help.cpp). Nothing outside src/probe/cli/ includes this.

#include <map>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

namespace precision_probe::cli {

// Where an option applies, kept as its CLI11 group.
inline const std::string kAlsoArch = "arch";    // the probe and `arch`, which runs no kernels
inline const std::string kKernels = "kernels";  // only where kernels run: --quick refuses it
inline const std::string kProbeOnly = "probe";  // the probe's only

// The command line: the probe's app and its two subcommands.
struct Apps {
  CLI::App& probe;
  CLI::App& arch;
  CLI::App& summarize;
};

// What the user typed, read before CLI11 parses: what a message needs even when parsing fails
// (each option as typed, whether JSON or silence was asked for), and what CLI11 would read
// otherwise than it was typed.
struct AsTyped {
  std::map<const CLI::Option*, std::string> spelled;  // "-o" or "--output"
  bool json = false;       // --format json: a usage error is a JSON document too
  bool quiet = false;      // -q or --quiet
  bool summarize = false;  // summarize's words: its help, its error document
  // A flag given a value (--quick=yes, -qx), an empty value after '=', or a value that looks like
  // an option (--json -q): CLI11 would take each as something else. The first, or "".
  std::string error;
  // The last word is an option whose value is missing: what to say ("--json: FILE is missing").
  std::string lacks_value;

  // The option as the user typed it, else its long name.
  std::string name(const CLI::Option& option) const;
};

AsTyped read_as_typed(const Apps& apps, int argc, const char* const* argv);

// A value or a combination refused by the option table: the whole message, one line. Thrown from
// the table's checks through CLI11's parse, caught in parse_command_line.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// CLI11's refusal of the command line (an unknown option, one given twice, a missing value or
// word, options that exclude or need each other), in the user's words.
std::string explain(const CLI::ParseError& error, const Apps& apps, const AsTyped& typed);

// The help of one app: the probe's, `arch`'s or `summarize`'s, in 80 columns.
std::string help_text(const CLI::App& app);

}  // namespace precision_probe::cli
