#pragma once
// How every command ends (docs/exit-codes.md), the probe's and summarize's alike: an error said on
// stderr and, where JSON was asked for, as a JSON document on stdout; a result delivered to all its
// outputs; and the exit code, a failed delivery ranked in the one severity order of exit_codes.hpp
// (a report that could not be delivered is exit 6, never 0).

#include <chrono>
#include <string>
#include <vector>

#include "probe/outputs/output.hpp"

namespace precision_probe {

// A command's own streams, and what the user asked of them.
class Console {
 public:
  Console(const StandardStreams& streams, bool json, bool quiet)
      : streams_(streams), json_(json), quiet_(quiet) {}

  const StandardStreams& streams() const { return streams_; }
  bool json() const { return json_; }

  // One line on stderr, control characters escaped. Nothing can be done when stderr fails.
  void say(const std::string& line) const;
  // What could not be done: "precision-probe: error: MESSAGE" on stderr and, where JSON was asked
  // for, `document` on stdout (not under -q, nor on a stdout closed when the program started, nor
  // where `document` is "": stdout is a file the refusal protects).
  // Returns `code`.
  int fail(int code, const std::string& message, const std::string& document) const;
  // Help or the version on stdout, unless -q: 0, 2 when stdout is closed, 6 when it fails.
  int print(const std::string& text) const;
  // Best effort on stdout, unless -q or closed: what follows a delivery that failed elsewhere.
  void print_after_failure(const std::string& text) const;

 private:
  StandardStreams streams_;
  bool json_;
  bool quiet_;
};

// A command's exit code and why.
struct Verdict {
  int code = 0;
  std::string reason;
};

// One command's results, one a prepared output, and how they are shown.
struct Delivery {
  std::vector<std::string> contents;  // contents[i] goes to the i-th prepared output
  std::chrono::steady_clock::time_point deadline;
  std::string what;  // "the report", "the summary"
  // stdout carries a text result that ends with the verdict: no "exit N" line on stderr then.
  bool stdout_shows_verdict = false;
};

struct Delivered {
  Verdict verdict;      // after the delivery
  std::string problem;  // "" when every output took its content
  bool stdout_failed = false;
};

// Delivers, then settles the verdict: a delivery that failed is said on stderr (with the verdict,
// where it stands) and makes the exit 6 where that is more severe; a signal while a reader did not
// read makes it 5. A verdict other than 0 is said on stderr wherever stdout does not show it.
Delivered deliver(PreparedOutputs& outputs, const Delivery& delivery, Verdict verdict,
                  const Console& console);

}  // namespace precision_probe
