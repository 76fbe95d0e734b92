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
                         "bf16,fp8", "--require", "fp16", "--no-color", "-q", "--quick", "--seed",
                         "42", "--timeout", "12.5"});
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
  EXPECT_TRUE(o.quick);
  EXPECT_EQ(o.seed, 42U);
  EXPECT_DOUBLE_EQ(o.timeout_s, 12.5);
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
      {{"--timeout", "-5"}, "--timeout: '-5' looks like an option"},
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

TEST(Cli, JsonIsNoticedEvenWhenParsingFails) {
  const auto cl = parse({"--format", "json", "--require", "fp7"});
  EXPECT_EQ(cl.action, Action::usage_error);
  EXPECT_TRUE(cl.json_requested);
  EXPECT_TRUE(parse({"--bogus", "--format=json"}).json_requested);
}

TEST(Cli, HelpVersionAndArch) {
  const auto help = parse({"--help"});
  EXPECT_EQ(help.action, Action::help);
  EXPECT_NE(help.text.find("--require"), std::string::npos);
  // Every mode --require accepts, every exit code and every environment variable.
  for (pp::Mode m : pp::all_modes()) {
    EXPECT_NE(help.text.find(std::string(pp::mode_key(m))), std::string::npos) << pp::mode_key(m);
  }
  EXPECT_NE(help.text.find("fp8 (fp8_e4m3 and fp8_e5m2)"), std::string::npos);
  for (const auto& m : pp::exit_code::kMeanings) {
    EXPECT_NE(help.text.find(std::to_string(m.code) + "  " + m.meaning), std::string::npos)
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

TEST(Cli, HostileArgumentsNeverCrash) {
  const std::string long_arg(100000, 'a');
  const auto cl = parse({"--require", long_arg});
  EXPECT_EQ(cl.action, Action::usage_error);
  EXPECT_LT(cl.text.size(), 400U);  // quoted input is cut
  EXPECT_EQ(parse({"--device", "\xff\xfe"}).action, Action::usage_error);
  EXPECT_EQ(parse({"--require", "bf16\nfp16"}).action, Action::usage_error);
  EXPECT_EQ(parse({"--device", "99999999999999999999"}).action, Action::usage_error);
}
