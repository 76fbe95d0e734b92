// The image reader (image_reader.hpp): the image's PyTorch read in a child process.

#include "probe/facts/image_reader.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "arch/arch.hpp"
#include "wire/protocol.hpp"
#include "strings/strings.hpp"
#include "probe/facts/torch_files.hpp"
#include "process/io.hpp"
#include "process/process.hpp"
#include "probe/platform/system.hpp"
#include "report/json_fields.hpp"

namespace precision_probe {

namespace json_fields {

// The reader's one line: the Python it needs asked (run again with its answer), or the stack it
// found (null: none).
struct ReaderLine {
  std::optional<std::string> ask;
  std::optional<StackInfo> stack;
};

template <class V, class S>
std::enable_if_t<is<S, ReaderLine>> fields(V& v, S& line) {
  v.omit_unless(line.ask.has_value(), "ask", line.ask);
  v.omit_unless(!line.ask.has_value(), "stack", line.stack);
}

}  // namespace json_fields

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kParentVariable = "PRECISION_PROBE_PARENT";
// A stack is a few kilobytes; its paths on stderr a few more.
constexpr std::size_t kMaxAnswer = std::size_t{4} << 20U;
// A killed reader stuck in the kernel (uninterruptible sleep) is not waited for longer.
constexpr std::chrono::milliseconds kReapLimit{200};

// --- The child ---------------------------------------------------------------------------------

// The real system, saying on stderr each path it is about to look at: the last one is where a
// reader that never answers is stuck.
class TracingSystem final : public System {
 public:
  explicit TracingSystem(const System& real) : real_(real) {}
  std::optional<std::string> getenv(const std::string& name) const override {
    return real_.getenv(name);
  }
  std::optional<std::string> read_file(const std::string& path) const override {
    note(path);
    return real_.read_file(path);
  }
  bool exists(const std::string& path) const override {
    note(path);
    return real_.exists(path);
  }
  bool accessible(const std::string& path) const override {
    note(path);
    return real_.accessible(path);
  }
  std::string not_regular(const std::string& path) const override {
    note(path);
    return real_.not_regular(path);
  }
  std::string denied(const std::string& path) const override {
    note(path);
    return real_.denied(path);
  }
  std::vector<std::string> list_dir(const std::string& dir,
                                    const std::string& prefix) const override {
    note(dir);
    return real_.list_dir(dir, prefix);
  }
  std::string hostname() const override { return real_.hostname(); }
  std::string machine() const override { return real_.machine(); }
  std::string kernel_release() const override { return real_.kernel_release(); }
  bool stdout_is_terminal() const override { return false; }
  int terminal_columns() const override { return 0; }

 private:
  static void note(const std::string& path) { (void)write_all(STDERR_FILENO, path + "\n"); }
  const System& real_;
};

}  // namespace

int run_image_reader(int argc, const char* const* args) {
  // Ends with the probe, even when the probe is killed; and not at all if it is already gone.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const auto system = make_real_system();
  const std::string parent = system->getenv(kParentVariable).value_or("");
  if (!parent.empty() && parent != std::to_string(::getppid())) return 1;
  const TracingSystem traced(*system);
  std::optional<std::string> wanted;  // the Python to ask, where the search needs it
  const std::vector<std::string> given(args, args + argc);
  const PythonPrefixes ask = [&wanted, &given](const std::string& python) {
    if (given.empty()) wanted = python;
    if (given.empty() || given[0] != python) return std::optional<std::vector<std::string>>{};
    return std::optional<std::vector<std::string>>{{given.begin() + 1, given.end()}};
  };
  const std::optional<StackInfo> stack = search_image_torch(traced, ask);
  const json_fields::ReaderLine line{wanted, wanted ? std::nullopt : stack};
  const std::string text =
      json_fields::encode(line).dump(-1, ' ', false, json_fields::json::error_handler_t::replace);
  return write_all(STDOUT_FILENO, text + "\n") ? 0 : 6;
}

namespace {

// A line's texts are cut at 16 KiB, its lists at 1,024 items (as a worker's).
constexpr json_fields::ReadLimits kLineLimits{std::size_t{16} * 1024, 1024};

// --- The probe's side ----------------------------------------------------------------------------

// What one reading gave: the python3 to ask, or the stack (nullopt: none found), or a failure.
struct Answer {
  std::optional<std::string> ask;
  std::optional<StackInfo> stack;
  std::optional<StackInfo> failure;
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

StackInfo failed_reading(ErrorKind kind, std::string error, Clock::time_point start) {
  StackInfo s;
  s.source = "image files";
  s.error = std::move(error);
  s.read_failure = kind;
  s.read_ms = ms_since(start);
  return s;
}

bool is_arch_target(const std::string& text) {
  const std::vector<ArchTarget> parsed = parse_arch_list(text);
  return parsed.size() == 1 && parsed[0].to_string() == text;
}

// A stack the child sent, accepted, or what it cannot be: the reader reads files, it loads no
// library, and it cannot have taken longer than the reading it was part of.
Expected<void> possible(const StackInfo& s, double elapsed_ms) {
  const bool python = (starts_with(s.found_by, "python3 (") ||
                       starts_with(s.found_by, "PRECISION_PROBE_PYTHON (")) &&
                      s.found_by.back() == ')';
  const bool named = s.found_by == "PRECISION_PROBE_TORCH" ||
                     (s.found_by == "PRECISION_PROBE_PYTHON" && !s.available);
  if (s.source != "image files") return Unexpected{"source \"" + s.source + "\""};
  if (!python && !named && s.found_by != "the loader path (LD_LIBRARY_PATH)" &&
      !(s.found_by.empty() && !s.available)) {
    return Unexpected{"found_by \"" + s.found_by + "\""};
  }
  if (s.available && (s.libtorch_version.empty() || s.location.empty())) {
    return Unexpected{"a stack without its version or location"};
  }
  if (!s.available && s.error.empty())
    return Unexpected{"a stack not available, without the reason"};
  if (s.cuda_built && !s.cuda_version) return Unexpected{"a CUDA build without its CUDA version"};
  if (!s.library.empty() || !s.abi_version.empty() || !s.release_note.empty() ||
      !s.load_error.empty() || s.cpu_threads != 0) {
    return Unexpected{"what only a loaded library can say"};
  }
  if (s.read_failure != ErrorKind::none) return Unexpected{"a failure of its own reading"};
  for (const auto* list : {&s.arch_list, &s.arch_extras}) {
    for (const std::string& t : *list) {
      if (!is_arch_target(t)) return Unexpected{"arch target \"" + t + "\""};
    }
  }
  for (const std::string& r : s.refused) {
    if (r.empty() || r.back() != ')') return Unexpected{"refused \"" + r + "\""};
  }
  if (!s.read_ms || !std::isfinite(*s.read_ms) || *s.read_ms < 0.0 || *s.read_ms > elapsed_ms) {
    return Unexpected{"read_ms " +
                      (s.read_ms ? fmt::format("{}", *s.read_ms) : std::string("missing"))};
  }
  return {};
}

// The child's one line, checked: an answer, or what makes it none.
Expected<Answer> parse_answer(const std::string& out, bool may_ask, double elapsed_ms) {
  if (out.empty() || out.back() != '\n' || out.find('\n') != out.size() - 1) {
    return Unexpected{"not one line"};
  }
  json_fields::JsonDocument doc;
  json_fields::ReaderLine line;
  // One member: "ask" or "stack".
  const bool one = doc.parse(out) && doc.root().is_object() && doc.root().size() == 1;
  try {
    if (one) json_fields::decode(doc.root(), line, "", kLineLimits);
  } catch (const json_fields::FieldError& e) {
    return Unexpected{std::string("malformed stack description: ") + e.what()};
  }
  Answer a;
  if (line.ask && may_ask) {
    if (python_may_be_asked(*line.ask)) a.ask = *line.ask;
  } else if (one && !line.ask && !line.stack && doc.root().find("stack")) {
    return a;  // {"stack": null}: none found
  } else if (line.stack) {
    if (Expected<void> accepted = possible(*line.stack, elapsed_ms); !accepted) {
      return Unexpected{accepted.error()};
    }
    a.stack = *line.stack;
  }
  if (!a.ask && !a.stack) return Unexpected{"not an answer: " + printable(out, 120)};
  return a;
}

// One reading: the child started with `args`, killed at `deadline`.
Answer read_once(const std::string& self, const std::vector<std::string>& args,
                 Clock::time_point deadline, double timeout_s, Clock::time_point start) {
  std::vector<std::string> argv = {self, std::string(kImageReaderFlag)};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto left =
      std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
               std::chrono::milliseconds(0));
  const ProcessOutput out = run_process(
      argv, environment_with({std::string(kParentVariable) + "=" + std::to_string(::getpid())}), "",
      left, kMaxAnswer, kReapLimit);
  Answer a;
  const std::vector<std::string> paths = split(trim(out.err), '\n');
  const std::string at = paths.empty() || paths.back().empty() ? "" : paths.back();
  if (out.timed_out) {
    a.failure = failed_reading(
        ErrorKind::timed_out,
        fmt::format("the image's PyTorch files were not read within the run's time ({:g} s, "
                    "--timeout){}: a file system that does not answer (a hung network mount?){}",
                    timeout_s, at.empty() ? "" : ", stuck at " + at,
                    out.start_error.empty() ? "" : "; " + out.start_error),
        start);
  } else if (out.interrupted) {
    a.failure = failed_reading(ErrorKind::not_run,
                               fmt::format("the image's PyTorch files were being read when the "
                                           "run was interrupted by {}",
                                           signal_name(interrupt_signal())),
                               start);
  } else if (!out.start_error.empty() || out.overflowed || out.exit_code != 0) {
    const std::string why = !out.start_error.empty() ? out.start_error
                            : out.overflowed         ? "it wrote more than 4 MiB"
                            : out.term_signal != 0
                                ? "it crashed (" + signal_name(out.term_signal) + ")"
                                : fmt::format("it exited with code {}", out.exit_code);
    a.failure = failed_reading(ErrorKind::crashed,
                               "the image's PyTorch files could not be read: the reader " +
                                   std::string(out.start_error.empty() ? "" : "process ") + why,
                               start);
  } else {
    Expected<Answer> parsed = parse_answer(out.out, args.empty(), ms_since(start));
    if (parsed) return std::move(*parsed);
    a.failure = failed_reading(ErrorKind::crashed,
                               "the image's PyTorch reader answered what cannot be (" +
                                   printable(parsed.error(), 160) + ")",
                               start);
  }
  return a;
}

}  // namespace

std::optional<StackInfo> read_image_torch(const std::string& self_exe, Clock::time_point deadline,
                                          double timeout_s) {
  const auto start = Clock::now();
  Answer a = read_once(self_exe, {}, deadline, timeout_s, start);
  if (a.ask) {
    // The search needs the interpreter's own prefixes: asked here, within the run's time, and
    // given to a second reading (the child starts no process of its own).
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    std::vector<std::string> args = {*a.ask};
    if (left.count() > 0 && !interrupt_requested()) {
      const auto prefixes =
          ask_python_prefixes(*a.ask, std::min(left, std::chrono::milliseconds(2000)));
      for (const std::string& p : prefixes.value_or(std::vector<std::string>{})) {
        if (starts_with(p, "/") && args.size() < 5) args.push_back(p);
      }
    }
    // The query's limit is whole milliseconds below the time left: what remains after it is no
    // time for a second reading, and it was the python3 that used the run's time.
    if (Clock::now() + std::chrono::milliseconds(20) >= deadline) {
      return failed_reading(
          ErrorKind::timed_out,
          fmt::format("the image's PyTorch files were not read within the run's time ({:g} s, "
                      "--timeout): {} had not said where its packages are",
                      timeout_s, *a.ask),
          start);
    }
    a = read_once(self_exe, args, deadline, timeout_s, start);
  }
  if (a.failure) return a.failure;
  if (a.stack) a.stack->read_ms = ms_since(start);  // what the reading cost the run
  return a.stack;
}

}  // namespace precision_probe
