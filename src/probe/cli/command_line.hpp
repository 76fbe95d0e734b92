#pragma once
// Inside the CLI layer: the commands as plain data, read from their CLI11 apps (cli.cpp builds the
// apps from the option table; CLI11 is compiled there alone), what the user typed, read before
// CLI11 parses (typed.cpp), and the help (help.cpp). Nothing outside src/probe/cli/ includes this.

#include <map>
#include <string>
#include <vector>

namespace precision_probe::cli {

// Where an option applies, kept as its CLI11 group.
inline const std::string kAlsoArch = "arch";    // the probe and `arch`, which runs no kernels
inline const std::string kKernels = "kernels";  // only where kernels run: --quick refuses it
inline const std::string kProbeOnly = "probe";  // the probe's only

// One option of a command, as its CLI11 app defines it.
struct OptionSpec {
  std::string names;  // "-o,--output"
  std::string name;   // its long name: "--output"
  std::string value;  // its value's name ("FILE"); "" for a flag
  std::string group;  // where it applies
  std::string help;
};

// One command: the probe ("precision-probe"), "arch" or "summarize".
struct CommandSpec {
  std::string name;
  std::string description;
  std::vector<OptionSpec> options;      // in the table's order, -h,--help first
  const CommandSpec* parent = nullptr;  // a subcommand's: the probe
  bool falls_through = false;           // its words after its own are the parent's (arch)
  std::vector<const CommandSpec*> subcommands;
};

// What the user typed, read before CLI11 parses: what a message needs even when parsing fails
// (each option as typed, whether JSON or silence was asked for), and what CLI11 would read
// otherwise than it was typed.
struct AsTyped {
  std::map<std::string, std::string> spelled;  // "summarize --output" -> "-o"
  bool json = false;                           // --format json: a usage error is JSON too
  bool quiet = false;                          // -q or --quiet
  bool summarize = false;                      // summarize's words: its help, its error document
  // A flag given a value (--quick=yes, -qx), an empty value after '=', or a value that looks like
  // an option (--json -q): CLI11 would take each as something else. The first, or "".
  std::string error;
  // The last word is an option whose value is missing: what to say ("--json: FILE is missing").
  std::string lacks_value;

  // The option `name` (its long name) of `command` as the user typed it, else `name`.
  std::string name(const std::string& command, const std::string& name) const;
};

AsTyped read_as_typed(const CommandSpec& probe, int argc, const char* const* argv);

// The help of one command in 80 columns: the probe's, `arch`'s (its own and the probe's options of
// kAlsoArch) or `summarize`'s.
std::string help_text(const CommandSpec& command);

}  // namespace precision_probe::cli
