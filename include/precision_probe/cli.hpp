#pragma once
// The command line: argv -> Options. CLI11 stays behind this header.

#include <string>

#include "precision_probe/options.hpp"

namespace precision_probe {

struct CommandLine {
  enum class Action { run, help, version, usage_error };
  Action action = Action::run;
  Options options;
  std::string text;             // the help or version text, or the usage error (one line)
  bool json_requested = false;  // --format json was asked for, even if parsing failed later
};

CommandLine parse_command_line(int argc, const char* const* argv);

// "precision-probe 0.1.0 (LibTorch 2.11.0, CUDA 13.0)"
std::string version_text();

}  // namespace precision_probe
