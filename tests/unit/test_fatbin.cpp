#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "binary.hpp"
#include "probe/facts/fatbin.hpp"

namespace pp = precision_probe;
using pp::FatbinSummary;

namespace {

// --- Hand-built fat binaries and ELF files ------------------------------------------------------

void put(std::string& bytes, std::size_t at, std::uint64_t value, int width) {
  if (bytes.size() < at + width) bytes.resize(at + width, '\0');
  for (int i = 0; i < width; ++i) bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

struct Entry {
  std::uint16_t kind = 2;  // 1 PTX, 2 cubin
  std::uint32_t arch = 90;
  std::uint64_t flags = 0x11;  // 64-bit, Linux
  std::size_t payload = 24;    // bytes, a multiple of 8
  std::uint32_t header = 64;
};

std::string entry_bytes(const Entry& e) {
  std::string bytes(e.header, '\0');
  put(bytes, 0, e.kind, 2);
  put(bytes, 2, 0x101, 2);
  put(bytes, 4, e.header, 4);
  put(bytes, 8, e.payload, 8);
  put(bytes, 28, e.arch, 4);
  put(bytes, 40, e.flags, 8);
  bytes += std::string(e.payload, '\x5a');
  return bytes;
}

std::string container(const std::vector<Entry>& entries) {
  std::string body;
  for (const Entry& e : entries) body += entry_bytes(e);
  std::string bytes;
  put(bytes, 0, 0xBA55ED50, 4);
  put(bytes, 4, 1, 2);
  put(bytes, 6, 16, 2);
  put(bytes, 8, body.size(), 8);
  return bytes + body;
}

// A 64-bit little-endian ELF image holding `sections` (name, contents), as a linker lays one out:
// the header, the contents, the section-name table, then the section headers.
std::string elf_with(const std::vector<std::pair<std::string, std::string>>& sections) {
  std::string bytes = std::string(
      "\x7f"
      "ELF\x02\x01\x01",
      7);
  bytes.resize(64, '\0');
  std::string names(1, '\0');
  std::vector<std::pair<std::size_t, std::size_t>> placed;  // (offset, name)
  for (const auto& [name, contents] : sections) {
    while (bytes.size() % 8 != 0) bytes += '\0';
    placed.emplace_back(bytes.size(), names.size());
    names += name + '\0';
    bytes += contents;
  }
  const std::size_t names_offset = bytes.size();
  const std::size_t names_name = names.size();
  names += std::string(".shstrtab") + '\0';
  bytes += names;
  while (bytes.size() % 8 != 0) bytes += '\0';
  const std::size_t shoff = bytes.size();
  bytes.resize(shoff + 64 * (sections.size() + 2), '\0');  // section 0 is the null section
  auto header = [&bytes, shoff](std::size_t i, std::size_t name, std::size_t offset,
                                std::size_t size, std::uint32_t type) {
    const std::size_t at = shoff + 64 * i;
    put(bytes, at, name, 4);
    put(bytes, at + 4, type, 4);
    put(bytes, at + 24, offset, 8);
    put(bytes, at + 32, size, 8);
  };
  for (std::size_t i = 0; i < sections.size(); ++i) {
    header(i + 1, placed[i].second, placed[i].first, sections[i].second.size(), 1);
  }
  header(sections.size() + 1, names_name, names_offset, names.size(), 3);
  put(bytes, 0x28, shoff, 8);
  put(bytes, 0x3a, 64, 2);
  put(bytes, 0x3c, sections.size() + 2, 2);
  put(bytes, 0x3e, sections.size() + 1, 2);
  return bytes;
}

std::string targets(const std::vector<pp::FatbinTarget>& list) {
  std::string out;
  for (const auto& t : list) {
    out += (out.empty() ? "" : " ") + t.target.to_string() + "x" + std::to_string(t.count);
  }
  return out;
}

std::string pytorch_like_section() {
  return container({{2, 75}, {2, 80}, {2, 90, 0x108011}}) + container({{2, 80}, {1, 90, 0x8011}});
}

}  // namespace

// --- The containers -----------------------------------------------------------------------------

TEST(Fatbin, CountsCubinsAndPtxByArchitecture) {
  const FatbinSummary s = pp::parse_fatbin_bytes(pytorch_like_section());
  EXPECT_EQ(s.error, "");
  EXPECT_TRUE(s.found);
  EXPECT_EQ(s.containers, 2u);
  EXPECT_EQ(targets(s.sass), "sm_75x1 sm_80x2 sm_90ax1");
  EXPECT_EQ(targets(s.ptx), "compute_90x1");
  EXPECT_EQ(s.compressed, 2u);
  EXPECT_EQ(s.other_entries, 0u);
}

TEST(Fatbin, ReadsNewArchitecturesTheirVariantsAndLongerHeaders) {
  const std::string section = container({{2, 100, 0x1200011, 32, 112},  // sm_100f
                                         {2, 100, 0x1100011, 32, 96},   // sm_100a
                                         {2, 103, 0x1000011, 8, 112},
                                         {2, 120, 0x1008011, 16, 112},
                                         {2, 121, 0x1100011, 16, 112},
                                         {1, 100, 0x208011, 16, 80}});  // compute_100f
  const FatbinSummary s = pp::parse_fatbin_bytes(section);
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(targets(s.sass), "sm_100ax1 sm_100fx1 sm_103x1 sm_120x1 sm_121ax1");
  EXPECT_EQ(targets(s.ptx), "compute_100fx1");
}

TEST(Fatbin, SkipsZeroPaddingBetweenAndAfterContainers) {
  const std::string one = container({{2, 80}});
  const std::string section = std::string(8, '\0') + one + std::string(24, '\0') + one +
                              std::string(3, '\0') + one + std::string(1000, '\0');
  const FatbinSummary s = pp::parse_fatbin_bytes(section);
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(s.containers, 3u);
  EXPECT_EQ(targets(s.sass), "sm_80x3");
  EXPECT_EQ(pp::parse_fatbin_bytes(std::string(64, '\0')).containers, 0u);
  EXPECT_EQ(pp::parse_fatbin_bytes("").error, "");
}

TEST(Fatbin, StepsOverEntriesOfOtherKinds) {
  const FatbinSummary s = pp::parse_fatbin_bytes(container({{0x40, 0}, {2, 86}, {0x10, 7}}));
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(targets(s.sass), "sm_86x1");
  EXPECT_EQ(s.other_entries, 2u);
}

TEST(Fatbin, RefusesBytesThatAreNotAContainer) {
  const std::string one = container({{2, 80}});
  const FatbinSummary s = pp::parse_fatbin_bytes(one + "\x01garbage" + one);
  EXPECT_EQ(s.error,
            "container at offset 0x68: not a fat-binary header (magic 0x72616701, "
            "expected 0xba55ed50)");
  EXPECT_EQ(s.containers, 1u);  // what came before is kept
  EXPECT_EQ(targets(s.sass), "sm_80x1");
}

TEST(Fatbin, EveryCutGivesAnErrorWithItsOffsetAndNeverReadsPastTheEnd) {
  const std::string section = pytorch_like_section();
  ASSERT_EQ(pp::parse_fatbin_bytes(section).containers, 2u);
  const std::size_t first = container({{2, 75}, {2, 80}, {2, 90, 0x108011}}).size();
  for (std::size_t cut = 1; cut < section.size(); ++cut) {
    // A copy of its own, so that the sanitizers see any read past the cut.
    const std::string bytes = section.substr(0, cut);
    const FatbinSummary s = pp::parse_fatbin_bytes(bytes);
    if (cut == first) {
      EXPECT_EQ(s.error, "") << cut;
      continue;
    }
    EXPECT_NE(s.error, "") << cut;
    EXPECT_NE(s.error.find(" at offset 0x"), std::string::npos) << s.error;
  }
}

TEST(Fatbin, HugeOrZeroSizesAreErrorsNotLoops) {
  std::string section = container({{2, 80}});
  std::string huge = section;
  put(huge, 8, std::uint64_t{1} << 63, 8);  // the container's size
  EXPECT_EQ(pp::parse_fatbin_bytes(huge).error,
            "container at offset 0x0: 16 + 9223372036854775808 bytes run past the section's end "
            "at 0x68");
  huge = section;
  put(huge, 16 + 8, ~std::uint64_t{0}, 8);  // the entry's payload
  EXPECT_EQ(pp::parse_fatbin_bytes(huge).error,
            "entry at offset 0x10: a payload of 18446744073709551615 bytes runs past its "
            "container's end at 0x68");
  for (std::uint32_t header : {0u, 8u, 47u, 0xffffffffu}) {
    huge = section;
    put(huge, 16 + 4, header, 4);
    EXPECT_NE(pp::parse_fatbin_bytes(huge).error.find("entry at offset 0x10: a header of"),
              std::string::npos)
        << header;
  }
  huge = section;
  put(huge, 6, 0, 2);  // the container's header size
  EXPECT_EQ(pp::parse_fatbin_bytes(huge).error,
            "container at offset 0x0: a header of 0 bytes, at least 16 expected");
}

TEST(Fatbin, ArchitecturesOutsideTheKnownRangeAreErrors) {
  for (const Entry& e :
       {Entry{2, 0}, Entry{2, 9}, Entry{2, 160}, Entry{1, 1000}, Entry{2, 90, 0x300011}}) {
    const FatbinSummary s = pp::parse_fatbin_bytes(container({e}));
    EXPECT_NE(s.error.find("entry at offset 0x10: architecture"), std::string::npos) << e.arch;
  }
}

// --- ELF ----------------------------------------------------------------------------------------

TEST(Fatbin, FindsTheSectionInAnElfFile) {
  const std::string section = pytorch_like_section();
  const std::string elf = elf_with({{".text", "code"}, {".nv_fatbin", section}});
  const FatbinSummary s = pp::read_fatbin_summary_from_bytes(elf);
  EXPECT_EQ(s.error, "");
  EXPECT_TRUE(s.found);
  EXPECT_EQ(s.section, ".nv_fatbin");
  EXPECT_EQ(elf.substr(s.section_offset, s.section_size), section);
  EXPECT_EQ(targets(s.sass), "sm_75x1 sm_80x2 sm_90ax1");
}

// More sections than e_shnum holds: the count in section 0's size, the name table's index in
// its link (SHN_XINDEX).
TEST(Fatbin, ReadsExtendedSectionNumbering) {
  std::string elf = elf_with({{".nv_fatbin", container({{2, 80}})}});
  const std::size_t shoff = elf.size() - 3 * 64;
  put(elf, 0x3c, 0, 2);
  put(elf, 0x3e, 0xffff, 2);
  put(elf, shoff + 32, 3, 8);
  put(elf, shoff + 40, 2, 4);
  const FatbinSummary s = pp::read_fatbin_summary_from_bytes(elf);
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(targets(s.sass), "sm_80x1");
  put(elf, shoff + 32, 0, 8);
  EXPECT_NE(pp::read_fatbin_summary_from_bytes(elf).error.find("0 section headers"),
            std::string::npos);
}

TEST(Fatbin, ReadsTheRelocatableSectionOnlyWhereItIsAllThereIs) {
  const std::string rel = container({{2, 89}});
  const std::string fat = container({{2, 90}});
  FatbinSummary s = pp::read_fatbin_summary_from_bytes(elf_with({{"__nv_relfatbin", rel}}));
  EXPECT_EQ(s.section, "__nv_relfatbin");
  EXPECT_EQ(targets(s.sass), "sm_89x1");
  s = pp::read_fatbin_summary_from_bytes(elf_with({{"__nv_relfatbin", rel}, {".nv_fatbin", fat}}));
  EXPECT_EQ(s.section, ".nv_fatbin");
  EXPECT_EQ(targets(s.sass), "sm_90x1");
}

TEST(Fatbin, AnElfFileWithoutGpuCodeIsNotFoundAndNoError) {
  const FatbinSummary s = pp::read_fatbin_summary_from_bytes(
      elf_with({{".text", "code"}, {".nv_fatbinx", container({{2, 80}})}}));
  EXPECT_FALSE(s.found);
  EXPECT_EQ(s.error, "");
}

TEST(Fatbin, ErrorsInTheSectionSayWhereTheSectionIs) {
  std::string section = container({{2, 80}});
  put(section, 0, 0xBA55ED51, 4);
  const FatbinSummary s = pp::read_fatbin_summary_from_bytes(elf_with({{".nv_fatbin", section}}));
  EXPECT_TRUE(s.found);
  EXPECT_EQ(s.error,
            ".nv_fatbin (file offset 0x40): container at offset 0x0: not a fat-binary "
            "header (magic 0xba55ed51, expected 0xba55ed50)");
}

TEST(Fatbin, RefusesFilesThatAreNotSixtyFourBitLittleEndianElf) {
  const std::string good = elf_with({{".nv_fatbin", container({{2, 80}})}});
  auto error_of = [](std::string bytes) { return pp::read_fatbin_summary_from_bytes(bytes).error; };
  EXPECT_EQ(error_of(""), "not an ELF file");
  EXPECT_EQ(error_of("#!/bin/sh\necho hello\n"), "not an ELF file");
  std::string bad = good;
  bad[4] = 1;
  EXPECT_EQ(error_of(bad), "ELF class 1: only 64-bit ELF is read");
  bad = good;
  bad[5] = 2;
  EXPECT_EQ(error_of(bad), "a big-endian ELF file: only little-endian ELF is read");
  bad = good;
  put(bad, 0x3a, 40, 2);
  EXPECT_EQ(error_of(bad), "ELF section headers of 40 bytes, expected 64");
  bad = good;
  put(bad, 0x28, 0, 8);
  EXPECT_EQ(error_of(bad), "the ELF file has no section headers");
  bad = good;
  put(bad, 0x3e, 7, 2);
  EXPECT_EQ(error_of(bad), "the section-name table is section 7 of 3");
}

TEST(Fatbin, CorruptSectionHeadersAreErrors) {
  const std::string good = elf_with({{".nv_fatbin", container({{2, 80}})}});
  const std::size_t shoff = good.size() - 3 * 64;
  std::string bad = good;
  put(bad, 0x3c, 0xfff0, 2);  // more section headers than the file holds
  EXPECT_NE(pp::read_fatbin_summary_from_bytes(bad).error.find("do not fit in the file"),
            std::string::npos);
  bad = good;
  put(bad, shoff + 64 + 32, std::uint64_t{1} << 40, 8);  // .nv_fatbin's size
  EXPECT_EQ(pp::read_fatbin_summary_from_bytes(bad).error,
            "section .nv_fatbin (1099511627776 bytes at offset 0x40) runs past the end of the "
            "file (" +
                std::to_string(good.size()) + " bytes)");
  bad = good;
  put(bad, shoff + 64 + 4, 8, 4);  // SHT_NOBITS
  EXPECT_EQ(pp::read_fatbin_summary_from_bytes(bad).error,
            "section .nv_fatbin has no bytes in the file (SHT_NOBITS)");
  bad = good;
  put(bad, shoff + 2 * 64 + 24, ~std::uint64_t{0}, 8);  // the name table's offset
  EXPECT_NE(pp::read_fatbin_summary_from_bytes(bad).error.find("section-name table"),
            std::string::npos);
  for (std::size_t cut = 0; cut < good.size(); cut += 7) {
    EXPECT_NE(pp::read_fatbin_summary_from_bytes(good.substr(0, cut)).error, "") << cut;
  }
}

TEST(Fatbin, ReadsFilesAndSaysWhyItCannot) {
  const std::string dir = pp::testing::make_temp_dir();
  const std::string path = dir + "/libfake.so";
  std::ofstream(path, std::ios::binary) << elf_with({{".nv_fatbin", pytorch_like_section()}});
  FatbinSummary s = pp::read_fatbin_summary(path);
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(targets(s.sass), "sm_75x1 sm_80x2 sm_90ax1");
  s = pp::read_fatbin_summary(dir + "/missing.so");
  EXPECT_FALSE(s.found);
  EXPECT_NE(s.error.find("missing.so: No such file or directory"), std::string::npos) << s.error;
  EXPECT_NE(pp::read_fatbin_summary(dir).error.find("not a regular file"), std::string::npos);
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

// --- Main targets and extras --------------------------------------------------------------------

TEST(Fatbin, MainTargetsCarryTheBulkOfTheKernelsExtrasTheRest) {
  // The entries of PyTorch 2.11.0+cu130's libtorch_cuda.so, as cuobjdump --list-elf counts them.
  FatbinSummary s;
  auto add = [&s](int arch, char variant, std::size_t count) {
    s.sass.push_back({{pp::ComputeCapability{arch / 10, arch % 10}, false, variant}, count});
  };
  for (int arch : {75, 80, 86}) add(arch, '\0', 444);
  add(89, '\0', 1);
  add(90, '\0', 444);
  add(90, 'a', 4);
  add(100, '\0', 444);
  add(100, 'a', 59);
  add(103, 'a', 59);
  add(120, '\0', 444);
  add(120, 'a', 1);
  add(121, 'a', 1);
  const pp::FatbinArchList list = pp::fatbin_arch_list(s);
  // torch.cuda.get_arch_list() there: ['sm_75', 'sm_80', 'sm_86', 'sm_90', 'sm_100', 'sm_120'].
  EXPECT_EQ(pp::arch_list_string(list.main), "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120");
  EXPECT_EQ(pp::arch_list_string(list.extras), "sm_89 sm_90a sm_100a sm_103a sm_120a sm_121a");
}

TEST(Fatbin, PtxEntriesAreTargetsToo) {
  std::string section;
  for (int i = 0; i < 4; ++i) section += container({{2, 80}, {2, 90}, {1, 90, 0x8011}});
  section += container({{2, 80}, {2, 90}, {1, 70}});
  const FatbinSummary s = pp::parse_fatbin_bytes(section);  // 5, 5, 4 and 1 entries
  const pp::FatbinArchList list = pp::fatbin_arch_list(s);
  EXPECT_EQ(pp::arch_list_string(list.main), "sm_80 sm_90 compute_90");
  EXPECT_EQ(pp::arch_list_string(list.extras), "compute_70");
}

TEST(Fatbin, AnEmptySummaryHasNoTargets) {
  const pp::FatbinArchList list = pp::fatbin_arch_list(FatbinSummary{});
  EXPECT_TRUE(list.main.empty());
  EXPECT_TRUE(list.extras.empty());
}

// --- The arch flags -----------------------------------------------------------------------------

TEST(Fatbin, FindsTheArchFlagsAmongTheStringsOfRodata) {
  using namespace std::string_literals;
  const std::string rodata =
      "\0\0CUDA error: %s\0sm_75 sm_80 sm_86 sm_90 sm_100 sm_120\0"
      "sm_90\0compute_\0ASCII sm_80 sm_90\0"s;
  EXPECT_EQ(pp::find_arch_flags(rodata), "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120");
  EXPECT_EQ(pp::find_arch_flags("sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90 compute_90\0"s),
            "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90 compute_90");
  EXPECT_EQ(pp::find_arch_flags("x\0sm_90a sm_100f\0"s), "sm_90a sm_100f");
  // The same string twice is one string.
  EXPECT_EQ(pp::find_arch_flags("sm_80 sm_90\0sm_80 sm_90\0"s), "sm_80 sm_90");
}

TEST(Fatbin, ArchFlagsThatAreAmbiguousOrMalformedAreNotFound) {
  using namespace std::string_literals;
  EXPECT_EQ(pp::find_arch_flags("sm_80 sm_90\0sm_70 sm_75\0"s), std::nullopt);
  for (const std::string& text :
       {"sm_80  sm_90\0"s, "sm_80 sm_90 \0"s, " sm_80\0"s, "sm_8 sm_90\0"s, "sm_1000\0"s,
        "sm_05\0"s, "sm_160\0"s, "sm_90b\0"s, "sm_80,sm_90\0"s, "sm_80 sm_90"s, ""s}) {
    EXPECT_EQ(pp::find_arch_flags(text), std::nullopt) << text;
  }
}

TEST(Fatbin, ReadsTheArchFlagsOfAnElfFilesRodata) {
  using namespace std::string_literals;
  const std::string dir = pp::testing::make_temp_dir();
  const std::string path = dir + "/libtorch_python.so";
  std::ofstream(path, std::ios::binary)
      << elf_with({{".text", "code"}, {".rodata", "\0abc\0sm_80 sm_90 compute_90\0xyz\0"s}});
  EXPECT_EQ(pp::read_arch_flags(path), "sm_80 sm_90 compute_90");
  std::ofstream(path, std::ios::binary) << elf_with({{".data", "sm_80 sm_90\0"s}});
  EXPECT_EQ(pp::read_arch_flags(path), std::nullopt);
  EXPECT_EQ(pp::read_arch_flags(dir + "/missing.so"), std::nullopt);
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

// --- Real fat binaries, built by nvcc (tests/CMakeLists.txt) -----------------------------------

namespace {

// "" where nvcc was not found at configure time.
std::string fixture(const std::string& name) {
  const std::string dir = PP_FATBIN_FIXTURES;
  return dir.empty() ? "" : dir + "/" + name;
}

#define PP_REQUIRE_NVCC_FIXTURES()                                                              \
  if (fixture("").empty())                                                                      \
  GTEST_SKIP() << "no nvcc at configure time (CUDAToolkit not found): the fat-binary fixtures " \
                  "were not built"

const char* const kTorchCuda = "fake-torch/torch/lib/libtorch_cuda.so";

}  // namespace

// -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
TEST(FatbinFixture, TorchCudaCarriesSm80AndSm90CubinsAndCompute90Ptx) {
  PP_REQUIRE_NVCC_FIXTURES();
  const FatbinSummary s = pp::read_fatbin_summary(fixture(kTorchCuda));
  ASSERT_EQ(s.error, "");
  EXPECT_TRUE(s.found);
  EXPECT_EQ(s.section, ".nv_fatbin");
  EXPECT_GE(s.containers, 1u);
  const pp::FatbinArchList list = pp::fatbin_arch_list(s);
  EXPECT_EQ(pp::arch_list_string(list.main), "sm_80 sm_90 compute_90");
  EXPECT_EQ(pp::arch_list_string(list.extras), "");
  for (const auto& t : s.sass) EXPECT_GE(t.count, 1u) << t.target.to_string();
}

// Four sources for sm_80 and sm_90, one more with sm_90a and sm_100a too; -Xfatbin -compress-all.
TEST(FatbinFixture, ExtrasAreTheTargetsOfFewSources) {
  PP_REQUIRE_NVCC_FIXTURES();
  const FatbinSummary s = pp::read_fatbin_summary(fixture("fatbin/libmany.so"));
  ASSERT_EQ(s.error, "");
  EXPECT_GE(s.containers, 5u);
  const pp::FatbinArchList list = pp::fatbin_arch_list(s);
  EXPECT_EQ(pp::arch_list_string(list.main), "sm_80 sm_90");
  EXPECT_EQ(pp::arch_list_string(list.extras), "sm_90a sm_100a");
  std::size_t entries = 0;
  for (const auto& t : s.sass) entries += t.count;
  EXPECT_EQ(s.compressed, entries);
  EXPECT_TRUE(s.ptx.empty());
}

// sm_100f with its PTX, sm_100a, sm_103, sm_120, sm_121a: longer entry headers, variants.
TEST(FatbinFixture, ReadsBlackwellTargetsAndTheirVariants) {
  PP_REQUIRE_NVCC_FIXTURES();
  const FatbinSummary s = pp::read_fatbin_summary(fixture("fatbin/libnew.so"));
  ASSERT_EQ(s.error, "");
  const pp::FatbinArchList list = pp::fatbin_arch_list(s);
  EXPECT_EQ(pp::arch_list_string(list.main), "sm_100a sm_100f sm_103 sm_120 sm_121a compute_100f");
}

// nvcc -c -rdc=true: an object with only the relocatable section.
TEST(FatbinFixture, ReadsTheRelocatableSectionOfAnObject) {
  PP_REQUIRE_NVCC_FIXTURES();
  const FatbinSummary s = pp::read_fatbin_summary(fixture("fatbin/relocatable.o"));
  ASSERT_EQ(s.error, "");
  EXPECT_EQ(s.section, "__nv_relfatbin");
  EXPECT_EQ(targets(s.sass), "sm_80x1");
}

TEST(FatbinFixture, CutOrCorruptCopiesGiveErrorsNotCrashes) {
  PP_REQUIRE_NVCC_FIXTURES();
  const std::string bytes = pp::testing::read_all(fixture(kTorchCuda));
  const FatbinSummary whole = pp::read_fatbin_summary_from_bytes(bytes);
  ASSERT_EQ(whole.error, "");
  const std::string section = bytes.substr(whole.section_offset, whole.section_size);
  // Cut inside the first container's header, its first entry's header, and the last payload.
  for (std::size_t cut : {std::size_t{8}, std::size_t{16 + 20}, section.size() - 1}) {
    const FatbinSummary s = pp::parse_fatbin_bytes(section.substr(0, cut));
    EXPECT_NE(s.error.find(" at offset 0x"), std::string::npos) << cut;
  }
  for (std::size_t cut = 0; cut < section.size(); cut += 97) {
    const FatbinSummary s = pp::parse_fatbin_bytes(section.substr(0, cut));
    EXPECT_LE(s.containers, whole.containers);
  }
  auto corrupt = [&bytes, &whole](std::size_t at, std::uint64_t value, int width) {
    std::string copy = bytes;
    put(copy, whole.section_offset + at, value, width);
    return pp::read_fatbin_summary_from_bytes(copy).error;
  };
  EXPECT_NE(corrupt(0, 0xBA55ED51, 4).find("container at offset 0x0: not a fat-binary header"),
            std::string::npos);
  EXPECT_NE(corrupt(8, std::uint64_t{1} << 62, 8).find("run past the section's end"),
            std::string::npos);
  EXPECT_NE(corrupt(16 + 8, ~std::uint64_t{0}, 8).find("entry at offset 0x10: a payload"),
            std::string::npos);
  EXPECT_NE(corrupt(16 + 4, 0, 4).find("entry at offset 0x10: a header of 0 bytes"),
            std::string::npos);
}

TEST(FatbinFixture, CutFilesGiveErrorsNotCrashes) {
  PP_REQUIRE_NVCC_FIXTURES();
  const std::string bytes = pp::testing::read_all(fixture(kTorchCuda));
  const std::string dir = pp::testing::make_temp_dir();
  const std::string path = dir + "/libtorch_cuda.so";
  for (std::size_t cut : {std::size_t{0}, std::size_t{3}, std::size_t{63}, std::size_t{64},
                          bytes.size() / 2, bytes.size() - 1}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, cut);
    const FatbinSummary s = pp::read_fatbin_summary(path);
    EXPECT_NE(s.error, "") << cut;
    EXPECT_FALSE(s.found) << cut;
  }
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}

// The arch flags as PyTorch keeps them: in libtorch_python.so, not in libtorch_cuda.so.
TEST(FatbinFixture, ReadsTheArchFlagsOfAFakeTorchPython) {
  EXPECT_EQ(pp::read_arch_flags(PP_FAKE_TORCH_LIB "/libtorch_python.so"), "sm_80 sm_90 compute_90");
}

TEST(FatbinFixture, ALibraryOfKernelsHasNoArchFlags) {
  PP_REQUIRE_NVCC_FIXTURES();
  EXPECT_EQ(pp::read_arch_flags(fixture(kTorchCuda)), std::nullopt);
}
