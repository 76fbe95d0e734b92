#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "arch/arch.hpp"
#include "strings/strings.hpp"

namespace pp = precision_probe;
using pp::ComputeCapability;
using pp::Hardware;
using pp::Mode;

TEST(Arch, ParsesEveryCommonSpelling) {
  for (const char* text : {"8.9", "89", "sm_89", "SM_89", "sm89", "compute_89", " 8.9 "}) {
    const auto cc = ComputeCapability::parse(text);
    ASSERT_TRUE(cc.has_value()) << text;
    EXPECT_EQ(*cc, (ComputeCapability{8, 9})) << text;
    EXPECT_EQ(cc->to_string(), "8.9");
  }
  EXPECT_EQ(*ComputeCapability::parse("10.0"), (ComputeCapability{10, 0}));
  EXPECT_EQ(*ComputeCapability::parse("sm_120"), (ComputeCapability{12, 0}));
  EXPECT_EQ(ComputeCapability::from_number(103), (ComputeCapability{10, 3}));
}

TEST(Arch, RefusesMalformedCapabilities) {
  for (const char* text : {"", "8", "8.", ".9", "8.10", "abc", "8.9.1", "-8.9", "0.0", "sm_",
                           "sm_9", "1000", "8,9", "9.0a", "sm_90a", "089", "sm_089"}) {
    EXPECT_FALSE(ComputeCapability::parse(text).has_value()) << "'" << text << "'";
  }
}

// A compute capability past the precision matrix's (and the fat binaries') last is one, but not one
// the matrix knows: `arch` refuses it.
TEST(Arch, KnowsTheCapabilitiesOfTheMatrixAlone) {
  EXPECT_TRUE(ComputeCapability::parse("15.9")->known());
  EXPECT_TRUE(ComputeCapability::parse("1.0")->known());
  EXPECT_FALSE(ComputeCapability::parse("16.0")->known());
  EXPECT_FALSE(ComputeCapability::parse("sm_900")->known());
}

TEST(Arch, ReadsTargetsExactlyAsNamed) {
  const auto a = pp::ArchTarget::parse("sm_90a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->cc, (ComputeCapability{9, 0}));
  EXPECT_EQ(a->variant, 'a');
  EXPECT_FALSE(a->ptx);
  const auto ptx = pp::ArchTarget::parse("compute_120f");
  ASSERT_TRUE(ptx.has_value());
  EXPECT_TRUE(ptx->ptx);
  EXPECT_EQ(ptx->to_string(), "compute_120f");
  for (const char* text :
       {"SM_90", "sm_90 ", "sm90", "sm_090", "sm_9", "8.9", "sm_90b", "compute_"}) {
    EXPECT_FALSE(pp::ArchTarget::parse(text).has_value()) << "'" << text << "'";
  }
}

TEST(Versions, ReadTheMajorAndMinorAVersionStartsWith) {
  EXPECT_EQ(pp::Version::parse("2.11.0+cu130"), (pp::Version{2, 11}));
  EXPECT_EQ(pp::Version::parse(" 13.0 "), (pp::Version{13, 0}));
  EXPECT_EQ(pp::Version::parse("12.8"), (pp::Version{12, 8}));
  for (const char* text : {"", "2", "2.", ".1", "a.b", "+2.9", "1234.0", "2,9"}) {
    EXPECT_FALSE(pp::Version::parse(text).has_value()) << "'" << text << "'";
  }
  // CUDA's numbers, as the driver and the runtime give them.
  EXPECT_EQ(pp::Version::from_cuda_number(13000), (pp::Version{13, 0}));
  EXPECT_EQ(pp::Version::from_cuda_number(12040), (pp::Version{12, 4}));
  EXPECT_EQ((pp::Version{12, 4}).to_string(), "12.4");
  EXPECT_EQ(pp::version_or_empty(std::optional<pp::Version>()), "");
}

// Reads the table of docs/precision-matrix.md and checks every cell against the code.
TEST(Arch, MatrixAgreesWithTheTableInDocs) {
  std::ifstream in(PP_SOURCE_DIR "/docs/precision-matrix.md");
  ASSERT_TRUE(in) << "docs/precision-matrix.md is missing";
  std::vector<std::string> header;
  std::string line;
  int rows = 0;
  std::vector<std::string> seen;
  while (std::getline(in, line)) {
    if (!pp::starts_with(line, "|")) continue;
    std::vector<std::string> cells;
    for (const std::string& c : pp::split(line, '|')) cells.push_back(pp::trim(c));
    cells = std::vector<std::string>(cells.begin() + 1, cells.end() - 1);
    if (!cells.empty() && cells[0] == "cc") {
      header = cells;
      continue;
    }
    const auto cc = cells.empty() ? std::nullopt : ComputeCapability::parse(cells[0]);
    if (!cc || header.empty() || cells.size() != header.size()) continue;
    ++rows;
    seen.push_back(cells[0]);
    EXPECT_TRUE(pp::known_gpu_cc(*cc)) << "cc " << cells[0] << " is not in kKnownCcs";
    EXPECT_EQ(pp::architecture_name(*cc), cells[1]) << "cc " << cells[0];
    for (std::size_t col = 3; col < header.size(); ++col) {
      const auto mode = pp::parse_mode(header[col]);
      ASSERT_TRUE(mode.has_value()) << "unknown column " << header[col];
      EXPECT_EQ(pp::to_string(pp::gpu_hardware_support(*cc, *mode).hardware), cells[col])
          << "cc " << cells[0] << ", " << header[col];
    }
  }
  // A column for every mode of the table, in its order.
  std::vector<std::string> columns(header.begin() + std::min<std::size_t>(3, header.size()),
                                   header.end());
  std::vector<std::string> keys;
  for (pp::Mode mode : pp::all_modes()) keys.emplace_back(pp::mode_key(mode));
  EXPECT_EQ(columns, keys) << "docs/precision-matrix.md needs a column per mode";
  // The capabilities the issue names must all be in the table.
  for (const char* wanted : {"6.0", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0"}) {
    EXPECT_NE(std::find(seen.begin(), seen.end(), wanted), seen.end()) << wanted;
  }
  EXPECT_GE(rows, 9);
}

// The compute capabilities that exist are a closed table: one no GPU has gets no family's verdicts
// (8.8 is not 8.6's), one newer than the last known none at all (13.0 is not 12.x's); no mode is
// native on either, each says why.
TEST(Arch, AnUnknownComputeCapabilityGetsNoVerdictOfAFamily) {
  for (const ComputeCapability cc :
       {ComputeCapability{8, 8}, ComputeCapability{9, 9}, ComputeCapability{8, 3},
        ComputeCapability{10, 2}, ComputeCapability{4, 0}, ComputeCapability{13, 0},
        ComputeCapability{14, 0}, ComputeCapability{15, 9}}) {
    EXPECT_FALSE(pp::known_gpu_cc(cc)) << cc.to_string();
    EXPECT_EQ(pp::architecture_name(cc), "unknown") << cc.to_string();
    for (Mode mode : pp::all_modes()) {
      const auto verdict = pp::gpu_hardware_support(cc, mode);
      EXPECT_EQ(verdict.hardware, Hardware::unsupported)
          << cc.to_string() << " " << pp::mode_key(mode);
      EXPECT_EQ(verdict.reason.rfind("cc " + cc.to_string() + ": unknown compute capability", 0),
                0U)
          << verdict.reason;
    }
  }
  EXPECT_NE(pp::unknown_cc_reason({8, 8}).find("no NVIDIA GPU has it"), std::string::npos);
  EXPECT_NE(pp::unknown_cc_reason({14, 0}).find("newer than every one this precision-probe knows "
                                                "(1.0 to 12.1)"),
            std::string::npos);
  // Those that exist keep their rules: Jetson Thor's two numbers, GB10, Orin, Xavier.
  for (const ComputeCapability cc :
       {ComputeCapability{10, 1}, ComputeCapability{11, 0}, ComputeCapability{12, 1},
        ComputeCapability{8, 7}, ComputeCapability{7, 2}, ComputeCapability{3, 7}}) {
    EXPECT_TRUE(pp::known_gpu_cc(cc)) << cc.to_string();
    EXPECT_EQ(pp::unknown_cc_reason(cc), "");
    EXPECT_EQ(pp::gpu_hardware_support(cc, Mode::fp32).hardware, Hardware::native);
  }
  EXPECT_EQ(pp::architecture_name({10, 1}), "Blackwell");
  EXPECT_EQ(pp::gpu_hardware_support({10, 1}, Mode::nvfp4).hardware, Hardware::native);
  // The table is in order, each capability once; docs/precision-matrix.md lists every one.
  std::ifstream in(PP_SOURCE_DIR "/docs/precision-matrix.md");
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  const std::size_t from = text.find("## Compute capabilities the probe does not know");
  ASSERT_NE(from, std::string::npos);
  const std::string listed = text.substr(from, text.find("Any other is", from) - from);
  // Listed as a word of its own: 5.3 is not 15.3, 1.0 not 1.05.
  auto listed_has = [&listed](const std::string& cc) {
    for (std::size_t at = listed.find(cc); at != std::string::npos; at = listed.find(cc, at + 1)) {
      const bool starts = at == 0 || std::isdigit(static_cast<unsigned char>(listed[at - 1])) == 0;
      const std::size_t end = at + cc.size();
      if (starts &&
          (end == listed.size() || std::isdigit(static_cast<unsigned char>(listed[end])) == 0)) {
        return true;
      }
    }
    return false;
  };
  for (std::size_t i = 0; i < pp::kKnownCcs.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(pp::kKnownCcs[i - 1].cc, pp::kKnownCcs[i].cc) << i;
    }
    const std::string cc = pp::kKnownCcs[i].cc.to_string();
    EXPECT_TRUE(listed_has(cc)) << cc << " is not listed";
  }
}

TEST(Arch, HardwareVerdictsCarryReasonsWhenNotNative) {
  const auto t4_bf16 = pp::gpu_hardware_support({7, 5}, Mode::bf16);
  EXPECT_EQ(t4_bf16.hardware, Hardware::emulated);
  EXPECT_NE(t4_bf16.reason.find("cc 7.5"), std::string::npos);
  EXPECT_NE(t4_bf16.reason.find("slower than FP32"), std::string::npos);
  const auto a100_fp8 = pp::gpu_hardware_support({8, 0}, Mode::fp8_e4m3);
  EXPECT_EQ(a100_fp8.hardware, Hardware::unsupported);
  EXPECT_NE(a100_fp8.reason.find("8.9"), std::string::npos);
  EXPECT_TRUE(pp::gpu_hardware_support({9, 0}, Mode::fp8_e5m2).reason.empty());
}

TEST(Arch, ParsesGencodeFlagsAndArchLists) {
  const auto from_flags = pp::parse_arch_list(
      "-gencode;arch=compute_75,code=sm_75;-gencode;arch=compute_90,code=sm_90;"
      "-gencode;arch=compute_90,code=compute_90;-gencode;arch=compute_90a,code=sm_90a");
  std::vector<std::string> names;
  for (const auto& t : from_flags) names.push_back(t.to_string());
  EXPECT_EQ(names, (std::vector<std::string>{"sm_75", "sm_90", "compute_90", "sm_90a"}));

  const auto from_list = pp::parse_arch_list("sm_80 sm_86 sm_80 compute_120 junk sm_x");
  names.clear();
  for (const auto& t : from_list) names.push_back(t.to_string());
  EXPECT_EQ(names, (std::vector<std::string>{"sm_80", "sm_86", "compute_120"}));
}

TEST(Arch, KernelCoverageFollowsCudaBinaryCompatibility) {
  const auto build = pp::parse_arch_list("sm_80 sm_90 compute_90");
  // Exact binary.
  EXPECT_EQ(pp::kernel_coverage({9, 0}, build).via, "sm_90");
  // sm_80 cubins run on 8.6 and 8.9 (same major, higher minor).
  EXPECT_EQ(pp::kernel_coverage({8, 6}, build).via, "sm_80");
  EXPECT_EQ(pp::kernel_coverage({8, 9}, build).via, "sm_80");
  // Blackwell: no sm_10x cubin, but compute_90 PTX is JIT-compiled.
  const auto b200 = pp::kernel_coverage({10, 0}, build);
  EXPECT_TRUE(b200.covered);
  EXPECT_NE(b200.via.find("compute_90 (PTX"), std::string::npos);
  // A T4 against a build that starts at sm_80: no kernel image.
  const auto t4 = pp::kernel_coverage({7, 5}, build);
  EXPECT_FALSE(t4.covered);
  EXPECT_NE(t4.reason.find("no kernels for sm_75"), std::string::npos);
  EXPECT_NE(t4.reason.find("no kernel image is available"), std::string::npos);
  // Arch-specific cubins run on exactly that capability.
  const auto specific = pp::parse_arch_list("sm_90a");
  EXPECT_TRUE(pp::kernel_coverage({9, 0}, specific).covered);
  EXPECT_FALSE(pp::kernel_coverage({9, 1}, specific).covered);
  // An sm_90 cubin never runs on another major version.
  EXPECT_FALSE(pp::kernel_coverage({10, 0}, pp::parse_arch_list("sm_90")).covered);
}
