#pragma once
// The command line: argv -> Options (the probe, `arch`) or SummarizeOptions (`summarize`), help,
// the version, or a usage error in the user's words. CLI11 stays behind this header.

#include <array>
#include <string>

#include "probe/cli/options.hpp"

namespace precision_probe {

struct CommandLine {
  enum class Action { run, help, version, usage_error };
  enum class Program { probe, summarize };
  Action action = Action::run;
  Program program = Program::probe;  // whose command line: what runs, whose error document
  Options options;                   // Program::probe (and `arch`)
  SummarizeOptions summarize;        // Program::summarize
  std::string text;                  // the help or version text, or the usage error (one line)
  bool json_requested = false;       // --format json was asked for, even if parsing failed later
  bool quiet = false;                // -q was given, even if parsing failed later
};

CommandLine parse_command_line(int argc, const char* const* argv);

// "precision-probe 0.1.0 (links no LibTorch: its engine loads the image's own ..., 2.9 or later,
// tested to 2.15)"
std::string version_text();

// The environment variables the probe reads, for --help (README.md lists the same).
struct EnvironmentVariable {
  const char* name;
  const char* effect;
};
inline constexpr std::array<EnvironmentVariable, 14> kEnvironmentVariables = {{
    {"CUDA_VISIBLE_DEVICES", "the GPUs checked, numbered as CUDA numbers them"},
    {"NVIDIA_VISIBLE_DEVICES", "read for the diagnostics of a container's GPUs"},
    {"NO_COLOR", "no colour in the text report"},
    {"TERM", "'dumb': no colour"},
    {"PRECISION_PROBE_TRACE",
     "1: print when each start-up phase ended, on stderr (0 or empty: off)"},
    {"PRECISION_PROBE_ENGINE", "the engine executable to use instead of the installed one"},
    {"PRECISION_PROBE_LIBCUDA", "another name or path for libcuda.so.1"},
    {"PRECISION_PROBE_LIBNVML", "another name or path for libnvidia-ml.so.1"},
    {"PRECISION_PROBE_TORCH",
     "the image's PyTorch to read and load (a torch package or LibTorch root) instead of "
     "python3's; none: look for none (no kernel runs)"},
    {"PRECISION_PROBE_PYTHON",
     "a Python (its path) whose torch is looked for after PRECISION_PROBE_TORCH, before python3's "
     "on PATH; the pip-installed launcher gives its own"},
    {"PRECISION_PROBE_NODE_NAME",
     "the node's name in the report, the metrics and summarize (Kubernetes: spec.nodeName) instead "
     "of the hostname; empty: unset"},
    {"KUBERNETES_SERVICE_HOST",
     "set (in a Kubernetes pod): the exit reason goes to /dev/termination-log where it can be "
     "written, unless --termination-log says otherwise"},
    {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
     "1 (NGC's images): said by a diagnostic; given to the tf32 check's worker alone"},
    {"PRECISION_PROBE_INJECT_FAULT",
     "MODE:ITERATION[:DEVICE]: with --soak, flip a bit of one result (a test of the detector)"},
}};

}  // namespace precision_probe
