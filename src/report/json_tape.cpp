#include "report/json_tape.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <optional>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace precision_probe::json_fields {

using Type = TapeDocument::Type;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the eight-byte scans find the first byte with __builtin_ctzll: little-endian only");

namespace {

// Byte classes: white space; the bytes a text holds as they are (not '"', '\\', a control
// character or the start of a UTF-8 sequence).
struct ByteClasses {
  bool space[256] = {};
  bool plain[256] = {};
  constexpr ByteClasses() {
    for (const char c : {' ', '\n', '\r', '\t'}) space[static_cast<unsigned char>(c)] = true;
    for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  }
};
constexpr ByteClasses kBytes;

// Where the plain bytes of a text starting at `p` end. Sixteen bytes at a time where SSE2 is (every
// x86-64): '"', '\\' and, as signed bytes, those below 0x20 (a control character or >= 0x80).
// Then eight at a time: a word's first byte that is one of those found by the bit tricks that are
// exact for the lowest such byte (borrows only reach the bytes above it).
const char* plain_run(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quotes = _mm_set1_epi8('"');
  const __m128i slashes = _mm_set1_epi8('\\');
  const __m128i controls = _mm_set1_epi8(0x20);
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i special =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quotes), _mm_cmpeq_epi8(v, slashes)),
                     _mm_cmplt_epi8(v, controls));
    const int mask = _mm_movemask_epi8(special);
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  while (end - p >= 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, p, 8);
    const std::uint64_t quote = w ^ (kOnes * '"');
    const std::uint64_t slash = w ^ (kOnes * '\\');
    const std::uint64_t special =
        ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash) | ((w - kOnes * 0x20) & ~w) | w;
    if ((special & kHigh) != 0) return p + __builtin_ctzll(special & kHigh) / 8;
    p += 8;
  }
  while (p != end && kBytes.plain[static_cast<unsigned char>(*p)]) ++p;
  return p;
}

// Where a run of spaces (' ' only) starting at `p` ends, sixteen or eight bytes at a time.
const char* space_run(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(' ');
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const auto other =
        static_cast<unsigned>(~_mm_movemask_epi8(_mm_cmpeq_epi8(v, space))) & 0xFFFFU;
    if (other != 0) return p + __builtin_ctz(other);
    p += 16;
  }
#endif
  while (end - p >= 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, p, 8);
    const std::uint64_t other = word ^ 0x2020202020202020ULL;
    if (other != 0) return p + __builtin_ctzll(other) / 8;
    p += 8;
  }
  while (p != end && *p == ' ') ++p;
  return p;
}

}  // namespace

// One parse: the input, the position, the containers still open. The loop reads a value, then the
// separators and closings after it up to the next value; the first error is kept in `error_` and
// ends the parse.
class TapeParser {
 public:
  TapeParser(TapeDocument& doc, std::string_view text)
      : d_(doc), begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

  std::string run();

 private:
  [[gnu::noinline, gnu::cold]] bool fail(const char* what) {
    error_ = "at byte " + std::to_string(p_ - begin_) + ": " + what;
    return false;
  }
  // Space is mostly none or one byte before a value, and a line's end and its indentation before
  // a member: the first case at once, the runs of spaces many bytes at a time.
  void skip_space() {
    if (p_ != end_ && static_cast<unsigned char>(*p_) > ' ') return;
    const char* p = p_;  // a local: the member would be stored on every byte
    while (p != end_ && kBytes.space[static_cast<unsigned char>(*p)]) p = space_run(p + 1, end_);
    p_ = p;
  }
  TapeDocument::Entry& push(Type type) {
    TapeDocument::Entry& e = d_.entries_.emplace_back();
    e.type = type;
    e.next = static_cast<std::uint32_t>(d_.entries_.size());
    return e;
  }
  bool value();
  [[gnu::noinline]] bool unexpected(char c);
  bool open(char c, bool& empty);
  bool key();
  bool after_value();
  bool string();
  [[gnu::noinline]] bool string_slow(const char* start, TapeDocument::Entry& entry);
  bool escape();
  bool utf8();
  bool number();
  bool number_slow(const char* start, bool integral, TapeDocument::Entry& e);
  bool literal(std::string_view word);
  bool unique_keys(std::uint32_t object);
  [[gnu::noinline, gnu::cold]] bool duplicate_key(std::uint32_t first, std::uint32_t second);
  std::string_view key_text(std::uint32_t entry) const;
  bool unique_keys_sorted(std::uint32_t object, std::uint32_t n);
  static std::uint64_t name_hash(std::string_view name);

  TapeDocument& d_;
  const char* begin_;
  const char* p_;
  const char* end_;
  std::vector<std::uint32_t> open_;  // the containers open, innermost last
  std::vector<std::pair<std::uint64_t, std::uint32_t>> keys_;  // unique_keys()' scratch
  std::string error_;
};

std::string TapeParser::run() {
  skip_space();
  if (p_ == end_) {
    fail("no JSON value (the text is empty)");
    return error_;
  }
  // At the top of the loop p_ is at a value's first byte.
  while (value() && after_value()) {
    if (open_.empty()) break;
  }
  return error_;
}

// A value at p_: a scalar, or containers opened down to the first value that is not one (with
// each object's first member's name read).
bool TapeParser::value() {
  while (*p_ == '{' || *p_ == '[') {
    const char c = *p_;
    bool empty = false;
    if (!open(c, empty)) return false;
    if (empty) return true;
    if (c == '{' && !key()) return false;
    skip_space();
    if (p_ == end_) return fail("the text ends where a value should be");
  }
  const char c = *p_;
  if (c == '"') return string();
  if (c == '-' || (c >= '0' && c <= '9')) return number();
  if (c == 't' || c == 'f') {
    if (!literal(c == 't' ? "true" : "false")) return false;
    push(Type::boolean).value.boolean = c == 't';
    return true;
  }
  if (c == 'n') {
    if (!literal("null")) return false;
    push(Type::null);
    return true;
  }
  return unexpected(c);
}

bool TapeParser::unexpected(char c) {
  const std::string what =
      std::string("unexpected character '") + (c >= 0x20 && c < 0x7f ? c : '?') + "'";
  return fail(what.c_str());
}

// '{' or '[' at p_: its entry, and whether it closes at once ("{}", "[ ]").
bool TapeParser::open(char c, bool& empty) {
  if (open_.size() >= 512) return fail("nested more than 512 levels deep");
  const auto index = static_cast<std::uint32_t>(d_.entries_.size());
  push(c == '{' ? Type::object : Type::array);
  ++p_;
  skip_space();
  empty = p_ != end_ && *p_ == (c == '{' ? '}' : ']');
  if (empty) {
    ++p_;
  } else {
    open_.push_back(index);
  }
  return true;
}

// A member's name and its ':' (space before each skipped), p_ left after the ':'.
inline bool TapeParser::key() {
  skip_space();
  if (p_ == end_ || *p_ != '"') return fail("expected a member's name in quotes");
  if (!string()) return false;
  skip_space();
  if (p_ == end_ || *p_ != ':') return fail("expected ':' after a member's name");
  ++p_;
  return true;
}

// After a value: its container counts it; then ',' (and the next member's name) leaves p_ at the
// next value, or the closing brackets are read up to one that is followed by ',' or the end.
bool TapeParser::after_value() {
  while (true) {
    skip_space();
    if (open_.empty()) {
      if (p_ != end_) return fail("text after the document's end");
      return true;
    }
    TapeDocument::Entry& container = d_.entries_[open_.back()];
    ++container.size;
    const bool object = container.type == Type::object;
    if (p_ != end_ && *p_ == ',') {
      ++p_;
      if (object && !key()) return false;
      skip_space();
      if (p_ == end_) return fail("the text ends where a value should be");
      return true;
    }
    if (p_ == end_ || *p_ != (object ? '}' : ']')) {
      return fail(object ? "expected ',' or '}' in an object" : "expected ',' or ']' in a list");
    }
    if (object && !unique_keys(open_.back())) return false;
    ++p_;
    container.next = static_cast<std::uint32_t>(d_.entries_.size());
    open_.pop_back();
  }
}

std::string_view TapeParser::key_text(std::uint32_t entry) const {
  return TapeValue(d_, entry).string_view();
}

// An object that names a member twice is refused (RFC 8259 leaves the meaning of one open: one
// reader takes the first, Python and jq the last, so a report could say two things). Checked as
// the object closes: its names into a table of 64 slots by a hash of their length and three of
// their bytes (a report's objects have about nine members), only names of one slot compared in
// full; an object of more than 32 members is sorted by that hash instead.
inline std::uint64_t TapeParser::name_hash(std::string_view name) {
  const std::size_t n = name.size();
  if (n == 0) return 0;
  const auto byte = [name](std::size_t i) {
    return std::uint64_t{static_cast<unsigned char>(name[i])};
  };
  const std::uint64_t mixed = n | byte(0) << 16 | byte(n - 1) << 24 | byte(n / 2) << 32;
  return mixed * 0x9E3779B97F4A7C15ULL;  // Fibonacci hashing: the top bits are the slot
}

bool TapeParser::unique_keys(std::uint32_t object) {
  const std::uint32_t n = d_.entries_[object].size;
  if (n < 2) return true;
  if (n > 32) return unique_keys_sorted(object, n);
  // The names read straight from the entries: this runs for every object of every report.
  const TapeDocument::Entry* entries = d_.entries_.data();
  const char* input = d_.input_.data();
  const char* owned = d_.owned_.data();
  const auto name_of = [&](std::uint32_t i) {
    const TapeDocument::Entry& e = entries[i];
    return std::string_view((e.owned ? owned : input) + e.value.text.offset, e.value.text.length);
  };
  std::array<std::uint32_t, 64> slots{};  // a name's entry + 1; 0 is free
  for (std::uint32_t i = object + 1, m = 0; m < n; ++m, i = entries[i + 1].next) {
    const std::string_view name = name_of(i);
    for (auto h = static_cast<std::uint32_t>(name_hash(name) >> 58);; h = (h + 1) & 63U) {
      if (slots[h] == 0) {
        slots[h] = i + 1;
        break;
      }
      if (name_of(slots[h] - 1) == name) return duplicate_key(slots[h] - 1, i);
    }
  }
  return true;
}

bool TapeParser::unique_keys_sorted(std::uint32_t object, std::uint32_t n) {
  keys_.clear();
  for (std::uint32_t i = object + 1, m = 0; m < n; ++m, i = d_.entries_[i + 1].next) {
    keys_.emplace_back(name_hash(key_text(i)), i);
  }
  std::sort(keys_.begin(), keys_.end());  // by hash, then by place
  for (std::size_t run = 0; run < keys_.size();) {
    std::size_t end = run + 1;
    while (end < keys_.size() && keys_[end].first == keys_[run].first) ++end;
    for (std::size_t b = run + 1; b < end; ++b) {
      for (std::size_t a = run; a < b; ++a) {
        if (key_text(keys_[a].second) == key_text(keys_[b].second)) {
          return duplicate_key(keys_[a].second, keys_[b].second);
        }
      }
    }
    run = end;
  }
  return true;
}

// The message: the member's name, the object's place in the document ("devices[0].precisions",
// or the top-level object), and the bytes where the name stands (where a name held an escape, its
// place in the text is not kept: the byte is then the object's end).
bool TapeParser::duplicate_key(std::uint32_t first, std::uint32_t second) {
  std::string path;
  for (std::size_t level = 1; level < open_.size(); ++level) {
    const TapeDocument::Entry& parent = d_.entries_[open_[level - 1]];
    if (parent.type == Type::object) {
      path += (path.empty() ? "" : ".") + std::string(key_text(open_[level] - 1).substr(0, 64));
    } else {
      path += "[" + std::to_string(parent.size) + "]";
    }
  }
  const auto place = [&](std::uint32_t entry) -> std::optional<std::size_t> {
    const TapeDocument::Entry& e = d_.entries_[entry];
    if (e.owned) return std::nullopt;
    return std::size_t{e.value.text.offset} - 1;  // its opening quote
  };
  const std::optional<std::size_t> at = place(second);
  const std::optional<std::size_t> before = place(first);
  error_ = "at byte " + std::to_string(at ? *at : static_cast<std::size_t>(p_ - begin_)) +
           ": the member \"" + std::string(key_text(second).substr(0, 64)) + "\" of " +
           (path.empty() ? std::string("the top-level object") : "the object " + path) +
           " is given twice" +
           (before ? " (first at byte " + std::to_string(*before) + ")" : std::string()) +
           ": a strict reader refuses duplicate keys";
  return false;
}

// A text at p_ (its opening quote). Most are plain: read here, the rest by string_slow().
inline bool TapeParser::string() {
  const char* start = p_ + 1;
  TapeDocument::Entry& e = push(Type::string);
  // The plain part: no escape, no control character, ASCII (UTF-8 is checked on the slow path).
  p_ = plain_run(start, end_);
  if (p_ == end_ || *p_ != '"') return string_slow(start, e);
  e.value.text.offset = static_cast<std::uint32_t>(start - begin_);
  e.value.text.length = static_cast<std::uint32_t>(p_ - start);
  ++p_;
  return true;
}

// A text with escapes or bytes past ASCII, from `start`; p_ is at the first such byte.
bool TapeParser::string_slow(const char* start, TapeDocument::Entry& entry) {
  // Escapes or non-ASCII: the text is decoded into the document's own buffer.
  const std::size_t offset = d_.owned_.size();
  d_.owned_.append(start, p_);
  while (true) {
    if (p_ == end_) {
      return fail("a text without its closing quote");
    }
    const auto c = static_cast<unsigned char>(*p_);
    if (c == '"') break;
    if (c < 0x20) {
      return fail("a control character inside a text (write it as an escape)");
    }
    if (c == '\\') {
      if (!escape()) return false;
    } else if (c >= 0x80) {
      if (!utf8()) return false;
    } else {
      d_.owned_.push_back(static_cast<char>(c));
      ++p_;
    }
  }
  ++p_;
  entry.owned = true;
  entry.value.text.offset = static_cast<std::uint32_t>(offset);
  entry.value.text.length = static_cast<std::uint32_t>(d_.owned_.size() - offset);
  return true;
}

namespace {

int hex4(const char* p, const char* end) {
  if (end - p < 4) return -1;
  int value = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = p[i];
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

bool TapeParser::escape() {
  ++p_;  // the backslash
  if (p_ == end_) {
    return fail("a text that ends in a backslash");
  }
  const char c = *p_++;
  switch (c) {
    case '"': d_.owned_.push_back('"'); return true;
    case '\\': d_.owned_.push_back('\\'); return true;
    case '/': d_.owned_.push_back('/'); return true;
    case 'b': d_.owned_.push_back('\b'); return true;
    case 'f': d_.owned_.push_back('\f'); return true;
    case 'n': d_.owned_.push_back('\n'); return true;
    case 'r': d_.owned_.push_back('\r'); return true;
    case 't': d_.owned_.push_back('\t'); return true;
    case 'u': break;
    default: return fail("an unknown escape in a text");
  }
  int cp = hex4(p_, end_);
  if (cp < 0) {
    return fail("\\u without four hexadecimal digits");
  }
  p_ += 4;
  if (cp >= 0xDC00 && cp <= 0xDFFF) {
    return fail("a lone low surrogate in \\u escapes");
  }
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    const int low = end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u' ? hex4(p_ + 2, end_) : -1;
    if (low < 0xDC00 || low > 0xDFFF) {
      return fail("a high surrogate without its low surrogate in \\u escapes");
    }
    p_ += 6;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  }
  append_utf8(d_.owned_, static_cast<std::uint32_t>(cp));
  return true;
}

// One UTF-8 sequence of two to four bytes, checked (no overlong forms, no surrogates, <= U+10FFFF).
bool TapeParser::utf8() {
  const auto b0 = static_cast<unsigned char>(*p_);
  int length = 0;
  std::uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    cp = b0 & 0x07;
  }
  bool ok = length > 0 && end_ - p_ >= length;
  for (int i = 1; ok && i < length; ++i) {
    const auto b = static_cast<unsigned char>(p_[i]);
    ok = (b & 0xC0) == 0x80;
    cp = (cp << 6) | (b & 0x3F);
  }
  const std::uint32_t least = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
  ok = ok && cp >= least && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
  if (!ok) {
    return fail("invalid UTF-8 in a text");
  }
  d_.owned_.append(p_, static_cast<std::size_t>(length));
  p_ += length;
  return true;
}

namespace {

// The powers of ten that a double holds exactly.
constexpr double kExactPowers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

// The digits at `p` into `value` (the first 19 of them: no overflow); where they end.
const char* scan_digits(const char* p, const char* end, std::uint64_t& value, int& count) {
  const char* start = p;
  while (p != end && static_cast<unsigned char>(*p - '0') <= 9) {
    if (p - start < 19) value = value * 10 + static_cast<std::uint64_t>(*p - '0');
    ++p;
  }
  count = static_cast<int>(p - start);
  return p;
}

// Whether a number (valid JSON) is below one in magnitude: its first significant digit stands
// after the point once the exponent is applied. Asked only of a number out of a double's range:
// below one it is too small, else too large.
bool below_one(std::string_view text) {
  const auto digit = [&](std::size_t i) {
    return i < text.size() && text[i] >= '0' && text[i] <= '9';
  };
  std::size_t i = text[0] == '-' ? 1 : 0;
  const std::size_t whole = i;
  while (digit(i)) ++i;
  std::optional<std::int64_t> lead;  // the power of ten of the first digit that is not 0
  for (std::size_t j = whole; j < i && !lead; ++j) {
    if (text[j] != '0') lead = static_cast<std::int64_t>(i - j) - 1;
  }
  if (i < text.size() && text[i] == '.') {
    const std::size_t point = i++;
    for (; digit(i); ++i) {
      if (!lead && text[i] != '0') lead = -static_cast<std::int64_t>(i - point);
    }
  }
  if (!lead) return true;  // zero
  std::int64_t power = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (text[i] == '+' || text[i] == '-') negative = text[i++] == '-';
    for (; digit(i); ++i) power = std::min<std::int64_t>(power * 10 + (text[i] - '0'), 1000000000);
  }
  return *lead + (negative ? -power : power) < 0;
}

}  // namespace

bool TapeParser::number() {
  const char* start = p_;
  const bool negative = *p_ == '-';
  if (negative) ++p_;
  std::uint64_t mantissa = 0;  // the digits, point left out, while there are at most 19
  int whole = 0;
  if (p_ != end_ && *p_ == '0') {
    ++p_;
    whole = 1;
  } else if (p_ = scan_digits(p_, end_, mantissa, whole); whole == 0) {
    return fail("a number without digits");
  }
  int fraction = 0;
  if (p_ != end_ && *p_ == '.') {
    ++p_;
    std::uint64_t digits = mantissa;
    p_ = scan_digits(p_, end_, digits, fraction);
    if (fraction == 0) return fail("a number without digits after its point");
    if (whole + fraction <= 19) mantissa = digits;
  }
  bool exponent = false;
  std::uint64_t power = 0;
  bool power_negative = false;
  if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
    ++p_;
    exponent = true;
    if (p_ != end_ && (*p_ == '+' || *p_ == '-')) power_negative = *p_++ == '-';
    int count = 0;
    p_ = scan_digits(p_, end_, power, count);
    if (count == 0) return fail("a number without digits in its exponent");
    if (count > 4) power = 100000;  // far past a double's range either way
  }
  TapeDocument::Entry& e = push(Type::number);
  // Most numbers are read here: an integer of up to 19 digits; a decimal whose digits make at most
  // 2^53, scaled by an exact power of ten (one rounding, as from_chars rounds).
  const bool integral = fraction == 0 && !exponent;
  if (integral && whole <= 19) {
    if (!negative) {
      e.type = Type::unsigned_integer;
      e.value.unsigned_integer = mantissa;
      return true;
    }
    if (mantissa <= (std::uint64_t{1} << 63)) {
      e.type = Type::integer;
      e.value.integer = static_cast<std::int64_t>(0 - mantissa);
      return true;
    }
  }
  const std::int64_t scale =
      (power_negative ? -static_cast<std::int64_t>(power) : static_cast<std::int64_t>(power)) -
      fraction;
  if (fraction + whole <= 19 && mantissa <= (std::uint64_t{1} << 53) && scale >= -22 &&
      scale <= 22 && !integral) {
    const auto m = static_cast<double>(mantissa);
    const double v = scale < 0 ? m / kExactPowers[-scale] : m * kExactPowers[scale];
    e.value.number = negative ? -v : v;
    return true;
  }
  return number_slow(start, integral, e);
}

// The rest: an integer past 19 digits (or 64 bits: a double then, as nlohmann/json), decimals with
// more digits or larger exponents.
bool TapeParser::number_slow(const char* start, bool integral, TapeDocument::Entry& e) {
  const std::string_view text(start, static_cast<std::size_t>(p_ - start));
  if (integral) {
    const bool negative = *start == '-';
    std::from_chars_result r{};
    if (negative) {
      r = std::from_chars(start, p_, e.value.integer);
      e.type = Type::integer;
    } else {
      r = std::from_chars(start, p_, e.value.unsigned_integer);
      e.type = Type::unsigned_integer;
    }
    if (r.ec == std::errc() && r.ptr == p_) return true;
    e.type = Type::number;  // too large for 64 bits: a floating-point number, as nlohmann/json
  }
  const auto r = std::from_chars(start, p_, e.value.number);
  if (r.ec == std::errc::result_out_of_range) {
    // Too small for a double is zero of its sign (as nlohmann/json reads it, strtod's answer);
    // too large is refused.
    if (!below_one(text)) return fail("a number out of range");
    e.value.number = *start == '-' ? -0.0 : 0.0;
  }
  return true;
}

bool TapeParser::literal(std::string_view word) {
  if (static_cast<std::size_t>(end_ - p_) < word.size() ||
      std::memcmp(p_, word.data(), word.size()) != 0) {
    return fail("unexpected text (true, false or null?)");
  }
  p_ += word.size();
  return true;
}

std::string TapeDocument::parse(std::string_view text) {
  // A UTF-8 byte order mark (an editor's, PowerShell's) is not part of the document.
  if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.remove_prefix(3);
  input_ = text;  // the texts' offsets count from here
  entries_.clear();
  owned_.clear();
  if (text.size() >= std::numeric_limits<std::uint32_t>::max()) return "a text of 4 GiB or more";
  entries_.reserve(text.size() / 16 + 16);
  std::string error = TapeParser(*this, text).run();
  if (!error.empty()) entries_.clear();
  return error;
}

TapeValue TapeDocument::root() const { return {*this, 0}; }

void TapeDocument::set_text(const TapeValue& value, std::string_view text) {
  Entry& e = entries_[value.index_];
  e.owned = true;
  e.value.text.offset = static_cast<std::uint32_t>(owned_.size());
  e.value.text.length = static_cast<std::uint32_t>(text.size());
  owned_.append(text);
}

double TapeValue::number() const {
  const TapeDocument::Entry& e = entry();
  if (e.type == Type::integer) return static_cast<double>(e.value.integer);
  if (e.type == Type::unsigned_integer) return static_cast<double>(e.value.unsigned_integer);
  return e.value.number;
}

std::int64_t TapeValue::int64() const {
  const TapeDocument::Entry& e = entry();
  return e.type == Type::integer ? e.value.integer
                                 : static_cast<std::int64_t>(e.value.unsigned_integer);
}

std::uint64_t TapeValue::uint64() const {
  const TapeDocument::Entry& e = entry();
  return e.type == Type::unsigned_integer ? e.value.unsigned_integer
                                          : static_cast<std::uint64_t>(e.value.integer);
}

namespace {

bool same_bytes(const char* a, const char* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

std::optional<TapeValue> TapeValue::find(std::string_view key, std::uint32_t* hint) const {
  const std::uint32_t n = size();
  const std::uint32_t first = index_ + 1;
  const std::uint32_t past = entry().next;
  // The walk starts at the hint (the entry of the member after the last one found) and goes round
  // the object once.
  std::uint32_t i = hint != nullptr && *hint > index_ && *hint < past ? *hint : first;
  for (std::uint32_t seen = 0; seen < n; ++seen) {
    const std::uint32_t after = doc_->entries_[i + 1].next;
    const std::string_view name = TapeValue(*doc_, i).string_view();
    // Lengths first: most names differ there; then the bytes, names being short.
    if (name.size() == key.size() && same_bytes(name.data(), key.data(), key.size())) {
      if (hint != nullptr) *hint = after;
      return TapeValue(*doc_, i + 1);
    }
    i = after == past ? first : after;
  }
  return std::nullopt;
}

std::string TapeValue::describe() const {
  switch (type()) {
    case Type::null: return "null";
    case Type::boolean: return boolean() ? "true" : "false";
    case Type::integer: return std::to_string(entry().value.integer);
    case Type::unsigned_integer: return std::to_string(entry().value.unsigned_integer);
    case Type::number: return std::to_string(entry().value.number);
    case Type::string: return "\"" + std::string(string_view().substr(0, 40)) + "\"";
    case Type::array: return "a list";
    case Type::object: return "an object";
  }
  return "?";
}

}  // namespace precision_probe::json_fields
