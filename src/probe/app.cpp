#include "probe/app.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <sstream>

#include <fmt/format.h>

#include "probe/cli/cli.hpp"
#include "probe/delivery.hpp"
#include "probe/driver/driver_agent.hpp"
#include "probe/facts/image_reader.hpp"
#include "probe/facts/machine.hpp"
#include "probe/fleet/summarize_command.hpp"
#include "probe/verdicts/exit_codes.hpp"
#include "probe/outputs/printers.hpp"
#include "probe/outputs/termination_log.hpp"
#include "probe/run/probe.hpp"
#include "process/process.hpp"
#include "precision_probe/report_json.hpp"
#include "strings/strings.hpp"
#include "trace/trace.hpp"

namespace precision_probe {

namespace {

// Where the reports of a run go, in order: the main report (stdout, or -o FILE) and the extras.
struct Targets {
  std::vector<OutputRequest> requests;
  std::vector<Format> formats;
  bool main_on_stdout = false;  // request 0 is the main report on stdout
};

Targets plan_targets(const Options& o) {
  Targets t;
  if (!o.output.empty()) {
    t.requests.push_back({o.output, o.output_flag});
    t.formats.push_back(o.format);
  } else if (!o.quiet) {
    t.main_on_stdout = true;
    t.requests.push_back({"-", "the report on stdout"});
    t.formats.push_back(o.format);
  }
  for (const ExtraOutput& e : o.extra_outputs) {
    t.requests.push_back({e.path, e.flag});
    t.formats.push_back(e.format);
  }
  return t;
}

PrintStyle main_style(const Options& o, const Targets& t, const System& system) {
  PrintStyle style;
  style.label_ttl_s = o.nfd_ttl_s;
  const bool terminal = t.main_on_stdout && system.stdout_is_terminal();
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

// The probe's error document: a report that holds the error and nothing else.
std::string probe_error_document(FailureKind kind, int code, const std::string& message,
                                 const System& system) {
  Report report = usage_error_report(message, system);
  report.error->kind = kind;
  report.exit_code = code;
  return report_to_json(report) + "\n";
}

// A run ended by a signal proved nothing new of the node: the metrics and labels an earlier run
// left stand (a file that does not exist yet is written, with the honest statuses).
void keep_node_files(const Report& report, const Targets& t, PreparedOutputs& outputs,
                     const Console& console) {
  if (report.run.interrupted.empty()) return;
  for (std::size_t i = 0; i < t.requests.size(); ++i) {
    if (!node_facing(t.formats[i]) || !outputs.holds_a_file(i)) continue;
    outputs.leave_as_is(i);
    console.say(fmt::format("{} {}: left as the last run wrote it (this run was interrupted by {})",
                            t.requests[i].flag, printable_path(t.requests[i].path),
                            report.run.interrupted));
  }
}

// The probe and `arch`: outputs checked before the run, the report delivered to all of them; the
// verdict the run ends with.
Verdict run_and_deliver(const Options& o, const AppDeps& deps, const Console& console,
                        const Targets& t) {
  auto usage = [&](const std::string& message) {
    return Verdict{console.fail(exit_code::kUsage, message,
                                probe_error_document(FailureKind::usage, exit_code::kUsage, message,
                                                     deps.system)),
                   message};
  };
  Expected<std::unique_ptr<PreparedOutputs>> prepared =
      prepare_outputs(t.requests, deps.streams, o.quiet ? o.quiet_flag : "");
  if (!prepared) {
    // Stdout that is one of the files named (`--json r.json >> r.json`) is left as it was.
    if (stdout_is_named(t.requests, deps.streams)) {
      return {console.fail(exit_code::kUsage, prepared.error(), ""), prepared.error()};
    }
    return usage(prepared.error());
  }
  // The node's name, which every output names the node by, is checked before anything runs.
  if (const std::string bad = node_name_problem(deps.system); !bad.empty()) return usage(bad);

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
  if (report.error) return usage(report.error->message);

  Delivery delivery;
  // The labels' expiry counts from now, when they are delivered, not from the run's start.
  const std::int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
  for (std::size_t i = 0; i < t.requests.size(); ++i) {
    const bool main = i == 0 && t.main_on_stdout;
    PrintStyle style = main ? main_style(o, t, deps.system) : PrintStyle{};
    style.label_ttl_s = o.nfd_ttl_s;
    style.delivered_at_s = now_s;
    delivery.contents.push_back(render(report, t.formats[i], style));
  }
  keep_node_files(report, t, **prepared, console);
  trace("report printed");
  // Delivery within what is left of the run's time (a few seconds at least).
  delivery.deadline = clock.delivery_deadline();
  delivery.what = "the report";
  delivery.stdout_shows_verdict = t.main_on_stdout && o.format == Format::text;
  const Delivered d =
      deliver(**prepared, delivery, {report.exit_code, report.exit_reason}, console);
  if (d.problem.empty() || d.stdout_failed) return d.verdict;
  // Stdout, where it still works, carries the report with the verdict of its delivery.
  report.error = RunFailure{FailureKind::output, d.problem};
  report.exit_code = d.verdict.code;
  report.exit_reason = d.verdict.reason;
  if (t.main_on_stdout) {
    console.print_after_failure(render(report, o.format, main_style(o, t, deps.system)));
  } else if (o.format == Format::json) {
    console.print_after_failure(report_to_json(report) + "\n");
  }
  return d.verdict;
}

// The probe and `arch`: the termination log checked first (a usage error found later is written
// there too), then the run; every way it ends is written there.
int run_probe_command(const Options& o, const AppDeps& deps, const Console& console) {
  const Targets t = plan_targets(o);
  std::string note;
  Expected<TerminationLog> log = TerminationLog::prepare(
      choose_termination_log(o.termination_log, deps.system), t.requests, deps.streams, note);
  if (!note.empty()) console.say("precision-probe: note: " + note);
  if (!log) {
    return console.fail(
        exit_code::kUsage, log.error(),
        probe_error_document(FailureKind::usage, exit_code::kUsage, log.error(), deps.system));
  }
  Verdict verdict;
  try {
    verdict = run_and_deliver(o, deps, console, t);
  } catch (const std::exception& e) {
    (void)log->write(exit_code::kCheckFailed, std::string("internal error: ") + e.what(),
                     std::chrono::steady_clock::now() + std::chrono::seconds(5));
    throw;
  }
  const TerminationLog::Settled settled = log->finish(
      verdict.code, verdict.reason, std::chrono::steady_clock::now() + std::chrono::seconds(5));
  if (!settled.said.empty()) console.say(settled.said);
  return settled.code;
}

// `summarize`: its output checked before the reports are read, the summary delivered.
int run_summarize_command(const SummarizeOptions& s, const AppDeps& deps, const Console& console) {
  std::vector<OutputRequest> requests;
  if (!s.output.empty()) {
    requests.push_back({s.output, s.output_flag});
  } else if (!s.quiet) {
    requests.push_back({"-", "the summary on stdout"});
  }
  Expected<std::unique_ptr<PreparedOutputs>> prepared =
      prepare_outputs(requests, deps.streams, s.quiet ? s.quiet_flag : "");
  if (!prepared) {
    return console.fail(exit_code::kUsage, prepared.error(),
                        summary_error_document("usage", exit_code::kUsage, prepared.error()));
  }
  Summarized made = summarize_reports(s, deps.streams);
  if (made.failure) {
    const SummaryFailure& f = *made.failure;
    return console.fail(f.code, f.message,
                        f.stdout_is_a_report ? ""  // the report is left as it was
                                             : summary_error_document(f.kind, f.code, f.message));
  }
  Delivery delivery;
  delivery.contents = {std::move(made.printed)};
  delivery.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  delivery.what = "the summary";
  delivery.stdout_shows_verdict = !requests.empty() && s.output.empty() && s.format == Format::text;
  const Delivered d =
      deliver(**prepared, delivery, {made.summary.exit_code, made.summary.exit_reason}, console);
  // A summary that went nowhere: where JSON was asked for, stdout says so.
  if (!d.problem.empty() && !d.stdout_failed && console.json()) {
    const bool interrupted = d.verdict.code == exit_code::kTimedOut;
    console.print_after_failure(summary_error_document(interrupted ? "interrupted" : "output",
                                                       d.verdict.code, d.verdict.reason));
  }
  return d.verdict.code;
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
  const CommandLine cl = parse_command_line(argc, argv);
  const Console console(deps.streams, cl.json_requested, cl.quiet);
  const bool summarize = cl.program == CommandLine::Program::summarize;
  // The command's own error document: the summary's, or a report that holds only the error.
  auto document = [&](FailureKind kind, int code, const std::string& message) {
    return summarize ? summary_error_document(to_string(kind), code, message)
                     : probe_error_document(kind, code, message, deps.system);
  };
  switch (cl.action) {
    case CommandLine::Action::help: return console.print(cl.text);
    case CommandLine::Action::version: return console.print(cl.text + "\n");
    case CommandLine::Action::usage_error:
      return console.fail(exit_code::kUsage, cl.text,
                          document(FailureKind::usage, exit_code::kUsage, cl.text));
    case CommandLine::Action::run: break;
  }
  try {
    return summarize ? run_summarize_command(cl.summarize, deps, console)
                     : run_probe_command(cl.options, deps, console);
  } catch (const std::exception& e) {
    // Unexpected (memory ran out, say): one line, and still a JSON document where JSON was asked
    // for; nothing of the result is delivered.
    const std::string message = std::string("internal error: ") + e.what();
    return console.fail(exit_code::kCheckFailed, message,
                        document(FailureKind::internal, exit_code::kCheckFailed, message));
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
  // A driver query is bounded as one check is, and by the run; a limit shorter than the driver may
  // take to start the machine's GPUs (their device nodes, one at least) proves no hang.
  auto make_driver = [&system, &self](const Options& o) {
    const double seconds = std::min(o.timeout_s, o.check_timeout_s);
    const std::vector<std::string> nodes = system->list_dir("/dev", "nvidia");
    const auto gpus =
        std::max<std::ptrdiff_t>(1, std::count_if(nodes.begin(), nodes.end(), is_gpu_device_node));
    return make_contained_driver(
        *system, self,
        {std::chrono::milliseconds(static_cast<long long>(seconds * 1000)),
         o.timeout_s < o.check_timeout_s, kDriverStartPerGpu * static_cast<long long>(gpus)});
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
  const int code = run_app(argc, argv, deps);
  // The last error a file system can report comes at close (NFS, a full quota).
  if (!streams.out_closed && ::close(STDOUT_FILENO) != 0 && errno != EINTR && errno != EBADF) {
    Console(streams, false, false)
        .say("precision-probe: error: stdout could not be closed: " + error_string(errno));
    return exit_code::most_severe(code, exit_code::kOutputFailed);
  }
  return code;
}

}  // namespace precision_probe
