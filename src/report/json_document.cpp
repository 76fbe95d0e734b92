#include "report/json_document.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <vector>

#include <simdjson.h>

#include "report/json_refusal.hpp"

namespace precision_probe::json_fields {

static_assert(simdjson::SIMDJSON_PADDING <= kJsonPadding);
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "simdjson's tape is read as it is written");

constexpr std::uint64_t kPayloadMask = (std::uint64_t{1} << 56) - 1;

// How many tape words the value starting at a word of each type (the word's top byte) takes: two
// for a number ('d', 'l', 'u'), one for any other scalar, 0 for a container ('[', '{'), which says
// where it ends.
constexpr std::array<std::uint8_t, 256> kValueWords = [] {
  std::array<std::uint8_t, 256> words{};
  for (std::uint8_t& w : words) w = 1;
  words['d'] = words['l'] = words['u'] = 2;
  words['['] = words['{'] = 0;
  return words;
}();

namespace {

constexpr std::size_t kMaxDepth = 512;

// The text with every integer too large for 64 bits written as a decimal ("...0.0"), which
// simdjson reads as a floating-point number, as nlohmann/json and the reader before simdjson did;
// "" when there is none. Numbers are found outside texts; the rest of the text is copied as it is.
std::string widen_large_integers(std::string_view text) {
  std::string out;
  std::size_t copied = 0;
  bool in_text = false;
  bool escaped = false;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_text) {
      in_text = escaped || c != '"';
      escaped = !escaped && c == '\\';
      continue;
    }
    in_text = c == '"';
    if (c != '-' && !digit(c)) continue;
    std::size_t j = i + 1;
    while (j < text.size() && digit(text[j])) ++j;
    const std::size_t integer_end = j;
    while (j < text.size() &&
           (digit(text[j]) || std::string_view(".eE+-").find(text[j]) != text.npos))
      ++j;
    if (integer_end == j) {
      std::uint64_t u = 0;
      std::int64_t s = 0;
      const auto r = c == '-' ? std::from_chars(text.data() + i, text.data() + j, s)
                              : std::from_chars(text.data() + i, text.data() + j, u);
      if (r.ec == std::errc::result_out_of_range) {
        out.append(text, copied, j - copied).append(".0");
        copied = j;
      }
    }
    i = j - 1;
  }
  if (copied == 0) return "";
  return out.append(text, copied);
}

// A member's name's fingerprint: its length, its first four bytes and its last four, mixed; equal
// names have equal fingerprints. `at` is where the name stands in the document's texts: a 32-bit
// length, the bytes, a NUL, and simdjson's padding after the last text, so that eight bytes can be
// read from the length on. The four bytes that end at the name's end are the name itself where it
// is shorter (with its length's upper bytes), and the first eight are then left out.
std::uint64_t fingerprint(const std::uint8_t* at) {
  std::uint64_t head = 0;
  std::memcpy(&head, at, sizeof head);
  const auto length = static_cast<std::uint32_t>(head);
  std::uint32_t tail = 0;
  std::memcpy(&tail, at + length, sizeof tail);
  return ((length < 4 ? length : head) ^ (std::uint64_t{tail} << 29U)) * 0x9E3779B97F4A7C15ULL;
}

}  // namespace

struct JsonDocument::Parser {
  simdjson::dom::parser dom;
  std::unique_ptr<char[]> copy;  // a text that came without padding, with it
  std::size_t copy_capacity = 0;
  std::vector<std::string_view> names;  // an object's names, sorted

  simdjson::error_code parse(std::string_view text, bool padded) {
    if (text.size() >= simdjson::SIMDJSON_MAXSIZE_BYTES) return simdjson::CAPACITY;
    if (!padded || text.empty()) {
      if (!copy || copy_capacity < text.size()) {
        copy = std::make_unique<char[]>(text.size() + kJsonPadding);
        copy_capacity = text.size();
      }
      std::copy(text.begin(), text.end(), copy.get());
    }
    return dom.parse(padded && !text.empty() ? text.data() : copy.get(), text.size(), false)
        .error();
  }
};

JsonDocument::JsonDocument() : parser_(std::make_unique<Parser>()) {}
JsonDocument::~JsonDocument() = default;

Expected<void> JsonDocument::parse(std::string_view text, bool padded) {
  tape_ = nullptr;
  strings_ = nullptr;
  // A UTF-8 byte order mark (an editor's, PowerShell's) is not part of the document; a refusal
  // still counts its place from the file's first byte.
  const std::string_view file = text;
  const std::size_t bom = text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  text.remove_prefix(bom);
  if (text.size() >= simdjson::SIMDJSON_MAXSIZE_BYTES) return Unexpected{"a text of 4 GiB or more"};
  // simdjson counts the lists and objects that hold something: one more than ours, so that 512
  // such levels are read; unique_keys() counts them all.
  if (parser_->dom.max_depth() != kMaxDepth + 1 &&
      parser_->dom.allocate(std::max<std::size_t>(text.size(), 4096), kMaxDepth + 1) !=
          simdjson::SUCCESS) {
    throw std::bad_alloc();
  }
  simdjson::error_code error = parser_->parse(text, padded);
  if (error == simdjson::MEMALLOC) throw std::bad_alloc();
  if (error != simdjson::SUCCESS) {
    const std::string wide = widen_large_integers(text);
    if (!wide.empty()) error = parser_->parse(wide, false);
    if (error != simdjson::SUCCESS)
      return Unexpected{refusal(file, bom, simdjson::error_message(error))};
  }
  tape_ = parser_->dom.doc.tape.get();
  strings_ = parser_->dom.doc.string_buf.get();
  if (!unique_keys()) {
    tape_ = nullptr;
    strings_ = nullptr;
    return Unexpected{refusal(file, bom, "a member given twice, or nested too deep")};
  }
  return {};
}

std::string JsonDocument::refusal(std::string_view text, std::size_t skipped,
                                  const std::string& simdjson_error) const {
  return json_refusal(text, skipped, kMaxDepth, simdjson_error);
}

JsonValue JsonDocument::root() const { return {*this, 1}; }

// An object that names a member twice is refused (RFC 8259 leaves the meaning of one open: one
// reader takes the first, Python and jq the last, so a report could say two things). The tape is
// walked from container to container; each member's name sets a bit of each of two 64-bit masks
// by its fingerprint, and only where a name finds its two bits set already are the object's names
// compared (of a report's 650 objects, about nine members each, a few dozen are).
bool JsonDocument::unique_keys() const {
  const JsonValue root = this->root();
  return !(root.is_object() || root.is_array()) || unique_within(1, 1);
}

// Moves `next` past the value at `value` (past the member, where a name stands before it), the
// objects inside it checked.
[[gnu::always_inline]] inline bool JsonDocument::skip_value(std::uint32_t value,
                                                            std::uint32_t& next,
                                                            std::uint32_t depth) const {
  const std::uint64_t word = tape_[value];
  const std::uint8_t words = kValueWords[word >> 56U];
  if (words != 0) {
    next = value + words;
    return true;
  }
  next = static_cast<std::uint32_t>(word);
  return depth < kMaxDepth && unique_within(value, depth + 1);
}

bool JsonDocument::unique_within(std::uint32_t container, std::uint32_t depth) const {
  const std::uint64_t* tape = tape_;
  const auto end = static_cast<std::uint32_t>(tape[container]) - 1;
  const bool object = (tape[container] >> 56U) == '{';
  std::uint32_t k = container + 1;
  // An object's names, until one may be a repeat (its names then compared) or none is left.
  for (std::uint64_t seen_a = 0, seen_b = 0; object && k < end;) {
    const std::uint64_t f = fingerprint(strings_ + (tape[k] & kPayloadMask));
    const std::uint64_t a = std::uint64_t{1} << (f >> 58U);
    const std::uint64_t b = std::uint64_t{1} << ((f >> 52U) & 63U);
    if ((seen_a & a) != 0 && (seen_b & b) != 0) {
      if (!names_differ(container)) return false;
      break;
    }
    seen_a |= a;
    seen_b |= b;
    if (!skip_value(k + 1, k, depth)) return false;
  }
  // The values (or a list's elements) that are left: the objects and lists among them.
  while (k < end) {
    if (!skip_value(object ? k + 1 : k, k, depth)) return false;
  }
  return true;
}

bool JsonDocument::names_differ(std::uint32_t object) const {
  const JsonValue o(*this, object);
  std::vector<std::string_view>& names = parser_->names;
  names.clear();
  for (std::uint32_t k = object + 1; k < o.end(); k = o.after(k + 1)) {
    names.push_back(JsonValue(*this, k).string_view());
  }
  if (names.size() > 16) {
    std::sort(names.begin(), names.end());
    return std::adjacent_find(names.begin(), names.end()) == names.end();
  }
  for (std::size_t b = 1; b < names.size(); ++b) {
    for (std::size_t a = 0; a < b; ++a) {
      if (names[a] == names[b]) return false;
    }
  }
  return true;
}

double JsonValue::number() const {
  const std::uint64_t bits = word(index_ + 1);
  switch (type()) {
    case 'l': return static_cast<double>(static_cast<std::int64_t>(bits));
    case 'u': return static_cast<double>(bits);
    default: {
      double v = 0;
      std::memcpy(&v, &bits, sizeof v);
      return v;
    }
  }
}

std::int64_t JsonValue::int64() const { return static_cast<std::int64_t>(word(index_ + 1)); }

std::uint64_t JsonValue::uint64() const { return word(index_ + 1); }

std::size_t JsonValue::size() const {
  const auto count = static_cast<std::size_t>((word(index_) >> 32) & 0xFFFFFF);
  if (count < 0xFFFFFF) return count;
  std::size_t n = 0;  // 2^24 - 1 or more: counted
  for (std::uint32_t i = index_ + 1; i < end(); i = after(is_object() ? i + 1 : i)) ++n;
  return n;
}

namespace {

// Names are short: compared in place, the lengths first, then in words of eight (or four) bytes,
// the last one overlapping the one before, so that no byte past either name is read.
bool same(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  if (n != b.size()) return false;
  const auto word = [](const char* at, auto bits) {
    decltype(bits) w = 0;
    std::memcpy(&w, at, sizeof w);
    return w;
  };
  if (n >= 8) {
    for (std::size_t i = 0; i + 8 < n; i += 8) {
      if (word(a.data() + i, std::uint64_t{}) != word(b.data() + i, std::uint64_t{})) return false;
    }
    return word(a.data() + n - 8, std::uint64_t{}) == word(b.data() + n - 8, std::uint64_t{});
  }
  if (n >= 4) {
    return word(a.data(), std::uint32_t{}) == word(b.data(), std::uint32_t{}) &&
           word(a.data() + n - 4, std::uint32_t{}) == word(b.data() + n - 4, std::uint32_t{});
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

std::optional<JsonValue> JsonValue::find(std::string_view key, std::uint32_t* hint) const {
  const std::uint32_t first = index_ + 1;
  const std::uint32_t past = end();
  // The walk starts at the hint (the word of the member after the last one found) and goes round
  // the object once.
  if (first == past) return std::nullopt;
  const std::uint32_t start = hint != nullptr && *hint > index_ && *hint < past ? *hint : first;
  std::uint32_t i = start;
  do {
    const std::uint32_t next = after(i + 1);
    const std::string_view name = JsonValue(*doc_, i).string_view();
    if (same(name, key)) {
      if (hint != nullptr) *hint = next;
      return JsonValue(*doc_, i + 1);
    }
    i = next == past ? first : next;
  } while (i != start);
  return std::nullopt;
}

std::string JsonValue::describe() const {
  switch (type()) {
    case 'n': return "null";
    case 't': return "true";
    case 'f': return "false";
    case 'l': return std::to_string(int64());
    case 'u': return std::to_string(uint64());
    case 'd': {  // the shortest form that reads back the same, a whole number with ".0"
      std::array<char, 32> buffer{};
      const auto written = std::to_chars(buffer.data(), buffer.data() + buffer.size(), number());
      std::string shown(buffer.data(), written.ptr);
      if (shown.find_first_of(".e") == std::string::npos) shown += ".0";
      return shown;
    }
    case '"': return "\"" + std::string(string_view().substr(0, 40)) + "\"";
    case '[': return "a list";
    case '{': return "an object";
    default: return "?";
  }
}

}  // namespace precision_probe::json_fields
