#pragma once
// `precision-probe summarize [--format text|json|markdown] [-o FILE] [--max-age DURATION]
// [--require MODES] [-q] FILE...`: the command line, the run, the delivery (docs/summarize.md).

#include "probe/outputs/output.hpp"

namespace precision_probe {

// argv[1] is "summarize". Returns the exit code: 0, 1, 3 or 4 as the summary decides, 2 for bad
// input (an output that is one of the reports read among it), 5 when a signal came (nothing is
// written then), 6 when the summary could not be delivered.
int run_summarize(int argc, const char* const* argv, const StandardStreams& streams);

}  // namespace precision_probe
