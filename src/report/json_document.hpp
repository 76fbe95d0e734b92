#pragma once
// Every JSON document the project reads (report files, a worker's lines, its plan, the driver
// agent's snapshots, telemetry samples) is parsed here, by simdjson's DOM parser: its SIMD kernels
// are chosen for the machine at run time, it validates the whole document (RFC 8259, UTF-8), and it
// leaves a flat tape of 64-bit words, one or two a value, the texts unescaped in a buffer of their
// own (simdjson's doc/tape.md). On top, what a strict reader adds: an object that names a member
// twice is refused, nesting is limited to 512 levels, a UTF-8 byte order mark is skipped, an
// integer past 64 bits is a floating-point number (as nlohmann/json reads it), and a refusal says
// where it is (line, column, byte, and the value's place in the document). JsonValue reads the
// tape directly, with the interface json_fields' reader needs.
//
//   JsonDocument doc;
//   if (const Expected<void> parsed = doc.parse(text); !parsed) ... parsed.error() ...
//   JsonValue root = doc.root();   // valid until the next parse

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "precision_probe/expected.hpp"

namespace precision_probe::json_fields {

class JsonValue;

// The bytes a parse may read past a text's end (simdjson's SIMDJSON_PADDING): a caller whose text
// is followed by that many readable bytes (a buffer reserved for it) saves the copy.
inline constexpr std::size_t kJsonPadding = 64;

class JsonDocument {
 public:
  JsonDocument();
  ~JsonDocument();
  JsonDocument(const JsonDocument&) = delete;
  JsonDocument& operator=(const JsonDocument&) = delete;

  // Parses `text`; where it is refused, what is wrong and where. `padded`: kJsonPadding bytes
  // after the text may be read (their values do not matter), so it is parsed where it stands.
  Expected<void> parse(std::string_view text, bool padded = false);
  JsonValue root() const;

 private:
  friend class JsonValue;
  struct Parser;
  // Whether every object of the parsed document names each member once, and no value is nested
  // deeper than the limit (simdjson's own limit does not count an empty list or object).
  bool unique_keys() const;
  bool unique_within(std::uint32_t container, std::uint32_t depth) const;
  bool skip_value(std::uint32_t value, std::uint32_t& next, std::uint32_t depth) const;
  bool names_differ(std::uint32_t object) const;
  // Why `text` (its first `skipped` bytes a byte order mark) was refused, and where.
  std::string refusal(std::string_view text, std::size_t skipped,
                      const std::string& simdjson_error) const;

  std::unique_ptr<Parser> parser_;
  const std::uint64_t* tape_ = nullptr;    // the parsed document's words
  const std::uint8_t* strings_ = nullptr;  // its texts: a 32-bit length, the bytes, a NUL
};

// A value of a parsed document: the document and the index of its first word, copied freely.
class JsonValue {
 public:
  JsonValue(const JsonDocument& doc, std::uint32_t index) : doc_(&doc), index_(index) {}

  bool is_null() const { return type() == 'n'; }
  bool is_boolean() const { return type() == 't' || type() == 'f'; }
  bool is_number() const { return is_number_integer() || type() == 'd'; }
  bool is_number_integer() const { return type() == 'l' || type() == 'u'; }
  bool is_number_unsigned() const {  // as nlohmann/json: a non-negative integer
    return type() == 'u' || (type() == 'l' && int64() >= 0);
  }
  bool is_string() const { return type() == '"'; }
  bool is_array() const { return type() == '['; }
  bool is_object() const { return type() == '{'; }

  bool boolean() const { return type() == 't'; }
  double number() const;                  // any number
  std::int64_t int64() const;             // an integer (an unsigned one past 2^63 wraps)
  std::uint64_t uint64() const;           // a non-negative integer
  std::string_view string_view() const {  // a string (or a member's name)
    const std::uint8_t* at = doc_->strings_ + payload();
    std::uint32_t length = 0;
    std::memcpy(&length, at, sizeof length);
    return {reinterpret_cast<const char*>(at + sizeof length), length};
  }
  std::size_t size() const;  // members of an object, elements of an array

  // The value of `key` in an object, or none. `hint` is where the search starts: the member
  // after the one found last, so that fields read in the order they were written are found at
  // once. (A parsed document names each member of an object once.)
  std::optional<JsonValue> find(std::string_view key, std::uint32_t* hint = nullptr) const;

  template <class F>
  void for_each(F&& f) const {  // f(JsonValue) for each element of an array
    for (std::uint32_t i = index_ + 1; i < end(); i = after(i)) f(JsonValue(*doc_, i));
  }
  template <class F>
  void for_each_member(F&& f) const {  // f(key, JsonValue) for each member of an object
    for (std::uint32_t i = index_ + 1; i < end(); i = after(i + 1)) {
      f(JsonValue(*doc_, i).string_view(), JsonValue(*doc_, i + 1));
    }
  }

  // A number or a literal as JSON writes it (for messages); a text in quotes (cut at 40 bytes), "a
  // list", "an object".
  std::string describe() const;

 private:
  friend class JsonDocument;
  std::uint64_t word(std::uint32_t i) const { return doc_->tape_[i]; }
  char type() const { return static_cast<char>(word(index_) >> 56); }
  std::uint64_t payload() const { return word(index_) & ((std::uint64_t{1} << 56) - 1); }
  // The index of a container's closing word.
  std::uint32_t end() const { return static_cast<std::uint32_t>(word(index_)) - 1; }
  // The index after the value at `i` (and everything inside it).
  std::uint32_t after(std::uint32_t i) const {
    const auto t = static_cast<char>(word(i) >> 56);
    if (t == '{' || t == '[') return static_cast<std::uint32_t>(word(i));
    return i + (t == 'l' || t == 'u' || t == 'd' ? 2 : 1);
  }

  const JsonDocument* doc_;
  std::uint32_t index_;
};

}  // namespace precision_probe::json_fields
