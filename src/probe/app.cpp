#include "probe/app.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sstream>

#include <fmt/format.h>

#include "probe/cli/cli.hpp"
#include "probe/driver/driver_agent.hpp"
#include "probe/facts/image_reader.hpp"
#include "probe/fleet/summarize_command.hpp"
#include "probe/verdicts/exit_codes.hpp"
#include "probe/outputs/printers.hpp"
#include "probe/run/probe.hpp"
#include "probe/platform/process.hpp"
#include "precision_probe/report_json.hpp"
#include "common/strings.hpp"
#include "common/trace.hpp"

namespace precision_probe {

namespace {

const std::string kErrorPrefix = "precision-probe: error: ";

// One line on stderr. Nothing can be done when stderr itself fails.
void say(const AppDeps& deps, const std::string& line) {
  (void)write_all(deps.streams.err_fd, terminal_safe(line) + "\n");
}

// Where the reports of a run go, in order: the main report (stdout, or -o FILE) and the extras.
struct Delivery {
  std::vector<OutputRequest> requests;
  std::vector<Format> formats;
  bool main_on_stdout = false;  // request 0 is the main report on stdout
};

Delivery plan_delivery(const Options& o) {
  Delivery d;
  if (!o.output.empty()) {
    d.requests.push_back({o.output, o.output_flag});
    d.formats.push_back(o.format);
  } else if (!o.quiet) {
    d.main_on_stdout = true;
    d.requests.push_back({"-", "the report on stdout"});
    d.formats.push_back(o.format);
  }
  for (const ExtraOutput& e : o.extra_outputs) {
    d.requests.push_back({e.path, e.flag});
    d.formats.push_back(e.format);
  }
  return d;
}

PrintStyle main_style(const Options& o, const Delivery& d, const System& system) {
  PrintStyle style;
  style.label_ttl_s = o.nfd_ttl_s;
  const bool terminal = d.main_on_stdout && system.stdout_is_terminal();
  if (terminal) style.width = std::clamp(system.terminal_columns(), 40, 400);
  style.color = terminal && o.format == Format::text && o.color != ColorMode::never &&
                system.getenv("NO_COLOR").value_or("").empty() &&
                system.getenv("TERM").value_or("") != "dumb";
  return style;
}

std::string render(const Report& report, Format format, PrintStyle style) {
  std::ostringstream out;
  make_printer(format, style)->print(report, out);
  return out.str();
}

int fail_usage(const std::string& message, const CommandLine& cl, const AppDeps& deps) {
  say(deps, kErrorPrefix + message);
  if (cl.json_requested && !cl.quiet && !deps.streams.out_closed) {
    (void)write_all(deps.streams.out_fd,
                    report_to_json(usage_error_report(message, deps.system)) + "\n");
  }
  return exit_code::kUsage;
}

// A delivery that failed: the report says so (exit 6 unless it already says a failure of its
// own), stderr says so, and stdout, where it still works, carries the report with that verdict.
void delivery_failed(Report& report, const std::string& problem, bool stdout_failed,
                     const Options& o, const Delivery& d, const AppDeps& deps) {
  report.error = RunFailure{FailureKind::output, problem};
  // One line on stderr: what failed, and the verdict where it stands (3, 4, 5).
  std::string line = kErrorPrefix + "the report could not be delivered: " + problem;
  if (report.exit_code == exit_code::kOk || report.exit_code == exit_code::kRequirementNotMet) {
    report.exit_code = exit_code::kOutputFailed;
    report.exit_reason = "the report could not be delivered: " + problem;
  } else {
    line += fmt::format(" (exit {}: {})", report.exit_code, report.exit_reason);
  }
  say(deps, line);
  if (stdout_failed || o.quiet || deps.streams.out_closed) return;
  if (d.main_on_stdout) {
    (void)write_all(deps.streams.out_fd, render(report, o.format, main_style(o, d, deps.system)));
  } else if (o.format == Format::json) {
    (void)write_all(deps.streams.out_fd, report_to_json(report) + "\n");
  }
}

int run_checked(const CommandLine& cl, const AppDeps& deps) {
  const Options& o = cl.options;
  const Delivery d = plan_delivery(o);
  PreparedOutputsResult prepared =
      prepare_outputs(d.requests, deps.streams, o.quiet ? o.quiet_flag : "");
  if (!prepared.error.empty()) return fail_usage(prepared.error, cl, deps);

  // The run's one clock: the image's reading, the workers and the delivery end by it.
  const RunClock clock = RunClock::start(o);
  auto driver = deps.make_driver(o);
  auto engine = deps.make_engine();
  ProbeDeps probe_deps{deps.system, *driver, *engine};
  if (deps.find_torch) {
    probe_deps.find_torch = [&deps, &o, &clock](const System& s) {
      return deps.find_torch(o, s, clock.timeout_at());
    };
  }
  Report report =
      o.command == Command::arch ? run_arch(o, probe_deps, clock) : run_probe(o, probe_deps, clock);
  if (report.error) return fail_usage(report.error->message, cl, deps);

  std::vector<std::string> contents;
  for (std::size_t i = 0; i < d.requests.size(); ++i) {
    const bool main = i == 0 && d.main_on_stdout;
    PrintStyle file_style;
    file_style.label_ttl_s = o.nfd_ttl_s;
    contents.push_back(
        render(report, d.formats[i], main ? main_style(o, d, deps.system) : file_style));
  }
  trace("report printed");
  bool stdout_failed = false;
  // Delivery within what is left of the run's time (a few seconds at least).
  const auto deadline = clock.delivery_deadline();
  // A signal that comes while a reader does not read ends the wait: exit 5, as an interrupt.
  const bool interrupted_before = interrupt_requested();
  const auto interrupted_now = [interrupted_before] {
    return !interrupted_before && interrupt_requested();
  };
  if (const std::string problem =
          prepared.outputs->deliver(contents, deadline, stdout_failed, interrupted_now);
      !problem.empty()) {
    if (interrupted_now()) {
      report.exit_code = exit_code::kTimedOut;
      report.exit_reason = fmt::format("interrupted by {} while the report was being delivered",
                                       signal_name(interrupt_signal()));
    }
    delivery_failed(report, problem, stdout_failed, o, d, deps);
    return report.exit_code;
  }
  // Whenever stdout does not carry a text report that ends with the verdict, stderr says it.
  if (report.exit_code != exit_code::kOk && (!d.main_on_stdout || o.format != Format::text)) {
    say(deps, fmt::format("precision-probe: exit {}: {}", report.exit_code, report.exit_reason));
  }
  return report.exit_code;
}

// Help and version: on stdout unless -q.
int print_text(const CommandLine& cl, const std::string& text, const AppDeps& deps) {
  if (cl.quiet) return exit_code::kOk;
  if (deps.streams.out_closed) {
    say(deps, kErrorPrefix + "stdout is closed: nowhere to print the text asked for");
    return exit_code::kUsage;
  }
  if (const std::string problem = write_all(deps.streams.out_fd, text); !problem.empty()) {
    say(deps, kErrorPrefix + "cannot write to stdout: " + problem);
    return exit_code::kOutputFailed;
  }
  return exit_code::kOk;
}

// The descriptors 0-2 as the probe found them: a closed one is held open on /dev/null, so that
// no file the probe opens later takes its number (and receives a report meant for stdout).
StandardStreams claim_standard_streams() {
  StandardStreams streams;
  // The descriptors the probe was given: /dev/fd/N may name only these.
  streams.inherited.clear();
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(dir);
    while (const dirent* entry = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe): one thread
      const auto fd = parse_int(entry->d_name);
      if (fd && *fd != own) streams.inherited.push_back(static_cast<int>(*fd));
    }
    ::closedir(dir);
  }
  for (int fd = 0; fd <= 2; ++fd) {
    if (std::find(streams.inherited.begin(), streams.inherited.end(), fd) ==
        streams.inherited.end()) {
      streams.inherited.push_back(fd);  // held open below, if it was closed
    }
  }
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    if (fd == STDOUT_FILENO) streams.out_closed = true;
    const int opened = ::open("/dev/null", O_RDWR);
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
  return streams;
}

}  // namespace

int run_app(int argc, const char* const* argv, const AppDeps& deps) {
  if (argc >= 2 && argv[1] != nullptr && std::string_view(argv[1]) == "summarize") {
    try {
      return run_summarize(argc, argv, deps.streams);
    } catch (const std::exception& e) {
      say(deps, kErrorPrefix + "internal error: " + e.what());
      return exit_code::kCheckFailed;
    }
  }
  const CommandLine cl = parse_command_line(argc, argv);
  switch (cl.action) {
    case CommandLine::Action::help: return print_text(cl, cl.text, deps);
    case CommandLine::Action::version: return print_text(cl, cl.text + "\n", deps);
    case CommandLine::Action::usage_error: return fail_usage(cl.text, cl, deps);
    case CommandLine::Action::run: break;
  }
  try {
    return run_checked(cl, deps);
  } catch (const std::exception& e) {
    // Unexpected: one line, and still a JSON document when JSON was asked for.
    const std::string message = std::string("internal error: ") + e.what();
    say(deps, kErrorPrefix + message);
    if (cl.json_requested && !cl.quiet) {
      Report report = usage_error_report(message, deps.system);
      report.error->kind = FailureKind::internal;
      report.exit_code = exit_code::kCheckFailed;
      (void)write_all(deps.streams.out_fd, report_to_json(report) + "\n");
    }
    return exit_code::kCheckFailed;
  }
}

int main_entry(int argc, char** argv) {
  const StandardStreams streams = claim_standard_streams();
  if (argc == 3 && std::string_view(argv[1]) == kDriverAgentFlag) return run_driver_agent(argv[2]);
  if (argc >= 2 && std::string_view(argv[1]) == kImageReaderFlag) {
    return run_image_reader(argc - 2, argv + 2);
  }
  install_signal_handlers();
  const auto system = make_real_system();
  const std::string self = self_executable_path();
  // A driver query is bounded as one check is, and by the run.
  auto make_driver = [&system, &self](const Options& o) {
    const double seconds = std::min(o.timeout_s, o.check_timeout_s);
    return make_contained_driver(*system, self,
                                 {std::chrono::milliseconds(static_cast<long long>(seconds * 1000)),
                                  o.timeout_s < o.check_timeout_s});
  };
  // The image's files are read in a child killed at the run's deadline (a hung network mount).
  auto find_torch =
      [&self](const Options& o, const System& sys,
              std::chrono::steady_clock::time_point deadline) -> std::optional<StackInfo> {
    if (sys.getenv("PRECISION_PROBE_TORCH") == std::optional<std::string>("none")) {
      return std::nullopt;  // nothing to read: no child
    }
    return read_image_torch(self, deadline, o.timeout_s);
  };
  const AppDeps deps{*system, make_driver,
                     [&system, &self] { return make_process_engine(*system, self); }, streams,
                     find_torch};
  int code = run_app(argc, argv, deps);
  // The last error a file system can report comes at close (NFS, a full quota).
  if (!streams.out_closed && ::close(STDOUT_FILENO) != 0 && errno != EINTR && errno != EBADF) {
    say(deps, kErrorPrefix + "stdout could not be closed: " + error_string(errno));
    if (code == exit_code::kOk || code == exit_code::kRequirementNotMet) {
      code = exit_code::kOutputFailed;
    }
  }
  return code;
}

}  // namespace precision_probe
