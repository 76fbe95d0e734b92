#include <gtest/gtest.h>

#include "fakes.hpp"
#include "probe/facts/cpu.hpp"

namespace pp = precision_probe;
using pp::Hardware;
using pp::Mode;

TEST(Cpu, ParsesX86ModelCoresAndTheFeaturesThatMatter) {
  const auto cpu = pp::parse_cpuinfo(
      pp::testing::cpuinfo_with_flags(
          "Intel(R) Xeon(R) Platinum 8480+",
          "fpu sse2 avx2 fma f16c avx512f avx512_bf16 amx_tile amx_bf16 avx512_fp16", 8),
      "x86_64");
  EXPECT_EQ(cpu.model, "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(cpu.logical_cores, 8);
  EXPECT_EQ(cpu.features, (std::vector<std::string>{"avx2", "fma", "f16c", "avx512f", "avx512_bf16",
                                                    "avx512_fp16", "amx_tile", "amx_bf16"}));
}

TEST(Cpu, ParsesArmFeatures) {
  const std::string text =
      "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd fphp asimdhp bf16 i8mm sve sve2\n"
      "CPU implementer\t: 0x41\nCPU part\t: 0xd4f\n\nprocessor\t: 1\nFeatures\t: fp asimd\n";
  const auto cpu = pp::parse_cpuinfo(text, "aarch64");
  EXPECT_EQ(cpu.logical_cores, 2);
  EXPECT_EQ(cpu.model, "Arm Neoverse-V2");
  EXPECT_TRUE(pp::has_feature(cpu, "bf16"));
  EXPECT_EQ(pp::cpu_hardware_support(cpu, Mode::bf16).hardware, Hardware::native);
  EXPECT_EQ(pp::cpu_hardware_support(cpu, Mode::fp16).hardware, Hardware::native);
}

TEST(Cpu, IsaFlagsDecideNativeOrEmulated) {
  const auto plain =
      pp::parse_cpuinfo(pp::testing::cpuinfo_with_flags("Old Xeon", "avx2 fma f16c"), "x86_64");
  EXPECT_EQ(pp::cpu_hardware_support(plain, Mode::fp32).hardware, Hardware::native);
  const auto bf16 = pp::cpu_hardware_support(plain, Mode::bf16);
  EXPECT_EQ(bf16.hardware, Hardware::emulated);
  EXPECT_NE(bf16.reason.find("AVX512-BF16 or AMX-BF16"), std::string::npos);
  EXPECT_EQ(pp::cpu_hardware_support(plain, Mode::fp16).hardware, Hardware::emulated);

  const auto sapphire = pp::parse_cpuinfo(
      pp::testing::cpuinfo_with_flags("SPR", "avx512f avx512_bf16 amx_bf16 avx512_fp16"), "x86_64");
  EXPECT_EQ(pp::cpu_hardware_support(sapphire, Mode::bf16).hardware, Hardware::native);
  EXPECT_EQ(pp::cpu_hardware_support(sapphire, Mode::fp16).hardware, Hardware::native);
  EXPECT_EQ(pp::cpu_hardware_support(sapphire, Mode::amp_bf16).hardware, Hardware::native);
}

TEST(Cpu, TensorCoreFormatsAreUnsupportedOnEveryCpu) {
  const auto cpu =
      pp::parse_cpuinfo(pp::testing::cpuinfo_with_flags("Any", "avx512_bf16 amx_bf16"), "x86_64");
  for (Mode m : {Mode::tf32, Mode::fp8_e4m3, Mode::fp8_e5m2, Mode::fp8_rowwise, Mode::fp8_blockwise,
                 Mode::mxfp8, Mode::nvfp4, Mode::mxfp4}) {
    const auto v = pp::cpu_hardware_support(cpu, m);
    EXPECT_EQ(v.hardware, Hardware::unsupported) << pp::mode_key(m);
    EXPECT_FALSE(v.reason.empty());
  }
}

TEST(Cpu, EmptyCpuinfoStillGivesAReport) {
  const auto cpu = pp::parse_cpuinfo("", "x86_64");
  EXPECT_EQ(cpu.model, "unknown CPU");
  EXPECT_EQ(cpu.logical_cores, 0);
  EXPECT_TRUE(cpu.features.empty());
}

TEST(Cpu, Int8IsNativeWithDotProductInstructions) {
  const auto vnni = pp::parse_cpuinfo(
      pp::testing::cpuinfo_with_flags("Ice Lake", "avx512f avx512_vnni"), "x86_64");
  const auto amx = pp::parse_cpuinfo(pp::testing::cpuinfo_with_flags("SPR", "amx_int8"), "x86_64");
  const auto plain =
      pp::parse_cpuinfo(pp::testing::cpuinfo_with_flags("Old", "avx2 fma"), "x86_64");
  const auto graviton =
      pp::parse_cpuinfo(pp::testing::cpuinfo_with_flags("", "asimd asimddp"), "aarch64");
  EXPECT_EQ(pp::cpu_hardware_support(vnni, Mode::int8).hardware, Hardware::native);
  EXPECT_EQ(pp::cpu_hardware_support(amx, Mode::int8).hardware, Hardware::native);
  EXPECT_EQ(pp::cpu_hardware_support(graviton, Mode::int8).hardware, Hardware::native);
  const auto old = pp::cpu_hardware_support(plain, Mode::int8);
  EXPECT_EQ(old.hardware, Hardware::emulated);
  EXPECT_NE(old.reason.find("AVX512-VNNI"), std::string::npos) << old.reason;
}

// A real Grace's /proc/cpuinfo (tests/unit/grace-cpuinfo.txt): aarch64 kernels print no "model
// name", no clock and no SMT counts; the core is named from its implementer and part.
TEST(Cpu, AGraceIsReadFromItsRecordedCpuinfo) {
  const std::string text = pp::testing::grace_cpuinfo();
  ASSERT_NE(text.find("CPU part\t: 0xd4f"), std::string::npos) << "the fixture was not read";
  const auto cpu = pp::parse_cpuinfo(text, "aarch64");
  EXPECT_EQ(cpu.model, "Arm Neoverse-V2");
  EXPECT_EQ(cpu.architecture, "aarch64");
  EXPECT_EQ(cpu.logical_cores, 72);
  EXPECT_EQ(cpu.physical_cores, 72);  // one thread a core
  EXPECT_FALSE(cpu.mhz.has_value());
  EXPECT_FALSE(pp::cpu_fp32_peak_gflops(cpu).has_value());  // no clock: no peak to judge by
  EXPECT_EQ(cpu.features, (std::vector<std::string>{"asimd", "fphp", "asimdhp", "asimddp", "bf16",
                                                    "i8mm", "sve", "sve2", "svebf16"}));
  for (Mode m : {Mode::fp32, Mode::fp16, Mode::bf16, Mode::int8, Mode::amp_fp16, Mode::amp_bf16}) {
    const auto v = pp::cpu_hardware_support(cpu, m);
    EXPECT_EQ(v.hardware, Hardware::native) << pp::mode_key(m) << ": " << v.reason;
  }
  for (Mode m : {Mode::tf32, Mode::fp8_e4m3, Mode::fp8_e5m2, Mode::mxfp8, Mode::nvfp4}) {
    EXPECT_EQ(pp::cpu_hardware_support(cpu, m).hardware, Hardware::unsupported) << pp::mode_key(m);
  }
}

TEST(Cpu, ArmCoresAreNamedFromTheirImplementerAndPart) {
  auto model = [](const std::string& implementer, const std::string& part) {
    return pp::parse_cpuinfo("processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: " +
                                 implementer + "\nCPU architecture: 8\nCPU part\t: " + part + "\n",
                             "aarch64")
        .model;
  };
  EXPECT_EQ(model("0x41", "0xd0c"), "Arm Neoverse-N1");  // Graviton2, Ampere Altra
  EXPECT_EQ(model("0x41", "0xd40"), "Arm Neoverse-V1");  // Graviton3
  EXPECT_EQ(model("0x41", "0xD4F"), "Arm Neoverse-V2");  // hexadecimal in any case
  EXPECT_EQ(model("0x46", "0x001"), "Fujitsu A64FX");
  EXPECT_EQ(model("0x48", "0xd01"), "HiSilicon Kunpeng-920");
  // A part the table does not know keeps its numbers, and so does another implementer's.
  EXPECT_EQ(model("0x41", "0xfff"), "Arm CPU (implementer 0x41, part 0xfff)");
  EXPECT_EQ(model("0x4e", "0xd4f"), "Arm CPU (implementer 0x4e, part 0xd4f)");
  // A "model name" where the kernel prints one (32-bit Arm) is taken as it is.
  EXPECT_EQ(pp::parse_cpuinfo("processor\t: 0\nmodel name\t: ARMv7 Processor rev 4 (v7l)\n"
                              "CPU implementer\t: 0x41\nCPU part\t: 0xd08\n",
                              "armv7l")
                .model,
            "ARMv7 Processor rev 4 (v7l)");
}
