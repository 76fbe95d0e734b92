#pragma once
// The run's exit reason for Kubernetes (docs/integrations.md): one line of at most 4 KiB in the
// file the kubelet reads when a container ends (its terminationMessagePath, /dev/termination-log
// by default, a file it bind-mounts on its own), which `kubectl describe pod` shows as the
// container's Message. The target is checked and opened before the run as an output is
// (output.hpp: the protected_symlinks rule, a mount point written in place, nothing that is not a
// regular file replaced), and written last, with the verdict the run ends with.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/outputs/output.hpp"
#include "probe/platform/system.hpp"

namespace precision_probe {

// The kubelet's default terminationMessagePath.
inline constexpr std::string_view kKubernetesTerminationLog = "/dev/termination-log";
// The most of one container's message the kubelet keeps.
inline constexpr std::size_t kTerminationMessageBytes = 4096;

// "precision-probe exit 1 (a required mode is not natively usable): REASON" and a newline, control
// characters escaped; a longer one is cut at a character boundary and ends in "...", so that the
// whole is at most kTerminationMessageBytes.
std::string termination_message(int code, const std::string& reason);

// Where the exit reason goes: --termination-log's FILE (`named`), nowhere (its value "none", or no
// flag outside Kubernetes), or, with no flag where KUBERNETES_SERVICE_HOST is set, `default_path`
// where it is a regular file this process may write (it is never created).
struct TerminationLogChoice {
  std::string path;    // "" for nowhere
  bool named = false;  // by --termination-log: its failures are the run's
};
TerminationLogChoice choose_termination_log(
    const std::optional<std::string>& flag, const System& system,
    const std::string& default_path = std::string(kKubernetesTerminationLog));

class TerminationLog {
 public:
  TerminationLog() = default;  // nowhere

  // The chosen target checked and opened before the run, as an output is, and not a file that
  // one of `others` names too. A named one that cannot be is a usage error (the message); the
  // default that cannot be is left out, and `note` says why.
  static Expected<TerminationLog> prepare(const TerminationLogChoice& choice,
                                          const std::vector<OutputRequest>& others,
                                          const StandardStreams& streams, std::string& note);

  bool active() const { return prepared_ != nullptr; }
  bool named() const { return named_; }
  // "--termination-log FILE" or "the termination log /dev/termination-log", for messages.
  const std::string& label() const { return label_; }

  // Writes the message of `code` and `reason` (once: later calls write nothing); what failed.
  Expected<void> write(int code, const std::string& reason,
                       std::chrono::steady_clock::time_point deadline);

  // Writes the run's verdict and settles it: a named log that cannot be written is an output
  // that failed (exit 6 replaces 0 and 1, as for a report not delivered; 2 to 5 stand), the
  // default's failure changes nothing. The exit code, and the line for stderr ("" for none).
  struct Settled {
    int code = 0;
    std::string said;
  };
  Settled finish(int code, const std::string& reason,
                 std::chrono::steady_clock::time_point deadline);

 private:
  std::unique_ptr<PreparedOutputs> prepared_;
  bool named_ = false;
  std::string label_;
};

}  // namespace precision_probe
