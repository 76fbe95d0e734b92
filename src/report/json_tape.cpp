#include "report/json_tape.hpp"

#include <charconv>
#include <cstring>
#include <limits>

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

// Where the plain bytes of a text starting at `p` end: eight bytes at a time, a word's first byte
// that is '"', '\\', a control character or >= 0x80 found by the bit tricks that are exact for the
// lowest such byte (borrows only reach the bytes above it).
const char* plain_run(const char* p, const char* end) {
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

}  // namespace

// One parse: the input, the position, the containers still open.
class TapeParser {
 public:
  TapeParser(TapeDocument& doc, std::string_view text)
      : d_(doc), begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

  std::string run();

 private:
  enum class Next { value, key, after_value, done };

  std::string fail(const std::string& what) const {
    return "at byte " + std::to_string(p_ - begin_) + ": " + what;
  }
  void skip_space() {
    // Indentation comes in runs of spaces after a line's end: eight bytes at a time, the first
    // that is not a space found in the word. A local pointer: the member would be stored on every
    // byte.
    const char* p = p_;
    while (p != end_ && kBytes.space[static_cast<unsigned char>(*p)]) {
      ++p;
      while (end_ - p >= 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, p, 8);
        const std::uint64_t other = word ^ 0x2020202020202020ULL;
        if (other != 0) {
          p += __builtin_ctzll(other) / 8;
          break;
        }
        p += 8;
      }
    }
    p_ = p;
  }
  std::uint32_t push(Type type) {
    d_.entries_.emplace_back();
    TapeDocument::Entry& e = d_.entries_.back();
    e.type = type;
    const auto index = static_cast<std::uint32_t>(d_.entries_.size() - 1);
    e.next = index + 1;
    return index;
  }
  Next value(std::string& error);
  Next after_value(std::string& error);
  bool string(std::string& error);
  bool escape(std::string& error);
  bool utf8(std::string& error);
  bool number(std::string& error);
  bool literal(std::string_view word, std::string& error);

  TapeDocument& d_;
  const char* begin_;
  const char* p_;
  const char* end_;
  std::vector<std::uint32_t> open_;
};

std::string TapeParser::run() {
  skip_space();
  if (p_ == end_) return fail("no JSON value (the text is empty)");
  std::string error;
  Next next = Next::value;
  while (next != Next::done && error.empty()) {
    switch (next) {
      case Next::value: next = value(error); break;
      case Next::key:
        skip_space();
        if (p_ == end_ || *p_ != '"') {
          error = fail("expected a member's name in quotes");
          break;
        }
        if (!string(error)) break;
        skip_space();
        if (p_ == end_ || *p_ != ':') {
          error = fail("expected ':' after a member's name");
          break;
        }
        ++p_;
        next = Next::value;
        break;
      case Next::after_value: next = after_value(error); break;
      case Next::done: break;
    }
  }
  return error;
}

TapeParser::Next TapeParser::value(std::string& error) {
  skip_space();
  if (p_ == end_) {
    error = fail("the text ends where a value should be");
    return Next::done;
  }
  const char c = *p_;
  if (c == '{' || c == '[') {
    if (open_.size() >= 512) {
      error = fail("nested more than 512 levels deep");
      return Next::done;
    }
    const std::uint32_t index = push(c == '{' ? Type::object : Type::array);
    ++p_;
    skip_space();
    if (p_ != end_ && *p_ == (c == '{' ? '}' : ']')) {
      ++p_;
      return Next::after_value;
    }
    open_.push_back(index);
    return c == '{' ? Next::key : Next::value;
  }
  bool ok = false;
  if (c == '"') {
    ok = string(error);
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    ok = number(error);
  } else if (c == 't' || c == 'f') {
    ok = literal(c == 't' ? "true" : "false", error);
    if (ok) d_.entries_[push(Type::boolean)].value.boolean = c == 't';
  } else if (c == 'n') {
    ok = literal("null", error);
    if (ok) push(Type::null);
  } else {
    error = fail(std::string("unexpected character '") + (c >= 0x20 && c < 0x7f ? c : '?') + "'");
  }
  return ok ? Next::after_value : Next::done;
}

TapeParser::Next TapeParser::after_value(std::string& error) {
  skip_space();
  if (open_.empty()) {
    if (p_ != end_) error = fail("text after the document's end");
    return Next::done;
  }
  const std::uint32_t top = open_.back();
  TapeDocument::Entry& container = d_.entries_[top];
  ++container.size;
  const bool object = container.type == Type::object;
  if (p_ != end_ && *p_ == ',') {
    ++p_;
    return object ? Next::key : Next::value;
  }
  if (p_ != end_ && *p_ == (object ? '}' : ']')) {
    ++p_;
    container.next = static_cast<std::uint32_t>(d_.entries_.size());
    open_.pop_back();
    return Next::after_value;
  }
  error = fail(object ? "expected ',' or '}' in an object" : "expected ',' or ']' in a list");
  return Next::done;
}

bool TapeParser::string(std::string& error) {
  ++p_;  // the opening quote
  const char* start = p_;
  const std::uint32_t index = push(Type::string);
  // The plain part: no escape, no control character, ASCII (UTF-8 is checked on the slow path).
  p_ = plain_run(p_, end_);
  if (p_ != end_ && *p_ == '"') {
    auto& text = d_.entries_[index].value.text;
    text.offset = static_cast<std::uint32_t>(start - begin_);
    text.length = static_cast<std::uint32_t>(p_ - start);
    ++p_;
    return true;
  }
  // Escapes or non-ASCII: the text is decoded into the document's own buffer.
  const std::size_t offset = d_.owned_.size();
  d_.owned_.append(start, p_);
  while (true) {
    if (p_ == end_) {
      error = fail("a text without its closing quote");
      return false;
    }
    const auto c = static_cast<unsigned char>(*p_);
    if (c == '"') break;
    if (c < 0x20) {
      error = fail("a control character inside a text (write it as an escape)");
      return false;
    }
    if (c == '\\') {
      if (!escape(error)) return false;
    } else if (c >= 0x80) {
      if (!utf8(error)) return false;
    } else {
      d_.owned_.push_back(static_cast<char>(c));
      ++p_;
    }
  }
  ++p_;
  TapeDocument::Entry& e = d_.entries_[index];
  e.owned = true;
  e.value.text.offset = static_cast<std::uint32_t>(offset);
  e.value.text.length = static_cast<std::uint32_t>(d_.owned_.size() - offset);
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

bool TapeParser::escape(std::string& error) {
  ++p_;  // the backslash
  if (p_ == end_) {
    error = fail("a text that ends in a backslash");
    return false;
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
    default: error = fail("an unknown escape in a text"); return false;
  }
  int cp = hex4(p_, end_);
  if (cp < 0) {
    error = fail("\\u without four hexadecimal digits");
    return false;
  }
  p_ += 4;
  if (cp >= 0xDC00 && cp <= 0xDFFF) {
    error = fail("a lone low surrogate in \\u escapes");
    return false;
  }
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    const int low = end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u' ? hex4(p_ + 2, end_) : -1;
    if (low < 0xDC00 || low > 0xDFFF) {
      error = fail("a high surrogate without its low surrogate in \\u escapes");
      return false;
    }
    p_ += 6;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  }
  append_utf8(d_.owned_, static_cast<std::uint32_t>(cp));
  return true;
}

// One UTF-8 sequence of two to four bytes, checked (no overlong forms, no surrogates, <= U+10FFFF).
bool TapeParser::utf8(std::string& error) {
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
    error = fail("invalid UTF-8 in a text");
    return false;
  }
  d_.owned_.append(p_, static_cast<std::size_t>(length));
  p_ += length;
  return true;
}

bool TapeParser::number(std::string& error) {
  const char* start = p_;
  auto digits = [this] {
    const char* p = p_;
    while (p != end_ && *p >= '0' && *p <= '9') ++p;
    const bool any = p != p_;
    p_ = p;
    return any;
  };
  if (*p_ == '-') ++p_;
  if (p_ != end_ && *p_ == '0') {
    ++p_;
  } else if (!digits()) {
    error = fail("a number without digits");
    return false;
  }
  bool integral = true;
  if (p_ != end_ && *p_ == '.') {
    ++p_;
    integral = false;
    if (!digits()) {
      error = fail("a number without digits after its point");
      return false;
    }
  }
  if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
    ++p_;
    integral = false;
    if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (!digits()) {
      error = fail("a number without digits in its exponent");
      return false;
    }
  }
  TapeDocument::Entry& e = d_.entries_[push(Type::number)];
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
    // Too small for a double is zero (as nlohmann/json reads it); too large is refused.
    const std::string_view text(start, static_cast<std::size_t>(p_ - start));
    if (text.find("e-") == std::string_view::npos && text.find("E-") == std::string_view::npos) {
      error = fail("a number out of range");
      return false;
    }
    e.value.number = 0.0;
  }
  return true;
}

bool TapeParser::literal(std::string_view word, std::string& error) {
  if (static_cast<std::size_t>(end_ - p_) < word.size() ||
      std::memcmp(p_, word.data(), word.size()) != 0) {
    error = fail("unexpected text (true, false or null?)");
    return false;
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

std::string_view TapeValue::string_view() const {
  const TapeDocument::Entry& e = entry();
  const std::string_view base = e.owned ? std::string_view(doc_->owned_) : doc_->input_;
  return base.substr(e.value.text.offset, e.value.text.length);
}

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
    // Lengths and first bytes first: most names differ there.
    if (name.size() == key.size() && (key.empty() || name[0] == key[0]) &&
        std::memcmp(name.data(), key.data(), key.size()) == 0) {
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
