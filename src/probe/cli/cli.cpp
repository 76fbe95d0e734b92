// The command line (cli.hpp): the option table of the probe, `arch` and `summarize`, bound by
// CLI11 straight into Options and SummarizeOptions. CLI11 checks every value (the table's checks),
// what options exclude and need, what is unknown, given twice or missing; what it refuses is said
// here in the user's words, with what the pre-pass read of how they typed it (typed.cpp). The one
// file that compiles CLI11.

#include "probe/cli/cli.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "arch/arch.hpp"
#include "version/build_info.hpp"
#include "strings/strings.hpp"
#include "probe/cli/command_line.hpp"

namespace precision_probe {

// A list is the union of its entries: "gpu,cpu" is all, "cpu,0" GPU 0 and the CPU.
Expected<DeviceSelection> parse_device_selection(std::string_view text) {
  DeviceSelection s;
  const std::string value = to_lower(trim(text));
  if (value.empty())
    return Unexpected{"empty value (use all, gpu, cpu or GPU indices such as 0,1)"};
  bool every_gpu = false;
  s.all_gpus = false;
  for (const std::string& raw : split(value, ',')) {
    const std::string entry = trim(raw);
    if (entry == "all" || entry == "gpu" || entry == "gpus" || entry == "cuda") {
      every_gpu = true;
      s.cpu = s.cpu || entry == "all";
      continue;
    }
    if (entry == "cpu") {
      s.cpu = true;
      continue;
    }
    // Digits only: no sign, no spaces ("-0" is no device).
    const bool digits =
        !entry.empty() && entry.size() <= 4 &&
        std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; });
    const auto index = digits ? parse_int(entry) : std::nullopt;
    if (!index || *index > 4095) {
      return Unexpected{
          fmt::format("'{}' is not a device (use all, gpu, cpu or GPU indices such as 0,1)",
                      printable(entry.empty() ? "(empty)" : entry))};
    }
    const int i = static_cast<int>(*index);
    if (std::find(s.gpu_indices.begin(), s.gpu_indices.end(), i) == s.gpu_indices.end()) {
      s.gpu_indices.push_back(i);
    }
  }
  if (every_gpu) {
    s.all_gpus = true;
    s.gpu_indices.clear();
  }
  return s;
}

std::string version_text() {
  return fmt::format(
      "precision-probe {} (links no LibTorch: its engine loads the image's own through the stable "
      "C ABI, {} or later, tested to {})",
      build_info::kVersion, kEngineFloor.to_string(), kNewestTestedLibTorch.to_string());
}

namespace cli {

namespace {

// A value or a combination refused by the option table: the whole message, one line. Thrown from
// the table's checks through CLI11's parse, caught in parse_command_line.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The command line: the probe's app and its two subcommands.
struct Apps {
  CLI::App& probe;
  CLI::App& arch;
  CLI::App& summarize;
};

// An option of `app` as the user typed it ("-o"), else its long name.
std::string typed_name(const AsTyped& typed, const CLI::App& app, const CLI::Option& option) {
  return typed.name(app.get_name(), option.get_name());
}

// --- The checks of values ------------------------------------------------------------------------
// Each accepts a good value, or says what is wrong with it (said after the option as typed); a
// check may rewrite the value into the form CLI11 converts (a duration into seconds).
using Check = Expected<void> (*)(std::string& value);

// "12.5" or "30": a plain decimal number of seconds (no sign, exponent, hex or words).
std::optional<double> parse_seconds(const std::string& text) {
  const std::size_t dot = text.find('.');
  const std::string whole = text.substr(0, dot);
  const std::string fraction = dot == std::string::npos ? "" : text.substr(dot + 1);
  auto digits = [](const std::string& s) {
    return s.find_first_not_of("0123456789") == std::string::npos;
  };
  if ((whole.empty() && fraction.empty()) || !digits(whole) || !digits(fraction) ||
      text.size() > 20) {
    return std::nullopt;
  }
  return std::stod("0" + text);
}

std::optional<std::int64_t> parse_decimal(const std::string& text) {
  if (text.empty() || text.size() > 18 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return parse_int(text);
}

Expected<void> seconds_up_to(std::string& value, double most) {
  const auto seconds = parse_seconds(value);
  if (!seconds || *seconds <= 0.0 || *seconds > most) {
    return Unexpected{fmt::format("'{}' is not a number of seconds above 0 and up to {}",
                                  printable(value, 40), most)};
  }
  value = fmt::format("{}", *seconds);
  return {};
}

Expected<void> check_seconds(std::string& value) { return seconds_up_to(value, 86400.0); }

// --check-timeout: no check can finish in less than kLeastCheckSeconds (a worker's start alone).
Expected<void> check_check_seconds(std::string& value) {
  const std::string given = value;
  if (Expected<void> seconds = seconds_up_to(value, 86400.0); !seconds) return seconds;
  if (std::stod(value) >= kLeastCheckSeconds) return {};
  return Unexpected{fmt::format(
      "'{}' is shorter than any check can finish in: give {:g} s or more (a worker's start "
      "alone, loading LibTorch, takes about half a second)",
      printable(given, 40), kLeastCheckSeconds)};
}
Expected<void> check_soak_seconds(std::string& value) { return seconds_up_to(value, 604800.0); }

Expected<void> check_format(std::string& value) {
  if (parse_format(value)) return {};
  return Unexpected{fmt::format("'{}' is not a format (text, json, markdown, prometheus, nfd)",
                                printable(value, 40))};
}

Expected<void> check_summary_format(std::string& value) {
  const auto format = parse_format(value);
  if (format == Format::text || format == Format::json || format == Format::markdown) return {};
  return Unexpected{fmt::format("'{}' is not a format of summarize (text, json, markdown)",
                                printable(value, 40))};
}

Expected<void> check_output_as(std::string& value) {
  const std::size_t colon = value.find(':');
  if (colon != std::string::npos && colon + 1 < value.size() &&
      parse_format(value.substr(0, colon))) {
    return {};
  }
  return Unexpected{
      fmt::format("'{}' is not FORMAT:FILE (formats: text, json, markdown, prometheus, nfd)",
                  printable(value, 60))};
}

// --termination-log: a file, or none. Stdout carries the report.
Expected<void> check_termination_log(std::string& value) {
  if (value != "-") return {};
  return Unexpected{
      std::string("'-' is stdout, which carries the report: name a file (Kubernetes reads "
                  "/dev/termination-log), or none")};
}

// A check that the value parses; what it parses to is bound later.
template <class T>
Expected<void> parses(const Expected<T>& parsed) {
  if (!parsed) return Unexpected{parsed.error()};
  return {};
}

Expected<void> check_device(std::string& value) { return parses(parse_device_selection(value)); }
Expected<void> check_modes(std::string& value) { return parses(parse_mode_list(value)); }

Expected<void> check_soak_modes(std::string& value) {
  const Expected<std::vector<Mode>> modes = parse_mode_list(value);
  if (!modes) return Unexpected{modes.error()};
  for (Mode mode : *modes) {
    if (is_amp_mode(mode)) {
      return Unexpected{
          fmt::format("{} is a training mode; the soak runs matmul modes", mode_key(mode))};
    }
  }
  return {};
}

// Seeds stay exact in every JSON reader (below 2^53).
Expected<void> check_seed(std::string& value) {
  const auto seed = parse_decimal(value);
  if (seed && *seed <= (std::int64_t{1} << 53) - 1) return {};
  return Unexpected{
      fmt::format("'{}' is not a whole number from 0 to 9007199254740991", printable(value, 40))};
}

Expected<void> check_bench_size(std::string& value) {
  const auto size = parse_decimal(value);
  if (size && *size >= 16 && *size <= 32768 && *size % 16 == 0) return {};
  return Unexpected{
      fmt::format("'{}' is not a multiple of 16 from 16 to 32768", printable(value, 40))};
}

Expected<void> to_label_seconds(std::string& value) {
  const auto ttl = parse_duration(value);
  if (!ttl || *ttl < 60 || *ttl > std::int64_t{366} * 86400) {
    return Unexpected{fmt::format("'{}' is not a duration from 1m to 366d (such as 90m or 24h)",
                                  printable(value, 40))};
  }
  value = std::to_string(*ttl);
  return {};
}

Expected<void> to_age_seconds(std::string& value) {
  const auto age = parse_duration(value);
  if (!age || *age <= 0) {
    return Unexpected{
        fmt::format("'{}' is not a duration (such as 90m, 24h or 7d)", printable(value, 40))};
  }
  value = std::to_string(*age);
  return {};
}

// --- The table -----------------------------------------------------------------------------------

// Adds the rows of the option table to one CLI11 app: each option with its names, its value's
// name, where it applies (its group), its help, the check of its value, and where the value goes.
// An empty value is refused everywhere; a value option is given once unless it is repeatable.
class Table {
 public:
  Table(CLI::App& app, const AsTyped& typed) : app_(app), typed_(typed) {}

  // One value, converted by CLI11 into `target`.
  template <typename T>
  CLI::Option* value(const std::string& names, const char* value_name, const std::string& group,
                     const char* help, Check check, T& target) {
    return checked(app_.add_option(names, target, help), value_name, group, check);
  }
  // One value, handed to `bind`.
  CLI::Option* value_to(const std::string& names, const char* value_name, const std::string& group,
                        const char* help, Check check,
                        const std::function<void(const std::string&)>& bind) {
    return checked(app_.add_option_function<std::string>(names, bind, help), value_name, group,
                   check);
  }
  // One value each time it is given, repeatable: all of them handed to `bind`.
  CLI::Option* values_to(const std::string& names, const char* value_name, const std::string& group,
                         const char* help, Check check,
                         const std::function<void(const std::vector<std::string>&)>& bind) {
    CLI::Option* option = app_.add_option_function<std::vector<std::string>>(names, bind, help);
    option->expected(1)->allow_extra_args(false)->multi_option_policy(
        CLI::MultiOptionPolicy::TakeAll);
    return checked(option, value_name, group, check);
  }
  CLI::Option* flag(const std::string& names, const std::string& group, const char* help,
                    bool& target) {
    return app_.add_flag(names, target, help)->group(group);
  }
  CLI::Option* flag_to(const std::string& names, const std::string& group, const char* help,
                       std::function<void()> set) {
    return app_.add_flag_callback(names, std::move(set), help)->group(group);
  }

 private:
  CLI::Option* checked(CLI::Option* option, const char* value_name, const std::string& group,
                       Check check) {
    option->option_text(value_name)->group(group);
    const AsTyped& typed = typed_;
    const CLI::App& app = app_;
    option->transform(CLI::Validator(
        [&typed, &app, option, check](std::string& v) {
          const Expected<void> good = v.empty() ? Unexpected{"empty value"}
                                      : check   ? check(v)
                                                : Expected<void>();
          if (!good) throw UsageError(typed_name(typed, app, *option) + ": " + good.error());
          return std::string();  // CLI11's word for a good value
        },
        ""));
    return option;
  }

  CLI::App& app_;
  const AsTyped& typed_;
};

void add_report_options(Table& t, Options& o) {
  t.value_to("--format", "FORMAT", kAlsoArch,
             "The report on stdout: text (default), json, markdown, prometheus or nfd (node "
             "labels; not with arch)",
             check_format, [&o](const std::string& v) { o.format = *parse_format(v); });
  t.value_to("-o,--output", "FILE", kAlsoArch,
             "Write that report to FILE instead of stdout (- is stdout); a regular file is "
             "replaced atomically, a device or FIFO written through",
             nullptr, [&o](const std::string& v) { o.output = v == "-" ? "" : v; });
  auto extra = [&t, &o](const char* name, Format format, const std::string& group,
                        const char* help) {
    t.value_to(name, "FILE", group, help, nullptr, [&o, name, format](const std::string& v) {
      o.extra_outputs.push_back({format, v, name});
    });
  };
  extra("--json", Format::json, kAlsoArch, "Also write the JSON report to FILE");
  extra("--markdown", Format::markdown, kAlsoArch,
        "Also write the Markdown report to FILE (CI summaries)");
  extra("--prom", Format::prometheus, kAlsoArch,
        "Also write Prometheus metrics to FILE (node_exporter textfile collector)");
  extra("--text", Format::text, kAlsoArch, "Also write the text report to FILE");
  extra("--nfd", Format::nfd, kProbeOnly,
        "Also write node labels to FILE: a node-feature-discovery feature file (its features.d "
        "directory)");
  t.value("--nfd-ttl", "DURATION", kProbeOnly,
          "How long the node labels stand when the probe stops running: 90m, 24h (default 1h)",
          to_label_seconds, o.nfd_ttl_s);
  t.value_to("--termination-log", "FILE", kAlsoArch,
             "Write the exit code and its reason, one line, to FILE when the run ends (none: "
             "nowhere; default under Kubernetes: /dev/termination-log where it can be written)",
             check_termination_log, [&o](const std::string& v) { o.termination_log = v; });
  t.values_to("--output-as", "FORMAT:FILE", kAlsoArch,
              "Also write FORMAT to FILE (json:r.json, json:- for stdout); repeatable",
              check_output_as, [&o](const std::vector<std::string>& all) {
                for (const std::string& spec : all) {
                  const std::size_t colon = spec.find(':');
                  o.extra_outputs.push_back({*parse_format(spec.substr(0, colon)),
                                             spec.substr(colon + 1), "--output-as"});
                }
              });
}

void add_selection_options(Table& t, Options& o) {
  t.value_to("--device", "SEL", kProbeOnly,
             "Devices to check and gate: all, gpu (default: every visible GPU), cpu, or GPU "
             "indices such as 0,1 (may include cpu); the CPU is checked and reported in every "
             "run, gated only where selected",
             check_device, [&o](const std::string& v) { o.devices = *parse_device_selection(v); });
  t.values_to("--require", "MODES", kAlsoArch,
              "Exit 1 unless every selected device runs these natively (comma separated, "
              "repeatable; the modes are listed below)",
              check_modes, [&o](const std::vector<std::string>& all) {
                o.require = *parse_mode_list(join(all, ","));
              });
}

// The options that only mean something where kernels run (kKernels: --quick refuses each).
void add_kernel_options(Table& t, Options& o) {
  t.flag("--quick", kProbeOnly, "Driver facts and architecture verdicts only: no kernels run",
         o.quick);
  t.flag("--nccl", kKernels,
         "All-reduce in fp32, fp16 and bf16 across the selected GPUs through NCCL: exact results "
         "and bus bandwidth (one GPU: a one-rank all-reduce)",
         o.nccl);
  t.flag_to("--no-amp", kKernels,
            "Skip the mixed-precision training checks (amp_fp16, amp_bf16): matmul smoke tests "
            "only",
            [&o] { o.amp = false; });
  t.flag("--bench", kKernels,
         "Measure TFLOP/s per precision, the speed-up over fp32 and the share of the datasheet "
         "peak",
         o.bench);
  t.value_to("--bench-size", "N", kKernels,
             "GEMM size for --bench and --soak, M=N=K, a multiple of 16 (--bench: 8192 on GPUs, "
             "1024 on the CPU; --soak: 16384 on GPUs of 16 GiB or more, 8192 on smaller ones, 256 "
             "on the CPU)",
             check_bench_size, [&o](const std::string& v) { o.bench_size = parse_int(v); });
  CLI::Option* soak = t.value(
      "--soak", "SECONDS", kKernels,
      "Run each native matmul mode back to back for SECONDS on every selected device, each result "
      "compared bit for bit with the first (silent data corruption under load)",
      check_soak_seconds, o.soak_s);
  t.values_to("--soak-modes", "MODES", kKernels,
              "The modes --soak runs (comma separated; default: every matmul mode native on the "
              "device)",
              check_soak_modes,
              [&o](const std::vector<std::string>& all) {
                o.soak_modes = *parse_mode_list(join(all, ","));
              })
      ->needs(soak);
  t.value("--seed", "N", kKernels, "Seed of the random test inputs (default: a fresh one per run)",
          check_seed, o.seed);
}

void add_run_options(Table& t, Options& o, bool& version) {
  t.value("--timeout", "SECONDS", kAlsoArch, "Bound on the whole run, in seconds (default 60)",
          check_seconds, o.timeout_s);
  t.value("--check-timeout", "SECONDS", kProbeOnly,
          "Bound on any one check, in seconds (default 45, at least 1): a hung kernel is stopped",
          check_check_seconds, o.check_timeout_s);
  t.flag_to("--no-color", kAlsoArch, "No colour in the text report (NO_COLOR is honoured too)",
            [&o] { o.color = ColorMode::never; });
  t.flag("-q,--quiet", kAlsoArch, "Nothing on stdout; the exit code tells the result", o.quiet);
  t.flag("--version", kAlsoArch, "The version, and the LibTorch releases its engine loads",
         version);
}

// The probe's combinations that depend on values, refused naming both (after every value is read).
void check_probe_rules(const Apps& apps, const Options& o, const AsTyped& typed) {
  const bool labels = o.format == Format::nfd ||
                      std::any_of(o.extra_outputs.begin(), o.extra_outputs.end(),
                                  [](const ExtraOutput& e) { return e.format == Format::nfd; });
  if (labels && apps.arch.parsed()) {
    throw UsageError("arch: node labels (nfd) come from a run on the node, not from arch");
  }
  const std::string quiet = typed_name(typed, apps.probe, *apps.probe.get_option("--quiet"));
  const CLI::Option& output = *apps.probe.get_option("--output");
  if (o.quiet && output.count() > 0 && o.output.empty()) {
    throw UsageError(fmt::format("{} keeps stdout silent, but {} - writes to it", quiet,
                                 typed_name(typed, apps.probe, output)));
  }
  for (const ExtraOutput& e : o.extra_outputs) {
    if (o.quiet && e.path == "-") {
      throw UsageError(fmt::format("{} keeps stdout silent, but {} - writes to it", quiet, e.flag));
    }
  }
  const CLI::Option& size = *apps.probe.get_option("--bench-size");
  if (size.count() > 0 && !o.bench && o.soak_s <= 0.0) {
    throw UsageError(fmt::format(
        "{} is the GEMM size of --bench and --soak, but neither is given (add --bench or --soak "
        "SECONDS)",
        typed_name(typed, apps.probe, size)));
  }
  const CLI::Option& ttl = *apps.probe.get_option("--nfd-ttl");
  if (ttl.count() > 0 && !labels) {
    throw UsageError(fmt::format(
        "{} is how long node labels stand, but none are written (add --nfd FILE or --format nfd)",
        typed_name(typed, apps.probe, ttl)));
  }
}

// `precision-probe arch CC [OPTIONS]`: its options are the probe's that apply to it (kAlsoArch).
void add_arch(const Apps& apps, Options& o) {
  apps.arch.fallthrough();
  apps.arch.set_help_flag("-h,--help", "This help");
  apps.arch.add_option("CC", o.arch_cc, "Compute capability: 8.9, 89 or sm_89")
      ->required()
      ->check(CLI::Validator(
          [](std::string& cc) {
            const auto parsed = ComputeCapability::parse(cc);
            if (!parsed || !parsed->known()) {
              throw UsageError(
                  fmt::format("arch: '{}' is not a compute capability (examples: 8.9, 89, sm_89)",
                              printable(cc, 40)));
            }
            return std::string();
          },
          ""));
  apps.arch.callback([&o] { o.command = Command::arch; });
}

void add_summarize(const Apps& apps, SummarizeOptions& s, const AsTyped& typed, bool& version) {
  const std::string group = "summarize";
  CLI::App& app = apps.summarize;
  app.set_help_flag("-h,--help", "this help");
  Table t(app, typed);
  t.value_to("--format", "FORMAT", group, "text (default), json (docs/summarize.md) or markdown",
             check_summary_format, [&s](const std::string& v) { s.format = *parse_format(v); });
  t.value_to("-o,--output", "FILE", group,
             "write the summary to FILE instead of stdout (replaced atomically)", nullptr,
             [&s](const std::string& v) { s.output = v == "-" ? "" : v; });
  t.value("--max-age", "DURATION", group,
          "a report older than this (90m, 24h, 7d) is stale: its node unknown", to_age_seconds,
          s.max_age_s);
  t.values_to("--require", "MODES", group,
              "every gated device of every node must run these natively (repeatable)", check_modes,
              [&s](const std::vector<std::string>& all) {
                const std::vector<Mode> modes = *parse_mode_list(join(all, ","));
                for (Mode m : modes) {
                  if (std::find(s.require.begin(), s.require.end(), m) == s.require.end()) {
                    s.require.push_back(m);
                  }
                }
              });
  t.flag("-q,--quiet", group, "nothing on stdout: the exit code tells the result", s.quiet);
  t.flag("--version", group, "the version", version);  // answered as the probe's
  // Every word after the options is a report, "--" anywhere among them too: the positional is
  // never full, where CLI11 would end the subcommand at a "--" after a full one.
  const int never_full = CLI::detail::expected_max_vector_size;
  app.add_option("FILE", s.sources, "reports: files, directories, - for standard input")
      ->required()
      ->expected(never_full, never_full)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.callback([&app, &s, &typed] {
    if (std::count(s.sources.begin(), s.sources.end(), "-") > 1) {
      throw UsageError("summarize: - (standard input) is named more than once");
    }
    const CLI::Option& output = *app.get_option("--output");
    if (s.quiet && output.count() > 0 && s.output.empty()) {
      throw UsageError(fmt::format("{} keeps stdout silent, but {} - writes to it",
                                   typed_name(typed, app, *app.get_option("--quiet")),
                                   typed_name(typed, app, output)));
    }
  });
}

// What excludes and needs what, for CLI11 to check: the options that need kernels and --quick;
// `arch` and the probe's options that do not apply to it; `summarize`, which comes first, and
// every option of the probe.
void relate(const Apps& apps) {
  CLI::Option* quick = apps.probe.get_option("--quick");
  for (CLI::Option* option : apps.probe.get_options()) {
    if (option == apps.probe.get_help_ptr()) continue;
    if (option->get_group() == kKernels) option->excludes(quick);
    if (option->get_group() != kAlsoArch) apps.arch.excludes(option);
    apps.summarize.excludes(option);
  }
  // One subcommand at most: after it, "arch" or "summarize" is a word like any other (a
  // directory named arch among summarize's reports).
  apps.probe.require_subcommand(0, 1);
}

// Builds the command line: the probe's options, `arch`, `summarize`, what relates them. `typed`
// is read later (it needs the apps), before parsing.
void build(const Apps& apps, CommandLine& cl, const AsTyped& typed, bool& version) {
  apps.probe.set_help_flag("-h,--help", "This help");
  Table t(apps.probe, typed);
  add_report_options(t, cl.options);
  add_selection_options(t, cl.options);
  add_kernel_options(t, cl.options);
  add_run_options(t, cl.options, version);
  add_arch(apps, cl.options);
  add_summarize(apps, cl.summarize, typed, version);
  relate(apps);
  apps.probe.callback([&apps, &cl, &typed] {
    if (apps.summarize.parsed()) return;
    check_probe_rules(apps, cl.options, typed);
  });
}

// --- CLI11's refusals in the user's words ------------------------------------------------------

// An unknown option's name as typed: "--bogus" of "--bogus=3", "-x" of "-x5".
std::string option_name(const std::string& word) {
  return printable(
      word.compare(0, 2, "--") == 0 ? word.substr(0, word.find('=')) : word.substr(0, 2), 40);
}

// A word no app took: an unknown option, or a word where none belongs.
std::string unexpected(const Apps& apps) {
  for (const CLI::App* app : {&apps.probe, &apps.arch, &apps.summarize}) {
    for (const std::string& word : app->remaining()) {
      if (word == "--") continue;
      if (app == &apps.summarize) {
        return fmt::format(
            "summarize: unknown option '{}' (precision-probe summarize --help lists them)",
            option_name(word));
      }
      if (word.size() > 1 && word.front() == '-') {
        return fmt::format("unknown option '{}' (precision-probe --help lists them)",
                           option_name(word));
      }
      if (apps.arch.parsed()) {
        return fmt::format("arch: unexpected argument '{}' after the compute capability",
                           printable(word, 40));
      }
      return fmt::format("unexpected argument '{}' (precision-probe --help lists the options)",
                         printable(word, 40));
    }
  }
  return "";
}

// An option given twice that takes one value once.
std::string given_twice(const Apps& apps, const AsTyped& typed) {
  for (const CLI::App* app : {&apps.probe, &apps.arch, &apps.summarize}) {
    for (const CLI::Option* option : app->get_options()) {
      if (option->count() > 1 && option->get_items_expected_max() == 1 &&
          option->get_multi_option_policy() == CLI::MultiOptionPolicy::Throw) {
        return typed_name(typed, *app, *option) + " is given more than once";
      }
    }
  }
  return "";
}

// Options that exclude or need each other (relate()), the first in the order the user is best
// told: summarize's place, what arch refuses, what --quick refuses, what an option needs.
std::string excluded_or_needed(const Apps& apps, const AsTyped& typed) {
  if (apps.summarize.parsed()) {
    return "summarize comes first, its options after it (precision-probe summarize --help)";
  }
  const std::vector<CLI::Option*> options = apps.probe.get_options();
  auto name = [&](const CLI::Option& option) { return typed_name(typed, apps.probe, option); };
  for (const CLI::Option* option : options) {
    if (apps.arch.parsed() && option->count() > 0 && option->get_group() != kAlsoArch) {
      return name(*option) + " does not apply to arch, which runs no kernels";
    }
  }
  const CLI::Option& quick = *apps.probe.get_option("--quick");
  for (const CLI::Option* option : options) {
    if (quick.count() > 0 && option->count() > 0 && option->get_group() == kKernels) {
      return fmt::format("{} needs kernels to run and {} runs none: choose one", name(*option),
                         name(quick));
    }
  }
  for (const CLI::Option* option : options) {
    for (const CLI::Option* need : option->get_needs()) {
      if (option->count() > 0 && need->count() == 0) {
        return fmt::format("{} needs {} {}", name(*option), need->get_name(),
                           need->get_option_text());
      }
    }
  }
  return "";
}

// CLI11's refusal of the command line (an unknown option, one given twice, a missing value or
// word, options that exclude or need each other), in the user's words.
std::string explain(const CLI::ParseError& error, const Apps& apps, const AsTyped& typed) {
  std::string message;
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    message = typed.lacks_value.empty() ? given_twice(apps, typed) : typed.lacks_value;
  } else if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    message = unexpected(apps);
  } else if (dynamic_cast<const CLI::ExcludesError*>(&error) != nullptr ||
             dynamic_cast<const CLI::RequiresError*>(&error) != nullptr) {
    message = excluded_or_needed(apps, typed);
  } else if (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr) {
    // A word a subcommand needs and did not get; an unknown option first (`summarize --bogus`).
    const std::string unknown = unexpected(apps);
    message = !unknown.empty() ? unknown
              : apps.summarize.parsed()
                  ? "summarize: no reports given (name files, directories, or - for JSON Lines "
                    "on stdin)"
              : apps.arch.parsed() ? "arch: the compute capability is missing (e.g. arch 8.9)"
                                   : "";
  }
  if (!message.empty()) return message;
  // Anything else CLI11 refuses is said plainly.
  const std::string what = error.what();
  return "cannot read the command line: " + printable(what.substr(0, what.find('\n')), 160);
}

// --- The commands as plain data, for the pre-pass and the help ----------------------------------

struct Specs {
  CommandSpec probe, arch, summarize;
};

CommandSpec spec_of(const CLI::App& app) {
  CommandSpec command{app.get_name(), app.get_description(), {},
                      nullptr,        app.get_fallthrough(), {}};
  for (const CLI::Option* o : app.get_options()) {
    if (!o->nonpositional()) continue;
    command.options.push_back({o->get_name(false, true), o->get_name(), o->get_option_text(),
                               o->get_group(), o->get_description()});
  }
  return command;
}

void read_specs(const Apps& apps, Specs& specs) {
  specs.probe = spec_of(apps.probe);
  specs.arch = spec_of(apps.arch);
  specs.summarize = spec_of(apps.summarize);
  specs.probe.subcommands = {&specs.arch, &specs.summarize};
  specs.arch.parent = &specs.probe;
  specs.summarize.parent = &specs.probe;
}

// The command whose help was asked for (`--help arch` and `arch --help` both ask arch's), or
// null.
const CommandSpec* help_asked(const Apps& apps, const Specs& specs) {
  auto asked = [](const CLI::App& app) { return app.get_help_ptr()->count() > 0; };
  if (!asked(apps.probe) && !asked(apps.arch) && !asked(apps.summarize)) return nullptr;
  if (apps.summarize.parsed()) return &specs.summarize;
  if (apps.arch.parsed()) return &specs.arch;
  return &specs.probe;
}

// What the parse comes to: help and the version are answered whatever else the line holds; then
// what CLI11 would read otherwise than typed; then what CLI11 or a check refused.
void conclude(CommandLine& cl, const Apps& apps, const Specs& specs, const AsTyped& typed,
              const std::string& error) {
  if (const CommandSpec* asked = help_asked(apps, specs)) {
    cl.action = CommandLine::Action::help;
    cl.text = help_text(*asked);
  } else if (apps.probe.get_option("--version")->count() > 0 ||
             apps.summarize.get_option("--version")->count() > 0) {
    cl.action = CommandLine::Action::version;
    cl.text = version_text();
  } else if (!typed.error.empty() || !error.empty()) {
    cl.action = CommandLine::Action::usage_error;
    cl.text = typed.error.empty() ? error : typed.error;
  }
  auto name = [&typed](const CLI::App& app, const char* option) {
    return typed_name(typed, app, *app.get_option(option));
  };
  cl.options.output_flag = name(apps.probe, "--output");
  cl.options.quiet_flag = name(apps.probe, "--quiet");
  cl.summarize.output_flag = name(apps.summarize, "--output");
  cl.summarize.quiet_flag = name(apps.summarize, "--quiet");
}

}  // namespace

}  // namespace cli

CommandLine parse_command_line(int argc, const char* const* argv) {
  CommandLine cl;
  cli::AsTyped typed;
  bool version = false;
  CLI::App probe{"", "precision-probe"};
  CLI::App& arch = *probe.add_subcommand(
      "arch",
      "Offline: the precision matrix for a compute capability, and whether the image's LibTorch "
      "carries kernels for it (e.g. arch 7.5); --require gates on it");
  CLI::App& summarize = *probe.add_subcommand(
      "summarize",
      "A fleet's reports in one view: many nodes' JSON reports (files, directories, standard "
      "input) read together and gated");
  const cli::Apps apps{probe, arch, summarize};
  cli::build(apps, cl, typed, version);
  cli::Specs specs;
  cli::read_specs(apps, specs);
  typed = cli::read_as_typed(specs.probe, argc, argv);
  cl.json_requested = typed.json;
  cl.quiet = typed.quiet;
  cl.program = typed.summarize ? CommandLine::Program::summarize : CommandLine::Program::probe;
  std::string error;
  try {
    probe.parse(argc, argv);
  } catch (const cli::UsageError& e) {
    error = e.what();
  } catch (const CLI::ParseError& e) {
    error = cli::explain(e, apps, typed);
  }
  cli::conclude(cl, apps, specs, typed, error);
  return cl;
}

}  // namespace precision_probe
