// How every command ends (delivery.hpp).

#include "probe/delivery.hpp"

#include <fmt/format.h>

#include "strings/strings.hpp"
#include "process/process.hpp"
#include "probe/verdicts/exit_codes.hpp"

namespace precision_probe {

namespace {
const std::string kErrorPrefix = "precision-probe: error: ";
}  // namespace

void Console::say(const std::string& line) const {
  (void)write_all(streams_.err_fd, terminal_safe(line) + "\n");
}

int Console::fail(int code, const std::string& message, const std::string& document) const {
  say(kErrorPrefix + message);
  if (json_ && !document.empty()) print_after_failure(document);
  return code;
}

int Console::print(const std::string& text) const {
  if (quiet_) return exit_code::kOk;
  if (streams_.out_closed) {
    say(kErrorPrefix + "stdout is closed: nowhere to print the text asked for");
    return exit_code::kUsage;
  }
  if (const Expected<void> written = write_all(streams_.out_fd, text); !written) {
    say(kErrorPrefix + "cannot write to stdout: " + written.error());
    return exit_code::kOutputFailed;
  }
  return exit_code::kOk;
}

void Console::print_after_failure(const std::string& text) const {
  if (!quiet_ && !streams_.out_closed && !text.empty()) (void)write_all(streams_.out_fd, text);
}

Delivered deliver(PreparedOutputs& outputs, const Delivery& delivery, Verdict verdict,
                  const Console& console) {
  Delivered d;
  // A signal that comes while a reader does not read ends the wait (one that came before, during
  // the run, leaves the delivery of what it stopped to go on).
  const bool interrupted_before = interrupt_requested();
  const auto interrupted_now = [interrupted_before] {
    return !interrupted_before && interrupt_requested();
  };
  const Expected<void> delivered =
      outputs.deliver(delivery.contents, delivery.deadline, d.stdout_failed, interrupted_now);
  if (delivered) {
    if (verdict.code != exit_code::kOk && !delivery.stdout_shows_verdict) {
      console.say(fmt::format("precision-probe: exit {}: {}", verdict.code, verdict.reason));
    }
    d.verdict = std::move(verdict);
    return d;
  }
  d.problem = delivered.error();
  const std::string failed = delivery.what + " could not be delivered: " + d.problem;
  if (interrupted_now()) {
    verdict = {exit_code::kTimedOut, fmt::format("interrupted by {} while {} was being delivered",
                                                 signal_name(interrupt_signal()), delivery.what)};
  }
  // One line on stderr: what failed, and the verdict where it stands (3, 4, 5).
  if (exit_code::most_severe(verdict.code, exit_code::kOutputFailed) == verdict.code) {
    console.say(
        fmt::format("{}{} (exit {}: {})", kErrorPrefix, failed, verdict.code, verdict.reason));
  } else {
    verdict = {exit_code::kOutputFailed, failed};
    console.say(kErrorPrefix + failed);
  }
  d.verdict = std::move(verdict);
  return d;
}

}  // namespace precision_probe
