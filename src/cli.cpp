#include "precision_probe/cli.hpp"

#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "precision_probe/arch.hpp"
#include "precision_probe/build_info.hpp"
#include "precision_probe/strings.hpp"

namespace precision_probe {

std::string_view to_string(Format format) {
  switch (format) {
    case Format::text: return "text";
    case Format::json: return "json";
    case Format::markdown: return "markdown";
    case Format::prometheus: return "prometheus";
  }
  return "text";
}

std::optional<Format> parse_format(std::string_view text) {
  for (Format f : {Format::text, Format::json, Format::markdown, Format::prometheus}) {
    if (to_string(f) == text) return f;
  }
  if (text == "md") return Format::markdown;
  if (text == "prom") return Format::prometheus;
  return std::nullopt;
}

DeviceSelectionParse parse_device_selection(std::string_view text) {
  DeviceSelectionParse result;
  DeviceSelection& s = result.selection;
  const std::string value = to_lower(trim(text));
  if (value == "all") {
    s.all_gpus = true;
    s.cpu = true;
    return result;
  }
  if (value == "gpu" || value == "gpus" || value == "cuda") {
    s.all_gpus = true;
    return result;
  }
  if (value == "cpu") {
    s.all_gpus = false;
    s.cpu = true;
    return result;
  }
  if (value.empty()) {
    result.error = "--device: empty value (use all, gpu, cpu or GPU indices such as 0,1)";
    return result;
  }
  s.all_gpus = false;
  for (const std::string& raw : split(value, ',')) {
    const std::string entry = trim(raw);
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
  return result;
}

std::string version_text() {
  return fmt::format("precision-probe {} (built with LibTorch {}, CUDA {})", build_info::kVersion,
                     build_info::kLibTorchVersion, build_info::kCudaVersion);
}

namespace {

bool scan_for_json(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i] != nullptr ? argv[i] : "";
    if (arg == "--format=json") return true;
    if (arg == "--format" && i + 1 < argc && argv[i + 1] != nullptr &&
        std::string_view(argv[i + 1]) == "json") {
      return true;
    }
  }
  return false;
}

std::string first_line(const std::string& text) {
  const std::size_t nl = text.find('\n');
  return nl == std::string::npos ? text : text.substr(0, nl);
}

}  // namespace

CommandLine parse_command_line(int argc, const char* const* argv) {
  CommandLine cl;
  cl.json_requested = scan_for_json(argc, argv);
  Options& o = cl.options;

  CLI::App app{
      "precision-probe: which numeric precisions can this machine really train in?\n"
      "Checks every visible NVIDIA GPU and the CPU: hardware support, matmul smoke tests\n"
      "against a float64 reference, and a verdict per precision (native, emulated,\n"
      "unsupported, failed, not_tested).",
      "precision-probe"};
  app.get_formatter()->column_width(34);
  std::string format = "text";
  std::string device = "gpu";
  std::vector<std::string> require;
  std::string seed;
  double timeout = o.timeout_s;
  bool no_color = false;
  bool version = false;
  app.add_option("--format", format, "Report format: text, json, markdown or prometheus")
      ->check(CLI::IsMember({"text", "json", "markdown", "prometheus"}))
      ->option_text("FORMAT");
  app.add_option("-o,--output", o.output, "Write the report to FILE (atomically) instead of stdout")
      ->option_text("FILE");
  std::string json_file, markdown_file, prom_file, text_file;
  std::vector<std::string> output_as;
  app.add_option("--json", json_file, "Also write the JSON report to FILE")->option_text("FILE");
  app.add_option("--markdown", markdown_file,
                 "Also write the Markdown report to FILE (CI job summaries)")
      ->option_text("FILE");
  app.add_option("--prom", prom_file,
                 "Also write Prometheus metrics to FILE (node_exporter textfile collector)")
      ->option_text("FILE");
  app.add_option("--text", text_file, "Also write the text report to FILE")->option_text("FILE");
  app.add_option("--output-as", output_as, "Also write FORMAT to FILE; repeatable (json:r.json)")
      ->option_text("FORMAT:FILE");
  app.add_option("--device", device,
                 "Devices to check and gate: all, gpu (default: every visible GPU), cpu, or GPU "
                 "indices such as 0,1 (may include cpu)")
      ->option_text("SEL");
  app.add_option("--require", require,
                 "Exit 1 unless every selected device runs these natively: fp32, tf32, fp16, "
                 "bf16, fp8 (both), fp8_e4m3, fp8_e5m2, fp4; comma separated, repeatable")
      ->option_text("MODES");
  app.add_flag("--quick", o.quick, "Driver facts and architecture verdicts only: no kernels run");
  app.add_flag("--nccl", o.nccl,
               "All-reduce in fp32, fp16 and bf16 across the selected GPUs through NCCL: exact "
               "results and bus bandwidth (needs two or more GPUs)");
  bool no_amp = false;
  app.add_flag(
      "--no-amp", no_amp,
      "Skip the mixed-precision training checks (amp_fp16, amp_bf16): matmul smoke tests only");
  app.add_flag("--bench", o.bench,
               "Measure TFLOP/s per precision (a large GEMM, CUDA events, median of many runs), "
               "the speed-up over fp32 and the share of the datasheet peak");
  std::int64_t bench_size = 0;
  app.add_option("--bench-size", bench_size,
                 "GEMM size for --bench, M=N=K (default 8192 on GPUs, 1024 on the CPU)")
      ->option_text("N");
  app.add_option("--seed", seed, "Seed for the random test inputs (default: a fresh one per run)")
      ->option_text("N");
  app.add_option("--timeout", timeout, "Bound on the whole run, in seconds (default 60)")
      ->option_text("SECONDS");
  double check_timeout = o.check_timeout_s;
  app.add_option("--check-timeout", check_timeout,
                 "Bound on any one check, in seconds (default 45): a hung kernel is stopped")
      ->option_text("SECONDS");
  app.add_flag("--no-color", no_color, "No colour in the text report (NO_COLOR is honoured too)");
  app.add_flag("-q,--quiet", o.quiet, "Print no report on stdout; the exit code tells the result");
  app.add_flag("--version", version, "Print the version and the LibTorch/CUDA it was built with");

  std::string cc;
  CLI::App* arch =
      app.add_subcommand("arch",
                         "Offline: the precision matrix for a compute capability, and whether this "
                         "LibTorch build carries kernels for it (e.g. arch 7.5)");
  arch->add_option("CC", cc, "Compute capability: 8.9, 89 or sm_89")->required();
  arch->fallthrough();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    cl.action = CommandLine::Action::help;
    cl.text = app.help();
    return cl;
  } catch (const CLI::CallForAllHelp&) {
    cl.action = CommandLine::Action::help;
    cl.text = app.help("", CLI::AppFormatMode::All);
    return cl;
  } catch (const CLI::ParseError& e) {
    cl.action = CommandLine::Action::usage_error;
    cl.text = printable(first_line(e.what()), 200);
    return cl;
  }
  if (version) {
    cl.action = CommandLine::Action::version;
    cl.text = version_text();
    return cl;
  }
  auto fail = [&cl](std::string message) {
    cl.action = CommandLine::Action::usage_error;
    cl.text = std::move(message);
    return cl;
  };
  o.format = parse_format(format).value_or(Format::text);
  for (const auto& [f, file] :
       {std::pair{Format::json, json_file}, std::pair{Format::markdown, markdown_file},
        std::pair{Format::prometheus, prom_file}, std::pair{Format::text, text_file}}) {
    if (!file.empty()) o.extra_outputs.emplace_back(f, file);
  }
  for (const std::string& spec : output_as) {
    const std::size_t colon = spec.find(':');
    const auto f = colon == std::string::npos ? std::nullopt : parse_format(spec.substr(0, colon));
    if (!f || colon + 1 >= spec.size()) {
      return fail(fmt::format(
          "--output-as: '{}' is not FORMAT:FILE (formats: text, json, markdown, prometheus)",
          printable(spec)));
    }
    o.extra_outputs.emplace_back(*f, spec.substr(colon + 1));
  }
  for (std::size_t i = 0; i < o.extra_outputs.size(); ++i) {
    for (std::size_t j = i + 1; j < o.extra_outputs.size(); ++j) {
      if (o.extra_outputs[i].second == o.extra_outputs[j].second) {
        return fail("two reports to the same file: " + printable(o.extra_outputs[i].second));
      }
    }
  }
  o.amp = !no_amp;
  o.color = no_color ? ColorMode::never : ColorMode::automatic;
  if (app.count("--output") > 0 && trim(o.output).empty()) return fail("-o: empty file name");
  if (o.output == "-") o.output.clear();

  const auto selection = parse_device_selection(device);
  if (!selection.error.empty()) return fail(selection.error);
  o.devices = selection.selection;

  if (!require.empty()) {
    const auto modes = parse_mode_list(join(require, ","));
    if (!modes.error.empty()) return fail("--require: " + modes.error);
    o.require = modes.modes;
  }
  if (!seed.empty()) {
    const auto value = parse_int(seed);
    if (!value || *value < 0)
      return fail(fmt::format("--seed: '{}' is not a non-negative integer", printable(seed)));
    o.seed = static_cast<std::uint64_t>(*value);
  }
  if (app.count("--bench-size") > 0) {
    if (bench_size < 16 || bench_size > 32768 || bench_size % 16 != 0) {
      return fail(fmt::format(
          "--bench-size: {} is out of range (a multiple of 16 from 16 to 32768)", bench_size));
    }
    o.bench_size = bench_size;
    o.bench = true;  // asking for a size asks for the benchmark
  }
  if (!(timeout > 0.0) || timeout > 86400.0) {
    return fail(fmt::format("--timeout: {} is out of range (0 < SECONDS <= 86400)", timeout));
  }
  o.timeout_s = timeout;
  if (!(check_timeout > 0.0) || check_timeout > 86400.0) {
    return fail(
        fmt::format("--check-timeout: {} is out of range (0 < SECONDS <= 86400)", check_timeout));
  }
  o.check_timeout_s = check_timeout;

  if (arch->parsed()) {
    o.command = Command::arch;
    o.arch_cc = cc;
    if (!parse_compute_capability(cc)) {
      return fail(fmt::format("arch: '{}' is not a compute capability (examples: 8.9, 89, sm_89)",
                              printable(cc)));
    }
  }
  return cl;
}

}  // namespace precision_probe
