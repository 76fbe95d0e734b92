#include "probe/cli/cli.hpp"

#include <algorithm>
#include <map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common/arch.hpp"
#include "common/build_info.hpp"
#include "probe/verdicts/exit_codes.hpp"
#include "common/strings.hpp"

namespace precision_probe {

std::string_view to_string(Format format) {
  switch (format) {
    case Format::text: return "text";
    case Format::json: return "json";
    case Format::markdown: return "markdown";
    case Format::prometheus: return "prometheus";
    case Format::nfd: return "nfd";
  }
  return "text";
}

std::optional<Format> parse_format(std::string_view text) {
  for (Format f : {Format::text, Format::json, Format::markdown, Format::prometheus, Format::nfd}) {
    if (to_string(f) == text) return f;
  }
  if (text == "md") return Format::markdown;
  if (text == "prom") return Format::prometheus;
  return std::nullopt;
}

// A list is the union of its entries: "gpu,cpu" is all, "cpu,0" GPU 0 and the CPU.
DeviceSelectionParse parse_device_selection(std::string_view text) {
  DeviceSelectionParse result;
  DeviceSelection& s = result.selection;
  const std::string value = to_lower(trim(text));
  if (value.empty()) {
    result.error = "--device: empty value (use all, gpu, cpu or GPU indices such as 0,1)";
    return result;
  }
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
      result.error = fmt::format(
          "--device: '{}' is not a device (use all, gpu, cpu or GPU indices such as 0,1)",
          printable(entry.empty() ? "(empty)" : entry));
      return result;
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
  return result;
}

std::string version_text() {
  return fmt::format(
      "precision-probe {} (links no LibTorch: its engine loads the image's own through the stable "
      "C ABI, {}.{} or later, tested to {}.{})",
      build_info::kVersion, kEngineFloor.major, kEngineFloor.minor, kNewestTestedLibTorch.major,
      kNewestTestedLibTorch.minor);
}

namespace {

// Every option once: the names CLI11 knows it by, its value's name ("" for a flag), whether it may
// be repeated, whether it applies to `arch` (which runs no kernels), and its help.
struct OptionSpec {
  const char* names;
  const char* value;
  bool repeatable;
  bool with_arch;
  const char* help;
};

constexpr std::array<OptionSpec, 24> kOptions = {{
    {"--format", "FORMAT", false, true,
     "The report on stdout: text (default), json, markdown, prometheus or nfd (node labels)"},
    {"-o,--output", "FILE", false, true,
     "Write that report to FILE instead of stdout (- is stdout); a regular file is replaced "
     "atomically, a device or FIFO written through"},
    {"--json", "FILE", false, true, "Also write the JSON report to FILE"},
    {"--markdown", "FILE", false, true, "Also write the Markdown report to FILE (CI summaries)"},
    {"--prom", "FILE", false, true,
     "Also write Prometheus metrics to FILE (node_exporter textfile collector)"},
    {"--text", "FILE", false, true, "Also write the text report to FILE"},
    {"--nfd", "FILE", false, false,
     "Also write node labels to FILE: a node-feature-discovery feature file (its features.d "
     "directory)"},
    {"--nfd-ttl", "DURATION", false, false,
     "How long the node labels stand when the probe stops running: 90m, 24h (default 1h)"},
    {"--output-as", "FORMAT:FILE", true, true,
     "Also write FORMAT to FILE (json:r.json, json:- for stdout); repeatable"},
    {"--device", "SEL", false, false,
     "Devices to check and gate: all, gpu (default: every visible GPU), cpu, or GPU indices such "
     "as 0,1 (may include cpu)"},
    {"--require", "MODES", true, true,
     "Exit 1 unless every selected device runs these natively (comma separated, repeatable; "
     "the modes are listed below)"},
    {"--quick", "", false, false, "Driver facts and architecture verdicts only: no kernels run"},
    {"--nccl", "", false, false,
     "All-reduce in fp32, fp16 and bf16 across the selected GPUs through NCCL: exact results and "
     "bus bandwidth (one GPU: a one-rank all-reduce)"},
    {"--no-amp", "", false, false,
     "Skip the mixed-precision training checks (amp_fp16, amp_bf16): matmul smoke tests only"},
    {"--bench", "", false, false,
     "Measure TFLOP/s per precision, the speed-up over fp32 and the share of the datasheet peak"},
    {"--bench-size", "N", false, false,
     "GEMM size for --bench and --soak, M=N=K, a multiple of 16 (--bench: 8192 on GPUs, 1024 on "
     "the CPU; --soak: 16384 on GPUs of 16 GiB or more, 8192 on smaller ones, 256 on the CPU)"},
    {"--soak", "SECONDS", false, false,
     "Run each native matmul mode back to back for SECONDS on every selected device, each result "
     "compared bit for bit with the first (silent data corruption under load)"},
    {"--soak-modes", "MODES", true, false,
     "The modes --soak runs (comma separated; default: every matmul mode native on the device)"},
    {"--seed", "N", false, false, "Seed of the random test inputs (default: a fresh one per run)"},
    {"--timeout", "SECONDS", false, true, "Bound on the whole run, in seconds (default 60)"},
    {"--check-timeout", "SECONDS", false, false,
     "Bound on any one check, in seconds (default 45): a hung kernel is stopped"},
    {"--no-color", "", false, true, "No colour in the text report (NO_COLOR is honoured too)"},
    {"-q,--quiet", "", false, true, "Nothing on stdout; the exit code tells the result"},
    {"--version", "", false, true, "The version and the LibTorch/CUDA it was built with"},
}};

// The options that only mean something where kernels run: --quick refuses each of them.
constexpr std::array<const char*, 7> kKernelOptions = {
    "--bench", "--bench-size", "--soak", "--soak-modes", "--nccl", "--no-amp", "--seed"};

// The long name an option is known by in this file ("--output" for -o).
std::string primary_name(const OptionSpec& spec) {
  const std::vector<std::string> names = split(spec.names, ',');
  return names.back();
}

const OptionSpec* find_option(std::string_view spelled) {
  for (const OptionSpec& spec : kOptions) {
    for (const std::string& name : split(spec.names, ',')) {
      if (name == spelled) return &spec;
    }
  }
  return nullptr;
}

// What the command line holds, read before CLI11 sees it: the checks that need to know how each
// value was given, and each option as the user spelled it (messages name what was typed).
struct Scan {
  std::map<std::string, std::string> spelled;  // primary name -> as typed
  std::map<std::string, int> count;
  std::vector<std::string> positionals;
  bool help = false;
  bool json = false;
  bool quiet = false;
  std::string error;
};

void scan_value(Scan& scan, const OptionSpec& spec, const std::string& as_typed,
                const std::string& value, bool attached) {
  const std::string name = primary_name(spec);
  if (name == "--format" && value == "json") scan.json = true;
  if (!scan.error.empty()) return;
  if (value.empty()) {
    scan.error = fmt::format("{}: empty value", as_typed);
  } else if (!attached && value != "-" && value.front() == '-') {
    // "--json -q" is a forgotten value, not a file named "-q".
    // The form that takes it as it is: --name=VALUE (a short option keeps an '=' in its value).
    const std::string spelled = as_typed.compare(0, 2, "--") == 0 ? as_typed : primary_name(spec);
    scan.error = fmt::format(
        "{}: '{}' looks like an option, not a {} (write {}={} if you mean it)", as_typed,
        printable(value, 40), spec.value, spelled,
        std::string(spec.value) == "FILE" ? "./" + printable(value, 40) : printable(value, 40));
  }
}

// The words that are not options: nothing, or `arch CC`.
std::string check_positionals(const std::vector<std::string>& pos) {
  if (pos.empty()) return "";
  if (pos.front() == "summarize") {
    return "summarize comes first, its options after it (precision-probe summarize --help)";
  }
  if (pos.front() != "arch") {
    return fmt::format("unexpected argument '{}' (precision-probe --help lists the options)",
                       printable(pos.front(), 40));
  }
  if (pos.size() < 2) return "arch: the compute capability is missing (e.g. arch 8.9)";
  if (pos.size() > 2) {
    return fmt::format("arch: unexpected argument '{}' after the compute capability",
                       printable(pos[2], 40));
  }
  return "";
}

Scan scan_command_line(int argc, const char* const* argv) {
  Scan scan;
  auto fail = [&scan](std::string message) {
    if (scan.error.empty()) scan.error = std::move(message);
  };
  bool rest_positional = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i] != nullptr ? argv[i] : "";
    if (rest_positional || arg.size() < 2 || arg.front() != '-') {
      scan.positionals.push_back(arg);
      continue;
    }
    if (arg == "--") {
      rest_positional = true;
      continue;
    }
    const bool long_form = arg.compare(0, 2, "--") == 0;
    const std::size_t eq = long_form ? arg.find('=') : std::string::npos;
    const std::string name = long_form ? arg.substr(0, eq) : arg.substr(0, 2);
    if (name == "-h" || name == "--help") {
      scan.help = true;
      continue;
    }
    const OptionSpec* spec = find_option(name);
    if (spec == nullptr) {
      fail(fmt::format("unknown option '{}' (precision-probe --help lists them)",
                       printable(name, 40)));
      continue;
    }
    const std::string primary = primary_name(*spec);
    scan.spelled[primary] = name;
    if (++scan.count[primary] > 1 && !spec->repeatable && *spec->value != '\0') {
      fail(fmt::format("{} is given more than once", name));
    }
    if (*spec->value == '\0') {
      if (primary == "--quiet") scan.quiet = true;
      if (eq != std::string::npos || (!long_form && arg.size() > 2)) {
        fail(fmt::format("{} takes no value", name));
      }
      continue;
    }
    if (eq != std::string::npos) {
      scan_value(scan, *spec, name, arg.substr(eq + 1), true);
    } else if (!long_form && arg.size() > 2) {
      scan_value(scan, *spec, name, arg.substr(2), true);
    } else if (i + 1 >= argc || argv[i + 1] == nullptr) {
      fail(fmt::format("{}: {} is missing", name, spec->value));
    } else {
      scan_value(scan, *spec, name, argv[++i], false);
    }
  }
  if (scan.error.empty()) scan.error = check_positionals(scan.positionals);
  return scan;
}

std::string help_footer() {
  std::string text = "\nModes for --require: " + accepted_mode_keys() + ".\n\nExit codes:\n";
  for (const exit_code::Meaning& m : exit_code::kMeanings) {
    text += fmt::format("  {}  {}\n", m.code, m.meaning);
  }
  text += "\nEnvironment:\n";
  for (const EnvironmentVariable& v : kEnvironmentVariables) {
    text += fmt::format("  {:<32}  {}\n", v.name, v.effect);
  }
  text += "\nDocumentation: README.md and docs/ (exit codes: docs/exit-codes.md).\n";
  return text;
}

// Help text in 80 columns: a longer line wraps, its continuation under its description (the
// text after the first run of two spaces past the indent: an option's help, a variable's effect).
std::string fit_help(const std::string& help) {
  std::string out;
  for (const std::string& line : split(help, '\n')) {
    if (line.size() <= 80) {
      out += line + "\n";
      continue;
    }
    const std::size_t indent = line.find_first_not_of(' ');
    const std::size_t gap = line.find("  ", indent == std::string::npos ? 0 : indent);
    const std::size_t column = gap == std::string::npos ? 0 : line.find_first_not_of(' ', gap);
    const bool hanging = column != std::string::npos && column > 0 && column <= 40;
    const std::size_t at = hanging ? column : 0;
    const std::vector<std::string> lines = wrap(line.substr(at), 80 - at);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      out += (i == 0 ? line.substr(0, at) : std::string(at, ' ')) + lines[i] + "\n";
    }
  }
  if (!out.empty() && (help.empty() || help.back() != '\n')) out.pop_back();
  return out;
}

// `arch --help`: what arch does and the options that apply to it (kOptions' with_arch).
std::string arch_help() {
  std::string text =
      "Usage: precision-probe arch CC [OPTIONS]\n\n"
      "Offline: the precision matrix for a compute capability (CC: 8.9, 89 or\n"
      "sm_89), and whether the image's LibTorch carries kernels for it. It runs no\n"
      "kernels and needs no GPU; --require gates on its verdicts (exit 1 where one\n"
      "is not native).\n\nOptions:\n";
  for (const OptionSpec& spec : kOptions) {
    if (!spec.with_arch) continue;
    const std::string name = *spec.value == '\0' ? std::string(spec.names)
                                                 : fmt::format("{} {}", spec.names, spec.value);
    const std::vector<std::string> lines = wrap(spec.help, 80 - 27);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      text += fmt::format("  {:<23}  {}\n", i == 0 ? name : "", lines[i]);
    }
  }
  text += "\n";
  for (const std::string& line : wrap("Modes for --require: " + accepted_mode_keys() + ".", 80)) {
    text += line + "\n";
  }
  return text + "\nExit codes and the environment: precision-probe --help.\n";
}

// The values as given, before they are checked.
struct RawValues {
  std::map<std::string, std::string> one;
  std::map<std::string, std::vector<std::string>> many;
  std::map<std::string, bool> flags;
  std::string cc;
};

void build_app(CLI::App& app, RawValues& raw, CLI::App*& arch) {
  app.get_formatter()->column_width(34);
  app.footer(help_footer());
  for (const OptionSpec& spec : kOptions) {
    const std::string name = primary_name(spec);
    if (*spec.value == '\0') {
      app.add_flag(spec.names, raw.flags[name], spec.help);
    } else if (spec.repeatable) {
      app.add_option(spec.names, raw.many[name], spec.help)->option_text(spec.value);
    } else {
      app.add_option(spec.names, raw.one[name], spec.help)->option_text(spec.value);
    }
  }
  arch = app.add_subcommand(
      "arch",
      "Offline: the precision matrix for a compute capability, and whether the image's LibTorch "
      "carries kernels for it (e.g. arch 7.5); --require gates on it");
  arch->add_option("CC", raw.cc, "Compute capability: 8.9, 89 or sm_89");
  arch->fallthrough();
}

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

class Reader {
 public:
  Reader(const Scan& scan, RawValues& raw, Options& o) : scan_(scan), raw_(raw), o_(o) {}

  // As the user typed it: "-o" or "--output".
  std::string typed(const std::string& primary) const {
    const auto it = scan_.spelled.find(primary);
    return it != scan_.spelled.end() ? it->second : primary;
  }
  bool given(const std::string& primary) const { return scan_.count.count(primary) != 0; }
  const std::string& value(const std::string& primary) { return raw_.one[primary]; }

  std::string read_outputs() {
    if (given("--format")) {
      const auto f = parse_format(value("--format"));
      if (!f) {
        return fmt::format("{}: '{}' is not a format (text, json, markdown, prometheus, nfd)",
                           typed("--format"), printable(value("--format"), 40));
      }
      o_.format = *f;
    }
    if (given("--output")) {
      o_.output = value("--output") == "-" ? "" : value("--output");
      o_.output_flag = typed("--output");
    }
    for (const auto& [name, format] :
         {std::pair{"--json", Format::json}, std::pair{"--markdown", Format::markdown},
          std::pair{"--prom", Format::prometheus}, std::pair{"--text", Format::text},
          std::pair{"--nfd", Format::nfd}}) {
      if (given(name)) o_.extra_outputs.push_back({format, value(name), typed(name)});
    }
    for (const std::string& spec : raw_.many["--output-as"]) {
      const std::size_t colon = spec.find(':');
      const auto f =
          colon == std::string::npos ? std::nullopt : parse_format(spec.substr(0, colon));
      if (!f || colon + 1 >= spec.size()) {
        return fmt::format(
            "--output-as: '{}' is not FORMAT:FILE (formats: text, json, markdown, prometheus, nfd)",
            printable(spec, 60));
      }
      o_.extra_outputs.push_back({*f, spec.substr(colon + 1), "--output-as"});
    }
    const bool labels = o_.format == Format::nfd ||
                        std::any_of(o_.extra_outputs.begin(), o_.extra_outputs.end(),
                                    [](const ExtraOutput& e) { return e.format == Format::nfd; });
    if (labels && o_.command == Command::arch) {
      return "arch: node labels (nfd) come from a run on the node, not from arch";
    }
    if (o_.quiet) {
      if (given("--output") && value("--output") == "-") {
        return fmt::format("{} keeps stdout silent, but {} - writes to it", typed("--quiet"),
                           typed("--output"));
      }
      for (const ExtraOutput& e : o_.extra_outputs) {
        if (e.path == "-") {
          return fmt::format("{} keeps stdout silent, but {} - writes to it", typed("--quiet"),
                             e.flag);
        }
      }
    }
    return "";
  }

  std::string read_numbers() {
    if (given("--seed")) {
      const auto seed = parse_decimal(value("--seed"));
      // Seeds stay exact in every JSON reader (below 2^53).
      if (!seed || *seed > (std::int64_t{1} << 53) - 1) {
        return fmt::format("{}: '{}' is not a whole number from 0 to 9007199254740991",
                           typed("--seed"), printable(value("--seed"), 40));
      }
      o_.seed = static_cast<std::uint64_t>(*seed);
    }
    if (given("--bench-size")) {
      const auto size = parse_decimal(value("--bench-size"));
      if (!size || *size < 16 || *size > 32768 || *size % 16 != 0) {
        return fmt::format("{}: '{}' is not a multiple of 16 from 16 to 32768",
                           typed("--bench-size"), printable(value("--bench-size"), 40));
      }
      o_.bench_size = *size;
      o_.bench = true;  // asking for a size asks for the benchmark
    }
    if (given("--soak")) {
      const auto seconds = parse_seconds(value("--soak"));
      if (!seconds || *seconds <= 0.0 || *seconds > 604800.0) {
        return fmt::format("{}: '{}' is not a number of seconds above 0 and up to 604800",
                           typed("--soak"), printable(value("--soak"), 40));
      }
      o_.soak_s = *seconds;
    }
    if (given("--nfd-ttl")) {
      const auto ttl = parse_duration(value("--nfd-ttl"));
      if (!ttl || *ttl < 60 || *ttl > std::int64_t{366} * 86400) {
        return fmt::format("{}: '{}' is not a duration from 1m to 366d (such as 90m or 24h)",
                           typed("--nfd-ttl"), printable(value("--nfd-ttl"), 40));
      }
      o_.nfd_ttl_s = *ttl;
    }
    for (const auto& [name, target] : {std::pair{"--timeout", &o_.timeout_s},
                                       std::pair{"--check-timeout", &o_.check_timeout_s}}) {
      if (!given(name)) continue;
      const auto seconds = parse_seconds(value(name));
      if (!seconds || *seconds <= 0.0 || *seconds > 86400.0) {
        return fmt::format("{}: '{}' is not a number of seconds above 0 and up to 86400",
                           typed(name), printable(value(name), 40));
      }
      *target = *seconds;
    }
    return "";
  }

  std::string read_selection() {
    if (given("--device")) {
      const auto selection = parse_device_selection(value("--device"));
      if (!selection.error.empty()) return selection.error;
      o_.devices = selection.selection;
    }
    const std::vector<std::string>& require = raw_.many["--require"];
    if (!require.empty()) {
      const auto modes = parse_mode_list(join(require, ","));
      if (!modes.error.empty()) return "--require: " + modes.error;
      o_.require = modes.modes;
    }
    return read_soak_modes();
  }

  std::string read_soak_modes() {
    const std::vector<std::string>& soak = raw_.many["--soak-modes"];
    if (soak.empty()) return "";
    if (!given("--soak")) return fmt::format("{} needs --soak SECONDS", typed("--soak-modes"));
    const auto modes = parse_mode_list(join(soak, ","));
    if (!modes.error.empty()) return typed("--soak-modes") + ": " + modes.error;
    for (Mode mode : modes.modes) {
      if (is_amp_mode(mode)) {
        return fmt::format("{}: {} is a training mode; the soak runs matmul modes",
                           typed("--soak-modes"), mode_key(mode));
      }
    }
    o_.soak_modes = modes.modes;
    return "";
  }

  // Options that cannot do what they say together: refused, both named.
  std::string read_combinations() {
    if (o_.quick && o_.command == Command::probe) {
      for (const char* name : kKernelOptions) {
        if (given(name)) {
          return fmt::format("{} needs kernels to run and {} runs none: choose one", typed(name),
                             typed("--quick"));
        }
      }
    }
    const bool labels = o_.format == Format::nfd ||
                        std::any_of(o_.extra_outputs.begin(), o_.extra_outputs.end(),
                                    [](const ExtraOutput& e) { return e.format == Format::nfd; });
    if (given("--nfd-ttl") && !labels && o_.command == Command::probe) {
      return fmt::format(
          "{} is how long node labels stand, but none are written (add --nfd FILE "
          "or --format nfd)",
          typed("--nfd-ttl"));
    }
    return "";
  }

  // `arch CC`: the compute capability, and no option that needs kernels to run.
  std::string read_arch() {
    const std::vector<std::string>& pos = scan_.positionals;
    if (pos.empty()) return "";
    o_.command = Command::arch;
    o_.arch_cc = pos[1];
    if (!parse_compute_capability(o_.arch_cc)) {
      return fmt::format("arch: '{}' is not a compute capability (examples: 8.9, 89, sm_89)",
                         printable(o_.arch_cc, 40));
    }
    for (const OptionSpec& spec : kOptions) {
      if (!spec.with_arch && given(primary_name(spec))) {
        return fmt::format("{} does not apply to arch, which runs no kernels",
                           typed(primary_name(spec)));
      }
    }
    return "";
  }

 private:
  const Scan& scan_;
  RawValues& raw_;
  Options& o_;
};

}  // namespace

CommandLine parse_command_line(int argc, const char* const* argv) {
  CommandLine cl;
  const Scan scan = scan_command_line(argc, argv);
  cl.json_requested = scan.json;
  cl.quiet = scan.quiet;
  RawValues raw;
  CLI::App app{
      "precision-probe: which numeric precisions can this machine really train in?\n"
      "Checks every visible NVIDIA GPU and the CPU: hardware support, matmul smoke\n"
      "tests against a float64 reference, training steps, and a verdict per precision\n"
      "(native, emulated, unsupported, failed, not_tested).\n"
      "precision-probe summarize FILE... reads many nodes' JSON reports into a fleet's\n"
      "view (precision-probe summarize --help); precision-probe arch --help: offline.",
      "precision-probe"};
  CLI::App* arch = nullptr;
  build_app(app, raw, arch);
  if (scan.help) {
    cl.action = CommandLine::Action::help;
    const bool for_arch = !scan.positionals.empty() && scan.positionals.front() == "arch";
    cl.text = for_arch ? arch_help() : fit_help(app.help());
    return cl;
  }
  auto fail = [&cl](std::string message) {
    cl.action = CommandLine::Action::usage_error;
    cl.text = std::move(message);
    return cl;
  };
  if (!scan.error.empty()) return fail(scan.error);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // The scan above finds what a user can get wrong; anything CLI11 still refuses is said plainly.
    const std::string what = e.what();
    return fail("cannot read the command line: " + printable(what.substr(0, what.find('\n')), 160));
  }
  Options& o = cl.options;
  if (raw.flags["--version"]) {
    cl.action = CommandLine::Action::version;
    cl.text = version_text();
    return cl;
  }
  o.quiet = raw.flags["--quiet"];
  o.quiet_flag = Reader(scan, raw, o).typed("--quiet");
  o.quick = raw.flags["--quick"];
  o.nccl = raw.flags["--nccl"];
  o.bench = raw.flags["--bench"];
  o.amp = !raw.flags["--no-amp"];
  o.color = raw.flags["--no-color"] ? ColorMode::never : ColorMode::automatic;
  Reader reader(scan, raw, o);
  for (auto step : {&Reader::read_arch, &Reader::read_outputs, &Reader::read_numbers,
                    &Reader::read_selection, &Reader::read_combinations}) {
    if (std::string error = (reader.*step)(); !error.empty()) return fail(std::move(error));
  }
  return cl;
}

}  // namespace precision_probe
