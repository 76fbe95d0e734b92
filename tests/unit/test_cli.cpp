#include <gtest/gtest.h>

#include "probe/cli/cli.hpp"
#include "probe/verdicts/exit_codes.hpp"

namespace pp = precision_probe;
using Action = pp::CommandLine::Action;

namespace {

pp::CommandLine parse(std::vector<std::string> args) {
  args.insert(args.begin(), "precision-probe");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return pp::parse_command_line(static_cast<int>(argv.size()), argv.data());
}

// The text with every run of spaces and line breaks as one space: help wraps at 80 columns.
std::string words(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (!space || (!out.empty() && out.back() != ' ')) out += space ? ' ' : c;
  }
  return out;
}

}  // namespace

TEST(Cli, DefaultsSelectEveryGpuAndGateNothing) {
  const auto cl = parse({});
  ASSERT_EQ(cl.action, Action::run);
  EXPECT_EQ(cl.options.format, pp::Format::text);
  EXPECT_TRUE(cl.options.devices.all_gpus);
  EXPECT_FALSE(cl.options.devices.cpu);
  EXPECT_TRUE(cl.options.require.empty());
  EXPECT_DOUBLE_EQ(cl.options.timeout_s, 60.0);
}

TEST(Cli, ParsesEveryFlag) {
  const auto cl = parse({"--format", "json", "-o", "r.json", "--device", "0,2,cpu", "--require",
                         "bf16,fp8", "--require", "fp16", "--no-color", "-q", "--seed", "42",
                         "--timeout", "12.5", "--check-timeout", "3"});
  ASSERT_EQ(cl.action, Action::run) << cl.text;
  const auto& o = cl.options;
  EXPECT_EQ(o.format, pp::Format::json);
  EXPECT_EQ(o.output, "r.json");
  EXPECT_FALSE(o.devices.all_gpus);
  EXPECT_TRUE(o.devices.cpu);
  EXPECT_EQ(o.devices.gpu_indices, (std::vector<int>{0, 2}));
  EXPECT_EQ(o.require, (std::vector<pp::Mode>{pp::Mode::bf16, pp::Mode::fp8_e4m3,
                                              pp::Mode::fp8_e5m2, pp::Mode::fp16}));
  EXPECT_EQ(o.color, pp::ColorMode::never);
  EXPECT_TRUE(o.quiet);
  EXPECT_FALSE(o.quick);
  EXPECT_EQ(o.seed, 42U);
  EXPECT_DOUBLE_EQ(o.timeout_s, 12.5);
  EXPECT_DOUBLE_EQ(o.check_timeout_s, 3.0);
  const auto quick =
      parse({"--quick", "--timeout", "5", "--check-timeout", "2", "--require", "bf16"});
  ASSERT_EQ(quick.action, Action::run) << quick.text;
  EXPECT_TRUE(quick.options.quick);
}

// A list is the union of its entries: the keywords may be combined as indices are.
TEST(Cli, DeviceListsCombineKeywordsAndIndices) {
  const auto both = parse({"--device", "gpu,cpu"});
  ASSERT_EQ(both.action, Action::run) << both.text;
  EXPECT_TRUE(both.options.devices.all_gpus);
  EXPECT_TRUE(both.options.devices.cpu);
  const auto gpus = parse({"--device", "cpu,GPU,0"}).options.devices;
  EXPECT_TRUE(gpus.all_gpus);
  EXPECT_TRUE(gpus.gpu_indices.empty());
  const auto all = parse({"--device", "0,all"}).options.devices;
  EXPECT_TRUE(all.all_gpus);
  EXPECT_TRUE(all.cpu);
  EXPECT_EQ(parse({"--device", "gpu,tpu"}).text,
            "--device: 'tpu' is not a device (use all, gpu, cpu or GPU indices such as 0,1)");
}

// One rule: a combination that cannot do what it says is refused, naming both options.
TEST(Cli, OptionsThatCannotDoWhatTheySayTogetherAreRefused) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--quick", "--bench"}, "--bench needs kernels to run and --quick runs none"},
      {{"--bench-size", "16", "--quick"}, "--bench-size needs kernels to run and --quick"},
      {{"--quick", "--nccl"}, "--nccl needs kernels to run and --quick runs none"},
      {{"--quick", "--soak", "5"}, "--soak needs kernels to run and --quick runs none"},
      {{"--quick", "--no-amp"}, "--no-amp needs kernels to run and --quick runs none"},
      {{"--quick", "--seed", "7"}, "--seed needs kernels to run and --quick runs none"},
      {{"--nfd-ttl", "2h"}, "--nfd-ttl is how long node labels stand, but none are written"},
      {{"--nfd-ttl", "2h", "--json", "r.json"}, "--nfd-ttl is how long node labels stand"},
  };
  for (const auto& [args, message] : cases) {
    const auto cl = parse(args);
    EXPECT_EQ(cl.action, Action::usage_error) << args.front() << " " << args.back();
    EXPECT_NE(cl.text.find(message), std::string::npos) << cl.text;
    EXPECT_EQ(cl.text.find('\n'), std::string::npos) << cl.text;
  }
  // What each does alone, or with what it needs, stands.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--bench-size", "16", "--bench"},
        {"--soak", "5", "--bench-size", "64"},
        {"--nccl", "--no-amp", "--seed", "7"},
        {"--nfd", "labels", "--nfd-ttl", "2h"},
        {"--format", "nfd", "--nfd-ttl", "90m"},
        {"--quick", "--nfd", "labels", "--nfd-ttl", "2h"}}) {
    EXPECT_EQ(parse(args).action, Action::run) << parse(args).text;
  }
  // A size is the benchmark's or the soak's: it asks for neither.
  EXPECT_FALSE(parse({"--soak", "5", "--bench-size", "64"}).options.bench);
}

// An option that would do nothing is refused, as --quick --bench is: --bench-size sizes the GEMMs
// of --bench and --soak, and without either the probe would run and ignore it.
TEST(Cli, ABenchSizeWithoutBenchOrSoakIsRefused) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--bench-size", "64"}, {"--bench-size=64", "--device", "cpu"}}) {
    const auto cl = parse(args);
    EXPECT_EQ(cl.action, Action::usage_error) << args.front();
    EXPECT_EQ(cl.text,
              "--bench-size is the GEMM size of --bench and --soak, but neither is given (add "
              "--bench or --soak SECONDS)");
  }
  // --quick is said first: it refuses the size whatever else is given.
  EXPECT_NE(parse({"--quick", "--bench-size", "64"}).text.find("--quick runs none"),
            std::string::npos);
  const auto bench = parse({"--bench", "--bench-size", "64"});
  ASSERT_EQ(bench.action, Action::run) << bench.text;
  EXPECT_EQ(bench.options.bench_size, 64);
}

// No check can finish in less than a worker's start: a --check-timeout below 1 s is refused, with
// the least it takes; 1 s is taken.
TEST(Cli, ACheckTimeoutNoCheckCanMeetIsRefused) {
  for (const char* value : {"0.001", "0.5", "0.999"}) {
    const auto cl = parse({"--check-timeout", value});
    EXPECT_EQ(cl.action, Action::usage_error) << value;
    EXPECT_EQ(cl.text, std::string("--check-timeout: '") + value +
                           "' is shorter than any check can finish in: give 1 s or more (a "
                           "worker's start alone, loading LibTorch, takes about half a second)");
  }
  const auto least = parse({"--check-timeout", "1"});
  ASSERT_EQ(least.action, Action::run) << least.text;
  EXPECT_DOUBLE_EQ(least.options.check_timeout_s, 1.0);
  EXPECT_NE(parse({"--check-timeout", "0"}).text.find("is not a number of seconds above 0"),
            std::string::npos);
}

// A negative number is the option's value, refused by the option's own range; nothing is suggested
// that would be refused in turn (--seed=-1 was). Only a file's name gets the --name=./VALUE form.
TEST(Cli, ANegativeNumberIsRefusedByItsRangeWithNoBrokenSuggestion) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--seed", "-1"}, "--seed: '-1' is not a whole number from 0 to 9007199254740991"},
      {{"--timeout", "-5"}, "--timeout: '-5' is not a number of seconds above 0 and up to 86400"},
      {{"--bench", "--bench-size", "-16"},
       "--bench-size: '-16' is not a multiple of 16 from 16 to 32768"},
      {{"--soak", "-3"}, "--soak: '-3' is not a number of seconds above 0 and up to 604800"},
      {{"--seed", "-x"}, "--seed: '-x' looks like an option, not a N"},
  };
  for (const auto& [args, message] : cases) {
    const auto cl = parse(args);
    EXPECT_EQ(cl.action, Action::usage_error) << args.back();
    EXPECT_EQ(cl.text, message);
  }
  EXPECT_EQ(parse({"--json", "-1"}).text,
            "--json: '-1' looks like an option, not a FILE (write --json=./-1 if you mean it)");
}

// The words of a vocabulary are read in any case, everywhere; the report keeps the lower-case one.
TEST(Cli, VocabularyValuesAreCaseInsensitive) {
  const auto cl =
      parse({"--format", "JSON", "--device", "CPU,0", "--require", "BF16,Fp8", "--soak", "1",
             "--soak-modes", "FP32", "--output-as", "MarkDown:r.md", "--output-as", "PROM:m.prom"});
  ASSERT_EQ(cl.action, Action::run) << cl.text;
  EXPECT_TRUE(cl.json_requested);
  EXPECT_EQ(cl.options.format, pp::Format::json);
  EXPECT_TRUE(cl.options.devices.cpu);
  EXPECT_EQ(cl.options.devices.gpu_indices, std::vector<int>{0});
  EXPECT_EQ(cl.options.require,
            (std::vector<pp::Mode>{pp::Mode::bf16, pp::Mode::fp8_e4m3, pp::Mode::fp8_e5m2}));
  EXPECT_EQ(cl.options.soak_modes, std::vector<pp::Mode>{pp::Mode::fp32});
  ASSERT_EQ(cl.options.extra_outputs.size(), 2U);
  EXPECT_EQ(cl.options.extra_outputs[0].format, pp::Format::markdown);
  EXPECT_EQ(cl.options.extra_outputs[0].path, "r.md");  // the file's name keeps its case
  EXPECT_EQ(cl.options.extra_outputs[1].format, pp::Format::prometheus);
  EXPECT_EQ(parse({"--format=Text"}).options.format, pp::Format::text);
  // A usage error after --format JSON is a JSON document, as after --format json.
  EXPECT_TRUE(parse({"--format=JSON", "--bogus"}).json_requested);
  const auto arch = parse({"arch", "SM_90", "--format", "Json", "--require", "BF16"});
  ASSERT_EQ(arch.action, Action::run) << arch.text;
  EXPECT_EQ(arch.options.format, pp::Format::json);
  EXPECT_EQ(arch.options.require, std::vector<pp::Mode>{pp::Mode::bf16});
  const auto summarize = parse({"summarize", "--format", "MD", "--require", "AMP", "r.json"});
  ASSERT_EQ(summarize.action, Action::run) << summarize.text;
  EXPECT_EQ(summarize.summarize.format, pp::Format::markdown);
  EXPECT_EQ(summarize.summarize.require,
            (std::vector<pp::Mode>{pp::Mode::amp_fp16, pp::Mode::amp_bf16}));
  EXPECT_TRUE(parse({"summarize", "--format", "JSON"}).json_requested);
  EXPECT_EQ(parse({"summarize", "--format", "PROM", "r.json"}).action, Action::usage_error);
}

TEST(Cli, DeviceKeywords) {
  EXPECT_TRUE(parse({"--device", "all"}).options.devices.cpu);
  EXPECT_TRUE(parse({"--device", "all"}).options.devices.all_gpus);
  const auto cpu = parse({"--device", "cpu"}).options.devices;
  EXPECT_TRUE(cpu.cpu);
  EXPECT_FALSE(cpu.all_gpus);
  EXPECT_TRUE(cpu.gpu_indices.empty());
  EXPECT_TRUE(parse({"--device", "gpu"}).options.devices.all_gpus);
  EXPECT_FALSE(parse({"--device", "gpu"}).options.devices.cpu);
}

TEST(Cli, BadInputIsAOneLineUsageError) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--format", "xml"}, "--format"},
      {{"--require", "fp7"}, "unknown mode 'fp7'"},
      {{"--device", "x"}, "--device: 'x' is not a device"},
      {{"--device", "-1"}, "--device"},
      {{"--device", ""}, "--device: empty value"},
      {{"--timeout", "0"}, "--timeout"},
      {{"--timeout", "-5"}, "--timeout"},
      {{"--timeout", "abc"}, "--timeout"},
      {{"--seed", "-3"}, "--seed"},
      {{"--bogus"}, "--bogus"},
      {{"--format", "json", "--format", "text"}, "--format"},
      {{"arch", "8.10"}, "arch: '8.10' is not a compute capability"},
      {{"arch"}, "arch: the compute capability is missing"},
      {{"-o", ""}, "-o: empty value"},
      {{"--output", ""}, "--output: empty value"},
      {{"--json", ""}, "--json: empty value"},
      {{"--seed", ""}, "--seed: empty value"},
      {{"--format", ""}, "--format: empty value"},
      {{"--json", "-q"}, "--json: '-q' looks like an option, not a FILE (write --json=./-q"},
      {{"--output", "--quick"}, "--output: '--quick' looks like an option"},
      {{"--timeout", "-5"}, "--timeout: '-5' is not a number of seconds"},
      {{"--json"}, "--json: FILE is missing"},
      {{"--seed", "0x10"}, "--seed: '0x10' is not a whole number"},
      {{"--seed", "1e3"}, "--seed: '1e3' is not a whole number"},
      {{"--seed", "+5"}, "--seed: '+5' is not a whole number"},
      {{"--seed", "9007199254740992"}, "--seed"},
      {{"--timeout", "1e3"}, "--timeout: '1e3' is not a number of seconds"},
      {{"--timeout", "0x10"}, "--timeout"},
      {{"--check-timeout", "inf"}, "--check-timeout"},
      {{"--bench-size", "0x100"}, "--bench-size: '0x100' is not a multiple of 16"},
      {{"--bench-size", "100"}, "--bench-size: '100' is not a multiple of 16"},
      {{"--quick=yes"}, "--quick takes no value"},
      {{"-qx"}, "-q takes no value"},
      {{"--device", "0", "--device", "1"}, "--device is given more than once"},
      {{"stray"}, "unexpected argument 'stray'"},
      {{"arch", "9.0", "extra"}, "arch: unexpected argument 'extra'"},
      {{"arch", "9.0", "--device", "0"}, "--device does not apply to arch"},
      {{"arch", "9.0", "--bench"}, "--bench does not apply to arch"},
      {{"-q", "--json", "-"}, "-q keeps stdout silent, but --json - writes to it"},
      {{"--output-as", "json"}, "--output-as: 'json' is not FORMAT:FILE"},
      // What CLI11 checks itself (the option table's excludes, needs, arity, subcommands).
      {{"--soak-modes", "bf16"}, "--soak-modes needs --soak SECONDS"},
      {{"--json=a.json", "--json", "b.json"}, "--json is given more than once"},
      {{"-o", "a", "--output", "b"}, "--output is given more than once"},
      {{"--output=", "r.json"}, "--output: empty value"},  // not the next word taken as its value
      {{"--nfd-ttl", "30s", "--nfd", "l"}, "--nfd-ttl: '30s' is not a duration from 1m to 366d"},
      {{"arch", "9.0", "--format", "nfd"}, "arch: node labels (nfd) come from a run on the node"},
      {{"arch", "9.0", "--quick"}, "--quick does not apply to arch, which runs no kernels"},
      {{"--bench", "arch", "9.0"}, "--bench does not apply to arch"},
      {{"arch", "9.0", "summarize", "r.json"}, "arch: unexpected argument 'summarize'"},
      {{"--quick", "summarize", "r.json"}, "summarize comes first, its options after it"},
      {{"summarize"}, "summarize: no reports given"},
      {{"summarize", "-o"}, "-o: FILE is missing"},
      {{"summarize", "--bench", "r.json"}, "summarize: unknown option '--bench'"},
      {{"summarize", "--format", "json", "--format=text", "r.json"},
       "--format is given more than once"},
      {{"summarize", "--max-age=", "r.json"}, "--max-age: empty value"},
      {{"summarize", "--quiet", "--output=-", "r.json"},
       "--quiet keeps stdout silent, but --output - writes to it"},
      {{"summarize", "-", "r.json", "-"}, "summarize: - (standard input) is named more than once"},
  };
  for (const auto& [args, expected] : cases) {
    const auto cl = parse(args);
    EXPECT_EQ(cl.action, Action::usage_error) << args[0];
    EXPECT_NE(cl.text.find(expected), std::string::npos)
        << "'" << cl.text << "' lacks '" << expected << "'";
    EXPECT_EQ(cl.text.find('\n'), std::string::npos) << cl.text;
  }
}

TEST(Cli, ValuesThatLookLikeFlagsNeedTheEqualsForm) {
  const auto cl = parse({"--json=./-q", "--output-as", "json:-", "--markdown", "-"});
  ASSERT_EQ(cl.action, Action::run) << cl.text;
  ASSERT_EQ(cl.options.extra_outputs.size(), 3U);
  EXPECT_EQ(cl.options.extra_outputs[0].path, "./-q");
  EXPECT_EQ(cl.options.extra_outputs[0].flag, "--json");
  EXPECT_EQ(cl.options.extra_outputs[1].path, "-");  // '-' is stdout everywhere
  EXPECT_EQ(cl.options.extra_outputs[2].path, "-");
  EXPECT_FALSE(cl.options.quiet);
  const auto timeout = parse({"--timeout=0.5", "--check-timeout", "30."});
  ASSERT_EQ(timeout.action, Action::run) << timeout.text;
  EXPECT_DOUBLE_EQ(timeout.options.timeout_s, 0.5);
  EXPECT_DOUBLE_EQ(timeout.options.check_timeout_s, 30.0);
  const auto o = parse({"--output", "-"});
  ASSERT_EQ(o.action, Action::run) << o.text;
  EXPECT_EQ(o.options.output, "");  // stdout
  EXPECT_EQ(parse({"--output", "r.txt"}).options.output_flag, "--output");
}

TEST(Cli, ArchGatesOnItsVerdicts) {
  const auto cl = parse({"arch", "7.5", "--require", "bf16", "--format", "json"});
  ASSERT_EQ(cl.action, Action::run) << cl.text;
  EXPECT_EQ(cl.options.command, pp::Command::arch);
  EXPECT_EQ(cl.options.require, std::vector<pp::Mode>{pp::Mode::bf16});
}

// summarize's words go to SummarizeOptions; after the subcommand, "arch" and "summarize" are
// words like any other (a directory named arch).
TEST(Cli, SummarizeHasItsOwnOptions) {
  const auto cl =
      parse({"summarize", "--format", "md", "-o", "fleet.md", "--max-age", "1h30m", "--require",
             "bf16,fp8", "--require=bf16", "--quiet", "n0.json", "-", "arch", "summarize"});
  ASSERT_EQ(cl.action, Action::run) << cl.text;
  ASSERT_EQ(cl.program, pp::CommandLine::Program::summarize);
  const pp::SummarizeOptions& s = cl.summarize;
  EXPECT_EQ(s.format, pp::Format::markdown);
  EXPECT_EQ(s.output, "fleet.md");
  EXPECT_EQ(s.output_flag, "-o");
  EXPECT_EQ(s.max_age_s, 5400);
  EXPECT_EQ(s.require, (std::vector<pp::Mode>{pp::Mode::bf16, pp::Mode::fp8_e4m3,
                                              pp::Mode::fp8_e5m2}));  // each mode once
  EXPECT_TRUE(s.quiet);
  EXPECT_EQ(s.quiet_flag, "--quiet");
  EXPECT_EQ(s.sources, (std::vector<std::string>{"n0.json", "-", "arch", "summarize"}));
  const auto stdout_named = parse({"summarize", "--output", "-", "n0.json", "--", "-n1.json"});
  ASSERT_EQ(stdout_named.action, Action::run) << stdout_named.text;
  EXPECT_EQ(stdout_named.summarize.output, "");  // - is stdout
  EXPECT_EQ(stdout_named.summarize.sources, (std::vector<std::string>{"n0.json", "-n1.json"}));
  EXPECT_EQ(parse({"--device", "cpu"}).program, pp::CommandLine::Program::probe);
}

TEST(Cli, JsonIsNoticedEvenWhenParsingFails) {
  const auto cl = parse({"--format", "json", "--require", "fp7"});
  EXPECT_EQ(cl.action, Action::usage_error);
  EXPECT_TRUE(cl.json_requested);
  EXPECT_TRUE(parse({"--bogus", "--format=json"}).json_requested);
  // summarize's error is summarize's document.
  const auto summarize = parse({"summarize", "--format", "json"});
  EXPECT_EQ(summarize.action, Action::usage_error);
  EXPECT_TRUE(summarize.json_requested);
  EXPECT_EQ(summarize.program, pp::CommandLine::Program::summarize);
  EXPECT_TRUE(parse({"summarize", "-q", "--bogus"}).quiet);
  // -q in a bundle of flags is -q too: help asked for with it prints nothing.
  EXPECT_TRUE(parse({"-hq"}).quiet);
  EXPECT_TRUE(parse({"summarize", "-hq"}).quiet);
  EXPECT_FALSE(parse({"-h"}).quiet);
}

// "--" is for summarize's reports only: before arch or summarize, CLI11 read the words after it as
// no command at all, and the probe ran here (`-- arch 7.5 --require bf16` exited 0).
TEST(Cli, DoubleDashIsRefusedButBeforeSummarizesReports) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--", "arch", "7.5", "--require", "bf16"},
        {"--", "summarize", "r.json"},
        {"--quick", "--", "--format", "json"},
        {"arch", "9.0", "--", "--quick"}}) {
    const auto cl = parse(args);
    EXPECT_EQ(cl.action, Action::usage_error) << args[1];
    EXPECT_EQ(cl.text,
              "'--' ends the options only before summarize's reports (precision-probe summarize "
              "[OPTIONS] -- FILE...); the probe and arch take no words after it")
        << args[1];
  }
  const auto reports = parse({"summarize", "--format", "json", "--", "-a.json", "--b.json"});
  EXPECT_EQ(reports.action, Action::run) << reports.text;
  EXPECT_EQ(reports.summarize.sources, (std::vector<std::string>{"-a.json", "--b.json"}));
}

// An unknown option is named even where a word the command needs is missing too.
TEST(Cli, AnUnknownOptionIsNamedBeforeAMissingWord) {
  EXPECT_EQ(parse({"summarize", "--bogus"}).text,
            "summarize: unknown option '--bogus' (precision-probe summarize --help lists them)");
  EXPECT_EQ(parse({"arch", "--bogus"}).text,
            "unknown option '--bogus' (precision-probe --help lists them)");
  EXPECT_EQ(parse({"summarize"}).text,
            "summarize: no reports given (name files, directories, or - for JSON Lines on stdin)");
}

// Help and the version are what was asked for, whatever else the line holds; the help is the
// one of the command it names, before or after --help.
TEST(Cli, HelpAndTheVersionAreAnsweredWhateverElseTheLineHolds) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> helps = {
      {{"--format", "xml", "--help"}, "Usage: precision-probe [OPTIONS]"},
      {{"--quick=yes", "-h"}, "Usage: precision-probe [OPTIONS]"},
      {{"--help", "summarize"}, "Usage: precision-probe summarize [OPTIONS]"},
      {{"summarize", "--format", "prometheus", "--help"}, "Usage: precision-probe summarize"},
      {{"summarize", "-h"}, "Usage: precision-probe summarize [OPTIONS]"},
      {{"arch", "8.10", "--help"}, "Usage: precision-probe arch CC"},
  };
  for (const auto& [args, usage] : helps) {
    const auto cl = parse(args);
    EXPECT_EQ(cl.action, Action::help) << args.front() << " " << cl.text;
    EXPECT_NE(cl.text.find(usage), std::string::npos) << args.front() << ":\n" << cl.text;
  }
  EXPECT_EQ(parse({"--version", "--bogus"}).action, Action::version);
  EXPECT_EQ(parse({"--device", "x", "--version"}).action, Action::version);
  // Each command answers it, before or after its own words.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"summarize", "--version", "fleet/"},
        {"summarize", "--format", "xml", "--version"},
        {"--version", "summarize"},
        {"arch", "9.0", "--version"}}) {
    const auto cl = parse(args);
    EXPECT_EQ(cl.action, Action::version) << args[1] << " " << cl.text;
    EXPECT_NE(cl.text.find("precision-probe 0."), std::string::npos) << args[1];
  }
}

TEST(Cli, SummarizeHelpListsItsOwnOptions) {
  const std::string help = parse({"summarize", "--help"}).text;
  for (const char* option : {"--format FORMAT", "-o,--output FILE", "--max-age DURATION",
                             "--require MODES", "-q,--quiet", "--version", "-h,--help"}) {
    EXPECT_NE(help.find(option), std::string::npos) << option;
  }
  EXPECT_EQ(help.find("--device"), std::string::npos);  // the probe's
  EXPECT_NE(words(help).find("the most severe wins: 2, 3, 4, 6, 1, 0."), std::string::npos);
}

TEST(Cli, HelpVersionAndArch) {
  auto help = parse({"--help"});
  help.text = words(help.text);
  EXPECT_EQ(help.action, Action::help);
  EXPECT_NE(help.text.find("--require"), std::string::npos);
  // Every mode --require accepts, every exit code and every environment variable.
  for (pp::Mode m : pp::all_modes()) {
    EXPECT_NE(help.text.find(std::string(pp::mode_key(m))), std::string::npos) << pp::mode_key(m);
  }
  EXPECT_NE(help.text.find("fp8 (fp8_e4m3 and fp8_e5m2)"), std::string::npos);
  for (const auto& m : pp::exit_code::kMeanings) {
    EXPECT_NE(help.text.find(words(std::to_string(m.code) + "  " + m.meaning)), std::string::npos)
        << m.code;
  }
  for (const auto& v : pp::kEnvironmentVariables) {
    EXPECT_NE(help.text.find(v.name), std::string::npos) << v.name;
  }
  EXPECT_EQ(parse({"-q", "--help"}).quiet, true);
  const auto version = parse({"--version"});
  EXPECT_EQ(version.action, Action::version);
  EXPECT_NE(version.text.find("precision-probe 0."), std::string::npos);
  EXPECT_NE(version.text.find("LibTorch"), std::string::npos);
  const auto arch = parse({"arch", "sm_89", "--format", "json"});
  ASSERT_EQ(arch.action, Action::run) << arch.text;
  EXPECT_EQ(arch.options.command, pp::Command::arch);
  EXPECT_EQ(arch.options.arch_cc, "sm_89");
  EXPECT_EQ(arch.options.format, pp::Format::json);
}

// Help is for what was asked about, and fits 80 columns.
TEST(Cli, ArchHelpIsArchsOwnAndEveryHelpFitsEightyColumns) {
  for (const auto& args :
       {std::vector<std::string>{"arch", "--help"}, {"arch", "9.0", "-h"}, {"--help", "arch"}}) {
    const auto help = parse(args);
    ASSERT_EQ(help.action, Action::help);
    EXPECT_EQ(help.text.rfind("Usage: precision-probe arch CC", 0), 0U) << help.text;
    EXPECT_NE(help.text.find("--require MODES"), std::string::npos);
    EXPECT_NE(help.text.find("amp_bf16"), std::string::npos);  // the modes --require takes
    EXPECT_EQ(help.text.find("--bench"), std::string::npos);   // arch runs no kernels
    EXPECT_EQ(help.text.find("--soak"), std::string::npos);
  }
  const std::string top = parse({"--help"}).text;
  EXPECT_NE(top.find("--bench"), std::string::npos);
  EXPECT_NE(top.find("PRECISION_PROBE_INJECT_FAULT"), std::string::npos);
  for (const std::string& text :
       {top, parse({"arch", "--help"}).text, parse({"summarize", "--help"}).text}) {
    std::size_t start = 0;
    while (start < text.size()) {
      const std::size_t end = std::min(text.find('\n', start), text.size());
      EXPECT_LE(end - start, 80U) << text.substr(start, end - start);
      start = end + 1;
    }
  }
}

TEST(Cli, HostileArgumentsNeverCrash) {
  const std::string long_arg(100000, 'a');
  const auto cl = parse({"--require", long_arg});
  EXPECT_EQ(cl.action, Action::usage_error);
  EXPECT_LT(cl.text.size(), 400U);  // quoted input is cut
  EXPECT_EQ(parse({"--device", "\xff\xfe"}).action, Action::usage_error);
  EXPECT_EQ(parse({"--require", "bf16\nfp16"}).action, Action::usage_error);
  EXPECT_EQ(parse({"--device", "99999999999999999999"}).action, Action::usage_error);
}
