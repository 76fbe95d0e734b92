// The run's exit reason for Kubernetes (termination_log.hpp).

#include "probe/outputs/termination_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "strings/strings.hpp"
#include "probe/verdicts/exit_codes.hpp"

namespace precision_probe {

namespace {

constexpr std::string_view kFlag = "--termination-log";

// A code's meaning in a few words: the table's, up to its first ':' or " (".
std::string short_meaning(int code) {
  for (const exit_code::Meaning& m : exit_code::kMeanings) {
    if (m.code != code) continue;
    const std::string_view text = m.meaning;
    return std::string(text.substr(0, std::min(text.find(':'), text.find(" ("))));
  }
  return "an exit code of no meaning";
}

// What a path names for the comparison of two outputs: the file's device and inode where it
// exists (links followed), stdout's for "-", else its directory's and its name.
struct Identity {
  bool known = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string name;  // a file not there yet
  bool operator==(const Identity& o) const {
    return known && o.known && dev == o.dev && ino == o.ino && name == o.name;
  }
};

Identity identity_of(const std::string& path, const StandardStreams& streams) {
  Identity id;
  struct stat st {};
  if (path == "-" ? ::fstat(streams.out_fd, &st) == 0 : ::stat(path.c_str(), &st) == 0) {
    id = {true, st.st_dev, st.st_ino, ""};
    return id;
  }
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) == 0) {
    id = {true, st.st_dev, st.st_ino, slash == std::string::npos ? path : path.substr(slash + 1)};
  }
  return id;
}

}  // namespace

std::string termination_message(int code, const std::string& reason) {
  std::string line = fmt::format("precision-probe exit {} ({}): {}", code, short_meaning(code),
                                 terminal_safe(reason));
  if (line.size() + 1 > kTerminationMessageBytes) {
    const std::size_t room = kTerminationMessageBytes - 4;  // "..." and the newline
    std::size_t end = 0;
    while (end < line.size()) {
      const std::size_t next = end + std::max<std::size_t>(1, utf8_length(line, end));
      if (next > room) break;
      end = next;
    }
    line = line.substr(0, end) + "...";
  }
  return line + "\n";
}

TerminationLogChoice choose_termination_log(const std::optional<std::string>& flag,
                                            const System& system, const std::string& default_path) {
  if (flag) return *flag == "none" ? TerminationLogChoice{} : TerminationLogChoice{*flag, true};
  if (system.getenv("KUBERNETES_SERVICE_HOST").value_or("").empty()) return {};
  struct stat st {};
  if (::stat(default_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      ::faccessat(AT_FDCWD, default_path.c_str(), W_OK, AT_EACCESS) != 0) {
    return {};
  }
  return {default_path, false};
}

Expected<TerminationLog> TerminationLog::prepare(const TerminationLogChoice& choice,
                                                 const std::vector<OutputRequest>& others,
                                                 const StandardStreams& streams,
                                                 std::string& note) {
  TerminationLog log;
  if (choice.path.empty()) return log;
  log.named_ = choice.named;
  const std::string flag = choice.named ? std::string(kFlag) : "the termination log";
  log.label_ = flag + " " + printable_path(choice.path);
  // Where it cannot be written: the named one is the run's usage error, the default a note.
  auto refuse = [&](const std::string& why) -> Expected<TerminationLog> {
    if (choice.named) return Unexpected{why};
    note = fmt::format("{} is left out: {}", log.label_, why);
    return TerminationLog{};
  };
  const Identity self = identity_of(choice.path, streams);
  for (const OutputRequest& other : others) {
    if (self == identity_of(other.path, streams)) {
      return refuse(fmt::format("{} and {} name the same file ({})", other.flag, flag,
                                printable_path(choice.path)));
    }
  }
  Expected<std::unique_ptr<PreparedOutputs>> prepared =
      prepare_outputs({{choice.path, flag}}, streams);
  if (!prepared) return refuse(prepared.error());
  log.prepared_ = std::move(*prepared);
  return log;
}

Expected<void> TerminationLog::write(int code, const std::string& reason,
                                     std::chrono::steady_clock::time_point deadline) {
  if (!prepared_) return {};
  bool stdout_failed = false;
  Expected<void> written =
      prepared_->deliver({termination_message(code, reason)}, deadline, stdout_failed);
  prepared_.reset();
  return written;
}

TerminationLog::Settled TerminationLog::finish(int code, const std::string& reason,
                                               std::chrono::steady_clock::time_point deadline) {
  const Expected<void> written = write(code, reason, deadline);
  if (written) return {code, ""};
  if (!named_)
    return {code, "precision-probe: note: the exit reason was not written: " + written.error()};
  const int settled = exit_code::most_severe(code, exit_code::kOutputFailed);
  const std::string failed =
      "precision-probe: error: the exit reason could not be written: " + written.error();
  return {settled,
          settled == code ? fmt::format("{} (exit {}: {})", failed, code, reason) : failed};
}

}  // namespace precision_probe
