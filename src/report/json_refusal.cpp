#include "report/json_refusal.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "strings/strings.hpp"

namespace precision_probe::json_fields {

namespace {

namespace od = simdjson::ondemand;

struct Problem {
  std::size_t byte = 0;
  std::string path;  // "devices[1].precisions"; "" for the top level or where it is not known
  std::string what;
};

// "byte 58 (line 3, column 12)", or with `brief` "byte 58, line 3, column 12".
std::string place(std::string_view text, std::size_t byte, bool brief = false) {
  const std::string_view before = text.substr(0, byte);
  const std::size_t line_start = before.rfind('\n') + 1;  // npos + 1 is 0
  const auto line = 1 + std::count(before.begin(), before.end(), '\n');
  const std::string where =
      "line " + std::to_string(line) + ", column " + std::to_string(byte - line_start + 1);
  return "byte " + std::to_string(byte) + (brief ? ", " + where : " (" + where + ")");
}

std::string member_path(const std::string& parent, std::string_view name) {
  const std::string shown = printable(name, 64);
  return parent.empty() ? shown : parent + "." + shown;
}

// What the bytes show alone, before any value is read: invalid UTF-8; a control character in a
// text, or a text without its closing quote; a backslash outside a text (simdjson would take the
// quote after it as escaped and find a text never closed further on).
std::optional<Problem> byte_problem(std::string_view text) {
  bool in_text = false;
  bool escaped = false;
  std::size_t opened = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const std::size_t length = utf8_length(text, i);
      if (length == 0) return Problem{i, "", "invalid UTF-8"};
      i += length;
      escaped = false;
      continue;
    }
    if (in_text && c < 0x20) {
      return Problem{i, "", "a control character inside a text (write it as an escape)"};
    }
    if (in_text) {
      in_text = escaped || c != '"';
      escaped = !escaped && c == '\\';
    } else if (c == '"') {
      in_text = true;
      opened = i;
    } else if (c == '\\') {
      return Problem{i, "", "unexpected '\\' outside a text"};
    }
    ++i;
  }
  if (in_text) return Problem{opened, "", "a text without its closing quote"};
  return std::nullopt;
}

// Whether `token` (a number's text, perhaps with space after it) is a number as JSON writes one.
bool json_number_form(std::string_view token) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t start = i;
    while (i < token.size() && token[i] >= '0' && token[i] <= '9') ++i;
    return i - start;
  };
  if (i < token.size() && token[i] == '-') ++i;
  const std::size_t whole = digits();
  if (whole == 0 || (whole > 1 && token[i - whole] == '0')) return false;
  if (i < token.size() && token[i] == '.' && (++i, digits() == 0)) return false;
  if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    if (i < token.size() && (token[i] == '+' || token[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == token.size() || std::string_view(" \t\r\n,]}").find(token[i]) != token.npos;
}

std::string_view token_of(od::value& v) { return v.raw_json_token(); }
std::string_view token_of(od::document& d) {
  std::string_view token;
  if (d.raw_json_token().get(token) != simdjson::SUCCESS) return {};
  return token;
}

// The walk: every value read as its type says, down to the first that does not read. The first
// `skip` bytes (a byte order mark) are not read; every place counts from the text's first byte.
class Walk {
 public:
  Walk(std::string_view text, std::size_t skip, std::size_t max_depth)
      : text_(text), skip_(skip), copy_(text.substr(skip)), max_depth_(max_depth) {}

  std::optional<Problem> run() {
    if (auto p = byte_problem(text_.substr(skip_))) {
      p->byte += skip_;
      return p;
    }
    auto document = parser_.iterate(copy_);
    if (document.error() == simdjson::EMPTY) {
      return Problem{skip_, "", "no JSON value (the text is empty)"};
    }
    if (document.error() != simdjson::SUCCESS) return std::nullopt;
    doc_ = std::move(document.value_unsafe());
    od::json_type type{};
    if (const auto e = doc_.type().get(type)) return stuck("", e);
    std::optional<Problem> p;
    if (type == od::json_type::array || type == od::json_type::object) {
      od::value root;
      if (const auto e = doc_.get_value().get(root)) return stuck("", e);
      p = value(root, "", 0);
    } else {
      p = scalar(doc_, type, "");
    }
    if (p) return p;
    const char* after = nullptr;
    if (doc_.current_location().get(after) == simdjson::SUCCESS) {
      return Problem{offset(after), "", "text after the document's end"};
    }
    return std::nullopt;
  }

 private:
  std::size_t offset(const char* p) const {
    return skip_ + static_cast<std::size_t>(p - copy_.data());
  }

  // Where the walk stands when a container does not read on.
  Problem stuck(const std::string& path, simdjson::error_code e) {
    const char* at = nullptr;
    if (e == simdjson::INCOMPLETE_ARRAY_OR_OBJECT ||
        doc_.current_location().get(at) != simdjson::SUCCESS || offset(at) >= text_.size()) {
      return {text_.size(), path, "the text ends before the document does"};
    }
    const auto c = static_cast<unsigned char>(*at);
    const std::string shown =
        c >= 0x20 && c < 0x7F ? std::string("'") + *at + "'" : "byte " + std::to_string(c);
    return {offset(at), path, "unexpected " + shown};
  }

  std::optional<Problem> value(od::value v, const std::string& path, std::size_t depth) {
    od::json_type type{};
    if (const auto e = v.type().get(type)) return stuck(path, e);
    if (type != od::json_type::array && type != od::json_type::object) {
      return scalar(v, type, path);
    }
    if (depth >= max_depth_) {  // (its place would be hundreds of "[0]")
      return Problem{offset(token_of(v).data()), "",
                     "nested more than " + std::to_string(max_depth_) + " levels deep"};
    }
    return type == od::json_type::array ? array(v, path, depth + 1) : object(v, path, depth + 1);
  }

  std::optional<Problem> array(od::value v, const std::string& path, std::size_t depth) {
    od::array list;
    if (const auto e = v.get_array().get(list)) return stuck(path, e);
    std::size_t index = 0;
    for (auto element : list) {
      od::value item;
      if (const auto e = element.get(item)) return stuck(path, e);
      if (auto p = value(item, path + "[" + std::to_string(index++) + "]", depth)) return p;
    }
    return std::nullopt;
  }

  std::optional<Problem> object(od::value v, const std::string& path, std::size_t depth) {
    od::object members;
    if (const auto e = v.get_object().get(members)) return stuck(path, e);
    // Names and where they stand: looked up by hash, so that an object of many members costs what
    // it holds, not its square (this walk runs when a document is refused).
    std::unordered_map<std::string, std::size_t> seen;
    for (auto member : members) {
      od::field field;
      if (const auto e = std::move(member).get(field)) return stuck(path, e);
      const std::size_t at = offset(field.key().raw()) - 1;  // the name's opening quote
      std::string_view name;
      if (field.unescaped_key().get(name) != simdjson::SUCCESS) {
        return Problem{at, path, "an invalid escape in a member's name"};
      }
      const auto [first, fresh] = seen.emplace(name, at);
      if (!fresh) return duplicate(name, path, at, first->second);
      if (auto p = value(field.value(), member_path(path, name), depth)) return p;
    }
    return std::nullopt;
  }

  Problem duplicate(std::string_view name, const std::string& path, std::size_t at,
                    std::size_t first) const {
    return {at, "",
            "the member \"" + printable(name, 64) + "\" of " +
                (path.empty() ? std::string("the top-level object") : "the object " + path) +
                " is given twice (first at " + place(text_, first, true) +
                "): a strict reader refuses duplicate keys"};
  }

  template <class V>
  std::optional<Problem> scalar(V& v, od::json_type type, const std::string& path) {
    const std::string_view token = token_of(v);
    const Problem here{token.data() != nullptr ? offset(token.data()) : 0, path, ""};
    // Inside a list or object, a value that does not read and runs to the text's end was cut.
    const auto refused = [&](const char* what) {
      if (!path.empty() && ends_the_text(here.byte)) {
        return Problem{text_.size(), path, "the text ends before the document does"};
      }
      return Problem{here.byte, path, what};
    };
    switch (type) {
      case od::json_type::number: {
        od::number n;
        double d = 0;
        // An integer past 64 bits reads as a floating-point number.
        if (v.get_number().get(n) == simdjson::SUCCESS ||
            v.get_double().get(d) == simdjson::SUCCESS) {
          return std::nullopt;
        }
        return refused(json_number_form(token) ? "a number out of range" : "a malformed number");
      }
      case od::json_type::string: {
        std::string_view s;
        if (v.get_string().get(s) == simdjson::SUCCESS) return std::nullopt;
        return refused("an invalid escape in a text");
      }
      case od::json_type::boolean:
      case od::json_type::null: {
        bool b = false;
        const bool read = type == od::json_type::boolean
                              ? v.get_bool().get(b) == simdjson::SUCCESS
                              : v.is_null().get(b) == simdjson::SUCCESS && b;
        if (read) return std::nullopt;
        return refused("unexpected text (true, false or null?)");
      }
      case od::json_type::array:
      case od::json_type::object: break;
    }
    return std::nullopt;
  }

  // Whether nothing but a scalar's own letters and digits stand from `byte` to the text's end.
  bool ends_the_text(std::size_t byte) const {
    const std::string_view rest = text_.substr(std::min(byte, text_.size()));
    return std::all_of(rest.begin(), rest.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
             std::string_view(".+-E").find(c) != std::string_view::npos;
    });
  }

  std::string_view text_;
  std::size_t skip_;
  simdjson::padded_string copy_;
  std::size_t max_depth_;
  od::parser parser_;
  od::document doc_;
};

}  // namespace

std::string json_refusal(std::string_view text, std::size_t skip, std::size_t max_depth,
                         const std::string& fallback) {
  const std::optional<Problem> p = Walk(text, skip, max_depth).run();
  if (!p) return "not valid JSON: " + fallback;
  // A long place keeps its end, where the value is.
  constexpr std::size_t kShown = 120;
  const std::string path =
      p->path.size() <= kShown ? p->path : "..." + p->path.substr(p->path.size() - kShown + 3);
  return "at " + place(text, p->byte) + (path.empty() ? "" : ", in " + path) + ": " + p->what;
}

}  // namespace precision_probe::json_fields
