#include "probe/facts/fatbin.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "strings/strings.hpp"
#include "precision_probe/expected.hpp"

namespace precision_probe {

namespace {

// --- Where the bytes come from ------------------------------------------------------------------

// A file read with pread, or bytes in memory: the parsers see only this.
class ByteSource {
 public:
  ByteSource() = default;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;
  virtual ~ByteSource() = default;

  virtual std::uint64_t size() const = 0;
  // Exactly `n` bytes at `offset` into `out`; false when they are not all there.
  virtual bool read(std::uint64_t offset, std::size_t n, unsigned char* out) = 0;

  bool in_bounds(std::uint64_t offset, std::uint64_t n) const {
    return offset <= size() && n <= size() - offset;
  }
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  std::uint64_t size() const override { return bytes_.size(); }
  bool read(std::uint64_t offset, std::size_t n, unsigned char* out) override {
    if (!in_bounds(offset, n)) return false;
    std::memcpy(out, bytes_.data() + offset, n);
    return true;
  }

 private:
  std::string_view bytes_;
};

// Reads through a one-block cache: a container's header and its first entry's header, or the
// section headers and their names, usually share a block.
class FileSource final : public ByteSource {
 public:
  FileSource(int fd, std::uint64_t size) : fd_(fd), size_(size) {}
  ~FileSource() override { ::close(fd_); }
  std::uint64_t size() const override { return size_; }

  bool read(std::uint64_t offset, std::size_t n, unsigned char* out) override {
    if (!in_bounds(offset, n)) return false;
    if (n > kBlock) return pread_all(offset, n, out);
    if (offset < cache_offset_ || offset - cache_offset_ + n > cache_size_) {
      cache_size_ = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, size_ - offset));
      cache_offset_ = offset;
      if (!pread_all(offset, cache_size_, cache_)) {
        cache_size_ = 0;
        return false;
      }
    }
    std::memcpy(out, cache_ + (offset - cache_offset_), n);
    return true;
  }

 private:
  static constexpr std::size_t kBlock = 4096;

  bool pread_all(std::uint64_t offset, std::size_t n, unsigned char* out) const {
    std::size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;  // an I/O error, or the file shrank under us
      done += static_cast<std::size_t>(got);
    }
    return true;
  }

  int fd_;
  std::uint64_t size_;
  std::uint64_t cache_offset_ = 0;
  std::size_t cache_size_ = 0;
  unsigned char cache_[kBlock] = {};
};

std::uint16_t le16(const unsigned char* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
std::uint32_t le32(const unsigned char* p) {
  return static_cast<std::uint32_t>(le16(p)) | (static_cast<std::uint32_t>(le16(p + 2)) << 16);
}
std::uint64_t le64(const unsigned char* p) {
  return static_cast<std::uint64_t>(le32(p)) | (static_cast<std::uint64_t>(le32(p + 4)) << 32);
}

std::string hex(std::uint64_t value) { return fmt::format("0x{:x}", value); }

// --- The fat-binary containers ------------------------------------------------------------------
//
// Container header (16 bytes): u32 magic 0xBA55ED50, u16 version (1), u16 header size (16),
// u64 size of the entries that follow the header.
// Entry header (64 bytes, more for sm_100 and later): u16 kind (1 PTX, 2 cubin), u16 version
// (0x101), u32 header size, u64 payload size (padded to 8), u32 compressed size, u32 ?, u32 code
// version, u32 architecture (90 = sm_90), u32 name offset, u32 name size, u64 flags, u64 ?, u64
// uncompressed size. The next entry starts at header size + payload size.

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
constexpr std::size_t kContainerHeader = 16;
constexpr std::size_t kEntryFields = 48;  // through the flags: what the walk needs
constexpr std::size_t kEntryHeader = 64;
constexpr std::uint16_t kKindPtx = 1;
constexpr std::uint16_t kKindCubin = 2;
constexpr std::uint64_t kFlagCompressed = 0x1000 | 0x2000 | 0x8000;  // zlib, LZ4, zstd (CUDA 13)
constexpr std::uint64_t kFlagArchSpecific = 0x100000;                // sm_90a, sm_100a
constexpr std::uint64_t kFlagFamily = 0x200000;                      // sm_100f

// (architecture, variant): sorts as sm_90, sm_90a, sm_100, sm_100a, sm_100f.
using TargetKey = std::pair<int, char>;

struct Walk {
  ByteSource& source;
  std::uint64_t begin = 0;  // the section's first byte in the source
  std::uint64_t size = 0;   // its size
  FatbinSummary& out;
  std::map<TargetKey, std::size_t> sass;
  std::map<TargetKey, std::size_t> ptx;
};

// "entry at offset 0x1a0: a payload of ... bytes runs past its container's end at 0x200"
void fail(Walk& walk, std::string_view what, std::uint64_t offset, const std::string& why) {
  walk.out.error = fmt::format("{} at offset {}: {}", what, hex(offset), why);
}

// The offset of the next non-zero byte at or after `offset`, or the section's size.
std::optional<std::uint64_t> skip_zeros(Walk& walk, std::uint64_t offset) {
  unsigned char block[256];
  while (offset < walk.size) {
    const auto n =
        static_cast<std::size_t>(std::min<std::uint64_t>(sizeof block, walk.size - offset));
    if (!walk.source.read(walk.begin + offset, n, block)) return std::nullopt;
    const auto* hit = std::find_if(block, block + n, [](unsigned char b) { return b != 0; });
    if (hit != block + n) return offset + static_cast<std::uint64_t>(hit - block);
    offset += n;
  }
  return walk.size;
}

std::optional<char> variant_of(std::uint64_t flags) {
  if ((flags & kFlagArchSpecific) != 0 && (flags & kFlagFamily) != 0) return std::nullopt;
  if ((flags & kFlagArchSpecific) != 0) return 'a';
  if ((flags & kFlagFamily) != 0) return 'f';
  return '\0';
}

// Reads the entry at `offset` (ending no later than `end`) and returns where the next one starts.
std::optional<std::uint64_t> walk_entry(Walk& walk, std::uint64_t offset, std::uint64_t end) {
  unsigned char h[kEntryHeader] = {};
  if (end - offset < kEntryFields) {
    fail(walk, "entry", offset,
         fmt::format("{} bytes left in its container, a header needs {}", end - offset,
                     kEntryFields));
    return std::nullopt;
  }
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kEntryHeader, end - offset));
  if (!walk.source.read(walk.begin + offset, n, h)) {
    fail(walk, "entry", offset, fmt::format("cannot read its {} bytes", n));
    return std::nullopt;
  }
  const std::uint32_t header_size = le32(h + 4);
  const std::uint64_t payload = le64(h + 8);
  if (header_size < kEntryFields || header_size > end - offset) {
    fail(walk, "entry", offset,
         fmt::format("a header of {} bytes does not fit (at least {}, at most "
                     "{} left in its container)",
                     header_size, kEntryFields, end - offset));
    return std::nullopt;
  }
  if (payload > end - offset - header_size) {
    fail(walk, "entry", offset,
         fmt::format("a payload of {} bytes runs past its container's end at {}", payload,
                     hex(end)));
    return std::nullopt;
  }
  const std::uint16_t kind = le16(h);
  const std::uint32_t arch = le32(h + 28);
  const std::uint64_t flags = le64(h + 40);
  if (kind == kKindPtx || kind == kKindCubin) {
    const auto variant = variant_of(flags);
    if (arch < 10 || arch > 159 || !variant) {
      fail(walk, "entry", offset,
           fmt::format("architecture {} with flags {} is not sm_10 to sm_159", arch, hex(flags)));
      return std::nullopt;
    }
    auto& counts = kind == kKindPtx ? walk.ptx : walk.sass;
    ++counts[{static_cast<int>(arch), *variant}];
    if ((flags & kFlagCompressed) != 0) ++walk.out.compressed;
  } else {
    ++walk.out.other_entries;
  }
  return offset + header_size + payload;
}

// Reads the container at `offset` and returns where it ends.
std::optional<std::uint64_t> walk_container(Walk& walk, std::uint64_t offset) {
  unsigned char h[kContainerHeader];
  if (walk.size - offset < kContainerHeader ||
      !walk.source.read(walk.begin + offset, sizeof h, h)) {
    fail(walk, "container", offset,
         fmt::format("cut, {} bytes left of a {}-byte header", walk.size - offset,
                     kContainerHeader));
    return std::nullopt;
  }
  if (le32(h) != kFatbinMagic) {
    fail(walk, "container", offset,
         fmt::format("not a fat-binary header (magic {:#010x}, expected "
                     "{:#010x})",
                     le32(h), kFatbinMagic));
    return std::nullopt;
  }
  const std::uint16_t header_size = le16(h + 6);
  const std::uint64_t fat_size = le64(h + 8);
  const std::uint64_t left = walk.size - offset;
  if (header_size < kContainerHeader) {
    fail(walk, "container", offset,
         fmt::format("a header of {} bytes, at least {} expected", header_size, kContainerHeader));
    return std::nullopt;
  }
  if (header_size > left || fat_size > left - header_size) {
    fail(walk, "container", offset,
         fmt::format("{} + {} bytes run past the section's end at {}", header_size, fat_size,
                     hex(walk.size)));
    return std::nullopt;
  }
  const std::uint64_t end = offset + header_size + fat_size;
  ++walk.out.containers;
  for (std::uint64_t at = offset + header_size; at < end;) {
    const auto next = walk_entry(walk, at, end);
    if (!next) return std::nullopt;
    at = *next;
  }
  return end;
}

std::vector<FatbinTarget> to_targets(const std::map<TargetKey, std::size_t>& counts, bool ptx) {
  std::vector<FatbinTarget> targets;
  for (const auto& [key, count] : counts) {
    FatbinTarget t;
    t.target.cc = ComputeCapability::from_number(key.first);
    t.target.ptx = ptx;
    t.target.variant = key.second;
    t.count = count;
    targets.push_back(t);
  }
  return targets;
}

// Walks the section [begin, begin + size) of `source` into `out`.
void walk_section(ByteSource& source, std::uint64_t begin, std::uint64_t size, FatbinSummary& out) {
  Walk walk{source, begin, size, out, {}, {}};
  std::uint64_t offset = 0;
  while (offset < size) {
    const auto start = skip_zeros(walk, offset);
    if (!start) {
      fail(walk, "padding", offset, "cannot read it");
      break;
    }
    if (*start >= size) break;
    const auto end = walk_container(walk, *start);
    if (!end) break;
    offset = *end;
  }
  out.sass = to_targets(walk.sass, false);
  out.ptx = to_targets(walk.ptx, true);
}

// --- ELF ----------------------------------------------------------------------------------------

struct ElfSection {
  std::uint32_t name = 0;  // offset in the section-name table
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint32_t link = 0;
};

constexpr std::size_t kElfHeader = 64;
constexpr std::size_t kSectionHeader = 64;
constexpr std::uint64_t kMaxSections = 1u << 20;
constexpr std::uint32_t kSectionNoBits = 8;            // SHT_NOBITS: no bytes in the file
constexpr std::uint16_t kSectionIndexEscape = 0xffff;  // SHN_XINDEX

struct ElfFile {
  std::vector<ElfSection> sections;
  ElfSection names;  // the section-name table
};

Expected<ElfSection> read_section_header(ByteSource& source, std::uint64_t offset) {
  unsigned char h[kSectionHeader];
  if (!source.read(offset, sizeof h, h)) {
    return Unexpected{fmt::format("cannot read the section header at offset {}", hex(offset))};
  }
  ElfSection s;
  s.name = le32(h);
  s.type = le32(h + 4);
  s.offset = le64(h + 24);
  s.size = le64(h + 32);
  s.link = le32(h + 40);
  return s;
}

// Checks the ELF header; returns (section headers' offset, their count, the name table's index).
Expected<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> read_elf_header(
    ByteSource& source) {
  unsigned char h[kElfHeader];
  if (!source.read(0, sizeof h, h) || std::memcmp(h,
                                                  "\x7f"
                                                  "ELF",
                                                  4) != 0) {
    return Unexpected{"not an ELF file"};
  }
  if (h[4] != 2) return Unexpected{fmt::format("ELF class {}: only 64-bit ELF is read", int{h[4]})};
  if (h[5] != 1) return Unexpected{"a big-endian ELF file: only little-endian ELF is read"};
  const std::uint64_t shoff = le64(h + 0x28);
  const std::uint16_t entsize = le16(h + 0x3a);
  std::uint64_t count = le16(h + 0x3c);
  std::uint64_t names = le16(h + 0x3e);
  if (shoff == 0) return Unexpected{"the ELF file has no section headers"};
  if (entsize != kSectionHeader) {
    return Unexpected{fmt::format("ELF section headers of {} bytes, expected 64", entsize)};
  }
  if (count == 0 || names == kSectionIndexEscape) {  // more sections than 16 bits hold
    const auto first = read_section_header(source, shoff);
    if (!first) return Unexpected{first.error()};
    if (count == 0) count = first->size;
    if (names == kSectionIndexEscape) names = first->link;
  }
  return std::make_tuple(shoff, count, names);
}

Expected<ElfFile> read_elf(ByteSource& source) {
  const auto header = read_elf_header(source);
  if (!header) return Unexpected{header.error()};
  const auto [shoff, count, names] = *header;
  if (count == 0 || count > kMaxSections || !source.in_bounds(shoff, count * kSectionHeader)) {
    return Unexpected{
        fmt::format("{} section headers at offset {} do not fit in the file ({} bytes)", count,
                    hex(shoff), source.size())};
  }
  if (names >= count) {
    return Unexpected{fmt::format("the section-name table is section {} of {}", names, count)};
  }
  ElfFile elf;
  elf.sections.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    auto s = read_section_header(source, shoff + i * kSectionHeader);
    if (!s) return Unexpected{s.error()};
    elf.sections.push_back(*s);
  }
  elf.names = elf.sections[static_cast<std::size_t>(names)];
  if (elf.names.type == kSectionNoBits || !source.in_bounds(elf.names.offset, elf.names.size)) {
    return Unexpected{
        fmt::format("the section-name table ({} bytes at offset {}) is not in the file",
                    elf.names.size, hex(elf.names.offset))};
  }
  return elf;
}

bool has_name(ByteSource& source, const ElfFile& elf, const ElfSection& s, std::string_view name) {
  unsigned char buffer[32];
  const std::size_t n = name.size() + 1;  // with its NUL
  if (n > sizeof buffer || s.name > elf.names.size || n > elf.names.size - s.name) return false;
  if (!source.read(elf.names.offset + s.name, n, buffer)) return false;
  return std::memcmp(buffer, name.data(), name.size()) == 0 && buffer[name.size()] == '\0';
}

const ElfSection* find_section(ByteSource& source, const ElfFile& elf, std::string_view name) {
  for (const ElfSection& s : elf.sections) {
    if (has_name(source, elf, s, name)) return &s;
  }
  return nullptr;
}

Expected<void> check_contents(ByteSource& source, const ElfSection& s, std::string_view name) {
  if (s.type == kSectionNoBits) {
    return Unexpected{fmt::format("section {} has no bytes in the file (SHT_NOBITS)", name)};
  }
  if (!source.in_bounds(s.offset, s.size)) {
    return Unexpected{
        fmt::format("section {} ({} bytes at offset {}) runs past the end of the file "
                    "({} bytes)",
                    name, s.size, hex(s.offset), source.size())};
  }
  return {};
}

FatbinSummary summarise(ByteSource& source) {
  FatbinSummary out;
  const auto elf = read_elf(source);
  if (!elf) {
    out.error = elf.error();
    return out;
  }
  // .nv_fatbin holds what the CUDA runtime loads; __nv_relfatbin (relocatable device code, -rdc)
  // holds the objects before the device link: read only where it is all there is.
  for (std::string_view name : {".nv_fatbin", "__nv_relfatbin"}) {
    const ElfSection* s = find_section(source, *elf, name);
    if (s == nullptr) continue;
    out.found = true;
    out.section = std::string(name);
    out.section_offset = s->offset;
    out.section_size = s->size;
    if (const auto ok = check_contents(source, *s, name); !ok) {
      out.error = ok.error();
      return out;
    }
    walk_section(source, s->offset, s->size, out);
    if (!out.error.empty()) {
      out.error = fmt::format("{} (file offset {}): {}", name, hex(s->offset), out.error);
    }
    return out;
  }
  return out;
}

// --- The arch flags -----------------------------------------------------------------------------

// sm_10 to sm_159 (their variants, their PTX), as in the fat binaries: "sm_05" and "sm_900" are
// no architectures.
bool is_arch_token(std::string_view token) {
  const auto target = ArchTarget::parse(token);
  return target && target->cc.known();
}

// Tokens separated by single spaces, nothing else: "sm_75 sm_80 compute_90". Returns their count.
std::size_t arch_tokens(std::string_view text) {
  std::size_t tokens = 0;
  std::size_t start = 0;
  while (true) {
    const std::size_t space = text.find(' ', start);
    const std::string_view token = text.substr(start, space - start);
    if (!is_arch_token(token)) return 0;
    ++tokens;
    if (space == std::string_view::npos) return tokens;
    start = space + 1;
  }
}

constexpr std::uint64_t kMaxRodata = std::uint64_t{256} << 20;

Expected<std::string> read_rodata(ByteSource& source) {
  const auto elf = read_elf(source);
  if (!elf) return Unexpected{elf.error()};
  const ElfSection* s = find_section(source, *elf, ".rodata");
  if (s == nullptr) return Unexpected{"no .rodata section"};
  if (const auto ok = check_contents(source, *s, ".rodata"); !ok) return Unexpected{ok.error()};
  if (s->size > kMaxRodata) return Unexpected{"the .rodata section is over 256 MiB"};
  std::string rodata(static_cast<std::size_t>(s->size), '\0');
  if (!source.read(s->offset, rodata.size(), reinterpret_cast<unsigned char*>(rodata.data()))) {
    return Unexpected{"cannot read the .rodata section"};
  }
  return rodata;
}

// `path` opened for reading its headers; the source owns the descriptor.
Expected<std::unique_ptr<FileSource>> open_source(const std::string& path) {
  // O_NONBLOCK: a FIFO (or a device) in place of the library does not hold the open; fstat then
  // refuses it before anything is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Unexpected{fmt::format("{}: {}", printable_path(path), error_string(errno))};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Unexpected{fmt::format("{}: {}not a regular file, refused", printable_path(path),
                                  S_ISFIFO(st.st_mode) ? "a FIFO, " : "")};
  }
  // Only headers are read, far apart: the kernel's read-ahead would fetch the payloads too.
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  return std::make_unique<FileSource>(fd, static_cast<std::uint64_t>(st.st_size));
}

}  // namespace

FatbinSummary read_fatbin_summary_from_bytes(std::string_view elf) {
  MemorySource source(elf);
  return summarise(source);
}

FatbinSummary parse_fatbin_bytes(std::string_view section) {
  MemorySource source(section);
  FatbinSummary out;
  out.found = true;
  out.section_size = section.size();
  walk_section(source, 0, section.size(), out);
  return out;
}

FatbinSummary read_fatbin_summary(const std::string& path) {
  const auto source = open_source(path);
  if (!source) {
    FatbinSummary out;
    out.error = source.error();
    return out;
  }
  return summarise(**source);
}

FatbinArchList fatbin_arch_list(const FatbinSummary& summary) {
  std::size_t most = 0;
  for (const auto* list : {&summary.sass, &summary.ptx}) {
    for (const FatbinTarget& t : *list) most = std::max(most, t.count);
  }
  FatbinArchList out;
  for (const auto* list : {&summary.sass, &summary.ptx}) {
    for (const FatbinTarget& t : *list) {
      (t.count * 4 >= most ? out.main : out.extras).push_back(t.target);
    }
  }
  return out;
}

std::string arch_list_string(const std::vector<ArchTarget>& targets) {
  std::vector<std::string> names;
  names.reserve(targets.size());
  for (const ArchTarget& t : targets) names.push_back(t.to_string());
  return join(names, " ");
}

std::optional<std::string> find_arch_flags(std::string_view rodata) {
  std::optional<std::string_view> best;
  std::size_t best_tokens = 0;
  bool ambiguous = false;
  std::size_t start = 0;
  while (start < rodata.size()) {
    const std::size_t nul = rodata.find('\0', start);
    if (nul == std::string_view::npos) break;  // not terminated: not a string literal
    const std::string_view text = rodata.substr(start, nul - start);
    start = nul + 1;
    if (text.size() > 4096) continue;
    const std::size_t tokens = arch_tokens(text);
    if (tokens == 0 || tokens < best_tokens || (best && *best == text)) continue;
    ambiguous = tokens == best_tokens;
    best = text;
    best_tokens = tokens;
  }
  if (!best || ambiguous) return std::nullopt;
  return std::string(*best);
}

std::optional<std::string> read_arch_flags(const std::string& path) {
  const auto source = open_source(path);
  if (!source) return std::nullopt;
  const auto rodata = read_rodata(**source);
  if (!rodata) return std::nullopt;
  return find_arch_flags(*rodata);
}

}  // namespace precision_probe
