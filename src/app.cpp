#include "precision_probe/app.hpp"

#include <iostream>

#include <fmt/format.h>
#include <sstream>

#include "precision_probe/atomic_file.hpp"
#include "precision_probe/cli.hpp"
#include "precision_probe/exit_codes.hpp"
#include "precision_probe/printers.hpp"
#include "precision_probe/probe.hpp"
#include "precision_probe/process.hpp"
#include "precision_probe/report_json.hpp"
#include "precision_probe/trace.hpp"

namespace precision_probe {

namespace {

constexpr const char* kErrorPrefix = "precision-probe: error: ";

bool use_color(const Options& o, const System& system) {
  if (o.color == ColorMode::never || !o.output.empty() || o.format != Format::text) return false;
  if (!system.getenv("NO_COLOR").value_or("").empty()) return false;
  if (system.getenv("TERM").value_or("") == "dumb") return false;
  return system.stdout_is_terminal();
}

int fail_usage(const std::string& message, bool json, const System& system, std::ostream& out,
               std::ostream& err) {
  err << kErrorPrefix << message << '\n';
  if (json) out << report_to_json(usage_error_report(message, system)) << '\n';
  return exit_code::kUsage;
}

}  // namespace

int run_app(int argc, const char* const* argv, const AppDeps& deps, std::ostream& out,
            std::ostream& err) {
  const CommandLine cl = parse_command_line(argc, argv);
  switch (cl.action) {
    case CommandLine::Action::help: out << cl.text; return exit_code::kOk;
    case CommandLine::Action::version: out << cl.text << '\n'; return exit_code::kOk;
    case CommandLine::Action::usage_error:
      return fail_usage(cl.text, cl.json_requested, deps.system, out, err);
    case CommandLine::Action::run: break;
  }
  const Options& o = cl.options;
  const bool json = o.format == Format::json;
  if (!o.output.empty()) {
    if (const std::string problem = check_writable(o.output); !problem.empty()) {
      return fail_usage("-o: cannot write " + o.output + ": " + problem, json, deps.system, out,
                        err);
    }
  }
  for (const auto& [format, path] : o.extra_outputs) {
    if (const std::string problem = check_writable(path); !problem.empty()) {
      return fail_usage(fmt::format("--{}: cannot write {}: {}", to_string(format), path, problem),
                        json, deps.system, out, err);
    }
  }
  try {
    auto driver = deps.make_driver();
    auto engine = deps.make_engine();
    const ProbeDeps probe_deps{deps.system, *driver, *engine};
    const Report report =
        o.command == Command::arch ? run_arch(o, probe_deps) : run_probe(o, probe_deps);
    if (report.error) return fail_usage(report.error->message, json, deps.system, out, err);

    std::ostringstream rendered;
    make_printer(o.format, PrintStyle{use_color(o, deps.system)})->print(report, rendered);
    // Every file of this run is replaced together, or none is.
    std::vector<std::pair<std::string, std::string>> files;
    if (!o.output.empty()) files.emplace_back(o.output, rendered.str());
    for (const auto& [format, path] : o.extra_outputs) {
      std::ostringstream extra;
      make_printer(format, PrintStyle{false})->print(report, extra);
      files.emplace_back(path, extra.str());
    }
    trace("report printed");
    if (const std::string problem = write_files_atomically(files); !problem.empty()) {
      err << kErrorPrefix << "cannot write the report: " << problem << '\n';
      return exit_code::kUsage;
    }
    if (o.output.empty() && !o.quiet) out << rendered.str() << std::flush;
    if (report.exit_code != exit_code::kOk && (o.quiet || json || !o.output.empty())) {
      err << "precision-probe: exit " << report.exit_code << ": " << report.exit_reason << '\n';
    }
    return report.exit_code;
  } catch (const std::exception& e) {
    // Unexpected: one line, and still a JSON document when JSON was asked for.
    const std::string message = std::string("internal error: ") + e.what();
    err << kErrorPrefix << message << '\n';
    if (json) {
      Report report = usage_error_report(message, deps.system);
      report.exit_code = exit_code::kCheckFailed;
      out << report_to_json(report) << '\n';
    }
    return exit_code::kCheckFailed;
  }
}

int main_entry(int argc, char** argv) {
  install_interrupt_handlers();
  const auto system = make_real_system();
  const std::string self = self_executable_path();
  const AppDeps deps{*system, [&system] { return make_system_driver(*system); },
                     [&system, &self] { return make_process_engine(*system, self); }};
  return run_app(argc, argv, deps, std::cout, std::cerr);
}

}  // namespace precision_probe
