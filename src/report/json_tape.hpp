#pragma once
// A strict JSON parser (RFC 8259, duplicate keys refused) that builds a flat tape instead of a tree
// of allocated nodes: one 24-byte entry per value in one vector, texts without escapes pointing
// into the input. It is what reads report files (read_report_json), where a fleet's summary reads
// thousands of them: nlohmann/json's DOM costs an allocation per value and reads at about 160 MB/s;
// the tape reads several times faster (figures in docs/performance.md). The worker protocol keeps
// nlohmann/json.
//
//   TapeDocument doc;
//   if (std::string error = doc.parse(text); !error.empty()) ...   // text must outlive doc
//   TapeValue root = doc.root();

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace precision_probe::json_fields {

class TapeValue;

class TapeDocument {
 public:
  enum class Type : std::uint8_t {
    null,
    boolean,
    integer,
    unsigned_integer,
    number,
    string,
    array,
    object
  };
  struct Entry {
    Type type = Type::null;
    bool owned = false;      // a string whose text is in `owned_` (it had escapes, or was set)
    std::uint32_t size = 0;  // members of an object, elements of an array
    std::uint32_t next = 0;  // the entry after this value and everything inside it
    union {
      bool boolean;
      std::int64_t integer;
      std::uint64_t unsigned_integer;
      double number;
      struct {
        std::uint32_t offset;
        std::uint32_t length;
      } text;
    } value{};
  };

  // Parses `text` (at most 4 GiB); "" on success, else what is wrong and at which byte. A
  // document nested deeper than 512 levels is refused, and so is an object that names a member
  // twice (its name, the object's place and both bytes said). `text` must outlive the document.
  std::string parse(std::string_view text);

  TapeValue root() const;
  // Replaces the text of a string value (a reader upgrading an older schema's names).
  void set_text(const TapeValue& value, std::string_view text);

 private:
  friend class TapeValue;
  friend class TapeParser;
  std::string_view input_;
  std::vector<Entry> entries_;
  std::string owned_;
};

// A value in a parsed document: a document and an entry's index, copied freely. The interface is
// the one json_fields' reader needs, and nlohmann/json's wrapper (JsonView) offers the same.
class TapeValue {
 public:
  TapeValue(const TapeDocument& doc, std::uint32_t index) : doc_(&doc), index_(index) {}

  bool is_null() const { return type() == TapeDocument::Type::null; }
  bool is_boolean() const { return type() == TapeDocument::Type::boolean; }
  bool is_number() const { return is_number_integer() || type() == TapeDocument::Type::number; }
  bool is_number_integer() const {
    return type() == TapeDocument::Type::integer || type() == TapeDocument::Type::unsigned_integer;
  }
  bool is_number_unsigned() const {  // as nlohmann/json: a non-negative integer
    return type() == TapeDocument::Type::unsigned_integer ||
           (type() == TapeDocument::Type::integer && entry().value.integer >= 0);
  }
  bool is_string() const { return type() == TapeDocument::Type::string; }
  bool is_array() const { return type() == TapeDocument::Type::array; }
  bool is_object() const { return type() == TapeDocument::Type::object; }

  bool boolean() const { return entry().value.boolean; }
  double number() const;                  // any number
  std::int64_t int64() const;             // an integer (an unsigned one past 2^63 wraps)
  std::uint64_t uint64() const;           // a non-negative integer
  std::string_view string_view() const {  // a string
    const TapeDocument::Entry& e = entry();
    const char* base = e.owned ? doc_->owned_.data() : doc_->input_.data();
    return {base + e.value.text.offset, e.value.text.length};  // within its text by construction
  }
  std::size_t size() const { return entry().size; }

  // The value of `key` in an object, or none. `hint` is where the search starts: the member
  // after the one found last, so that fields read in the order they were written are found at
  // once. (A parsed document names each member of an object once.)
  std::optional<TapeValue> find(std::string_view key, std::uint32_t* hint = nullptr) const;

  template <class F>
  void for_each(F&& f) const {  // f(TapeValue) for each element of an array
    std::uint32_t i = index_ + 1;
    for (std::uint32_t n = 0; n < size(); ++n) {
      const TapeValue element(*doc_, i);
      f(element);
      i = doc_->entries_[i].next;
    }
  }
  template <class F>
  void for_each_member(F&& f) const {  // f(key, TapeValue) for each member of an object
    std::uint32_t i = index_ + 1;
    for (std::uint32_t n = 0; n < size(); ++n) {
      const TapeValue key(*doc_, i);
      const TapeValue value(*doc_, i + 1);
      f(key.string_view(), value);
      i = doc_->entries_[i + 1].next;
    }
  }

  template <class F>
  void for_each_key(F&& f) const {  // f(TapeValue) for each member's name of an object
    std::uint32_t i = index_ + 1;
    for (std::uint32_t n = 0; n < size(); ++n) {
      f(TapeValue(*doc_, i));
      i = doc_->entries_[i + 1].next;
    }
  }

  // A number or a literal as JSON writes it (for messages); a text in quotes (cut at 40 bytes), "a
  // list", "an object".
  std::string describe() const;

 private:
  friend class TapeDocument;
  TapeDocument::Type type() const { return entry().type; }
  const TapeDocument::Entry& entry() const { return doc_->entries_[index_]; }

  const TapeDocument* doc_;
  std::uint32_t index_;
};

}  // namespace precision_probe::json_fields
