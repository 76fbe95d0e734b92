#pragma once
// The GPU code a CUDA shared library carries (PyTorch's libtorch_cuda.so, anything nvcc linked),
// read from the file alone: no CUDA, no LibTorch, no cuobjdump. The ELF section headers give the
// fat-binary section; in it, each container's entry headers give an architecture, a kind (cubin or
// PTX) and a size, and the walk steps over the payloads without reading them. The layout, how it
// was verified, and the rule for main targets: docs/fatbin.md.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/arch.hpp"

namespace precision_probe {

// How many fat-binary entries one target has. A container is one translation unit, so a count
// is the number of compiled sources that carry code for the target.
struct FatbinTarget {
  ArchTarget target;      // sm_90 (a cubin), sm_100a, compute_90 (PTX)
  std::size_t count = 0;  // entries
};

struct FatbinSummary {
  bool found = false;                // the file is ELF and has a fat-binary section
  std::string section;               // ".nv_fatbin", or "__nv_relfatbin" where that is the only one
  std::uint64_t section_offset = 0;  // where the section lies in the file
  std::uint64_t section_size = 0;    // its size in bytes
  std::string error;                 // non-empty: what could not be read, and where (one line)
  std::size_t containers = 0;        // fat-binary containers walked
  std::vector<FatbinTarget> sass;    // cubins by target, sorted (sm_80, sm_90, sm_90a, sm_100)
  std::vector<FatbinTarget> ptx;     // PTX by target, sorted
  std::size_t compressed = 0;        // entries whose payload is compressed
  std::size_t other_entries = 0;     // entries of another kind, stepped over
};

// The fat binaries of the ELF file at `path`, reading only headers (a few small reads per
// container). A file that is not 64-bit little-endian ELF, or whose headers are cut or corrupt,
// gives `error`; a library without GPU code gives found == false and no error.
FatbinSummary read_fatbin_summary(const std::string& path);

// The same for an ELF image in memory (tests, the fuzzer).
FatbinSummary read_fatbin_summary_from_bytes(std::string_view elf);

// The contents of a fat-binary section: containers, possibly separated by zero padding. `found`
// is true; offsets in `error` count from the start of `section`.
FatbinSummary parse_fatbin_bytes(std::string_view section);

// The targets a build carries, split as torch.cuda.get_arch_list() sees them. A target is a main
// one when it has at least a quarter of the entries of the target that has the most (cubins and
// PTX counted alike); the others are extras: the few kernels a build adds for one architecture
// (PyTorch 2.11 cu130: sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 with 444 entries each; sm_89, sm_90a,
// sm_100a, sm_103a, sm_120a and sm_121a with 1 to 59). Each list: cubins first, then PTX, each
// sorted by architecture.
struct FatbinArchList {
  std::vector<ArchTarget> main;
  std::vector<ArchTarget> extras;
};
FatbinArchList fatbin_arch_list(const FatbinSummary& summary);

// "sm_80 sm_90 compute_90": a list of targets, separated by spaces.
std::string arch_list_string(const std::vector<ArchTarget>& targets);

// The string torch._C._cuda_getArchFlags() returns ("sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"),
// which torch.cuda.get_arch_list() splits. PyTorch compiles it into libtorch_python.so (not
// libtorch_cuda.so), as a string literal of .rodata: this reads that section of `path` and looks
// for a NUL-terminated string made only of sm_XY/compute_XY tokens separated by single spaces.
// nullopt when there is none, when two different ones are found, or when the file cannot be read.
std::optional<std::string> read_arch_flags(const std::string& path);

// The same search over the bytes of a .rodata section (tests, the fuzzer).
std::optional<std::string> find_arch_flags(std::string_view rodata);

}  // namespace precision_probe
