// The reader of every JSON document the project reads (json_document.hpp: simdjson's DOM and the
// checks a strict reader adds): the values nlohmann/json reads, to the bit; what is not JSON, or
// names a member twice, or nests too deep, refused with where it is.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/json_document.hpp"
#include "report/json_fields.hpp"

namespace jf = precision_probe::json_fields;

namespace {

// The document back as nlohmann/json, through the view's interface only.
nlohmann::json rebuild(const jf::JsonValue& v) {
  if (v.is_null()) return nullptr;
  if (v.is_boolean()) return v.boolean();
  if (v.is_number_unsigned()) return v.uint64();
  if (v.is_number_integer()) return v.int64();
  if (v.is_number()) return v.number();
  if (v.is_string()) return std::string(v.string_view());
  if (v.is_array()) {
    nlohmann::json list = nlohmann::json::array();
    v.for_each([&](const jf::JsonValue& e) { list.push_back(rebuild(e)); });
    EXPECT_EQ(list.size(), v.size());
    return list;
  }
  nlohmann::json object = nlohmann::json::object();
  v.for_each_member([&](std::string_view key, const jf::JsonValue& value) {
    object[std::string(key)] = rebuild(value);
  });
  EXPECT_EQ(object.size(), v.size());
  return object;
}

jf::JsonValue first_element(const jf::JsonValue& list) {
  std::optional<jf::JsonValue> first;
  list.for_each([&](const jf::JsonValue& e) {
    if (!first) first = e;
  });
  return *first;
}

// What the document refuses in `text`: "" where it is parsed.
std::string parsed(jf::JsonDocument& doc, std::string_view text, bool padded = false) {
  const precision_probe::Expected<void> result = doc.parse(text, padded);
  return result ? std::string() : result.error();
}

std::string parse_error(const std::string& text) {
  jf::JsonDocument doc;
  return parsed(doc, text);
}

}  // namespace

TEST(JsonDocument, ReadsWhatNlohmannReadsTheSame) {
  const std::string text = R"({"a": [1, -2, 3.5, 1e3, -0, 0.25e-2, 18446744073709551615,
      -9223372036854775808, 18446744073709551616], "b": {"c": null, "d": true, "e": false},
      "s": "plain", "esc": "q\" b\\ s\/ \b\f\n\r\t \u00e9 \ud83d\ude00 \u0041", "u": "é€😀",
      "empty": {}, "none": [], "nested": [[[{}]]]})";
  jf::JsonDocument doc;
  ASSERT_EQ(parsed(doc, text), "");
  EXPECT_EQ(rebuild(doc.root()), nlohmann::json::parse(text));
  const auto a = doc.root().find("a");
  ASSERT_TRUE(a && a->is_array());
  EXPECT_EQ(a->size(), 9U);
  const auto esc = doc.root().find("esc");
  ASSERT_TRUE(esc);
  EXPECT_EQ(esc->string_view(), "q\" b\\ s/ \b\f\n\r\t é 😀 A");
  EXPECT_EQ(doc.root().find("none")->size(), 0U);
  EXPECT_FALSE(doc.root().find("empty")->find("x"));
}

TEST(JsonDocument, RandomDocumentsMatchNlohmann) {
  std::mt19937_64 rng(20261201);
  auto random_value = [&](auto& self, int depth) -> nlohmann::json {
    switch (rng() % (depth > 4 ? 5 : 7)) {
      case 0: return nullptr;
      case 1: return rng() % 2 == 0;
      case 2: return static_cast<std::int64_t>(rng()) >> (rng() % 64);
      case 3:
        return std::ldexp(static_cast<double>(rng() % 1000000) - 500000.0,
                          static_cast<int>(rng() % 40) - 20);
      case 4: {
        std::string s;
        for (std::size_t i = rng() % 12; i > 0; --i) s += static_cast<char>(rng() % 128);
        return s;
      }
      case 5: {
        nlohmann::json list = nlohmann::json::array();
        for (std::size_t i = rng() % 5; i > 0; --i) list.push_back(self(self, depth + 1));
        return list;
      }
      default: {
        nlohmann::json object = nlohmann::json::object();
        for (std::size_t i = rng() % 5; i > 0; --i) {
          object["k" + std::to_string(rng() % 8)] = self(self, depth + 1);
        }
        return object;
      }
    }
  };
  for (int round = 0; round < 300; ++round) {
    const nlohmann::json original = random_value(random_value, 0);
    for (const std::string& text : {original.dump(), original.dump(2)}) {
      jf::JsonDocument doc;
      ASSERT_EQ(parsed(doc, text), "") << text;
      EXPECT_EQ(rebuild(doc.root()), nlohmann::json::parse(text)) << text;
    }
  }
}

// Numbers read to the type and the very bits that nlohmann/json (strtod) gives, as the reader
// before simdjson read them: an integer past 64 bits included (a floating-point number).
TEST(JsonDocument, NumbersReadToTheSameBitsAsNlohmann) {
  std::vector<std::string> texts = {"0",
                                    "-0",
                                    "-0.0",
                                    "0.0",
                                    "0e5",
                                    "1E+2",
                                    "1e22",
                                    "1e23",
                                    "123e-22",
                                    "123e-23",
                                    "1e-06",
                                    "9007199254740992.5",
                                    "9007199254740993.0",
                                    "0.9007199254740993",
                                    "4.9e-324",
                                    "2.2250738585072014e-308",
                                    "1.7976931348623157e308",
                                    "1e-400",
                                    "9223372036854775807",
                                    "9223372036854775808",
                                    "-9223372036854775808",
                                    "-9223372036854775809",
                                    "18446744073709551615",
                                    "18446744073709551616",
                                    "1234567890123456789012",
                                    "-1234567890123456789012",
                                    "0.1",
                                    "67.0",
                                    "49.505881228416605",
                                    "-1.5e-3",
                                    "1000000000000000000000.5"};
  std::mt19937_64 rng(20261202);
  char buffer[64];
  for (int i = 0; i < 2000; ++i) {
    const double v =
        std::ldexp(static_cast<double>(rng() % (1ULL << 53)), static_cast<int>(rng() % 120) - 80) *
        (rng() % 2 == 0 ? 1.0 : -1.0);
    for (const char* format : {"%.17g", "%.15g", "%.6g", "%.3f", "%e"}) {
      std::snprintf(buffer, sizeof buffer, format, v);
      texts.emplace_back(buffer);
    }
    texts.push_back(std::to_string(static_cast<std::int64_t>(rng())));
    texts.push_back(std::to_string(rng()));
  }
  for (const std::string& number : texts) {
    // Each as a document of its own, and in a list beside a large integer (read again widened).
    for (const std::string& text : {number, "[" + number + ", 99999999999999999999]"}) {
      jf::JsonDocument doc;
      ASSERT_EQ(parsed(doc, text), "") << text;
      const nlohmann::json all = nlohmann::json::parse(text);
      const nlohmann::json& expected = all.is_array() ? all[0] : all;
      const jf::JsonValue value = doc.root().is_array() ? first_element(doc.root()) : doc.root();
      ASSERT_EQ(value.is_number_integer(), expected.is_number_integer()) << text;
      if (expected.is_number_integer()) {
        // ("-0" is an integer both ways, and not negative.)
        if (expected.is_number_unsigned()) {
          EXPECT_TRUE(value.is_number_unsigned()) << text;
          EXPECT_EQ(value.uint64(), expected.get<std::uint64_t>()) << text;
        } else {
          EXPECT_EQ(value.int64(), expected.get<std::int64_t>()) << text;
        }
      } else {
        const double a = value.number();
        const double b = expected.get<double>();
        EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << text << ": " << a << " vs " << b;
      }
    }
  }
}

// What is refused is said with where it is: the byte, the line and column, and where it can be
// told, the value's place in the document.
TEST(JsonDocument, RefusesWhatIsNotJsonAndSaysWhere) {
  const auto at = [](int byte, const std::string& what) {
    return "at byte " + std::to_string(byte) + " (line 1, column " + std::to_string(byte + 1) +
           "): " + what;
  };
  EXPECT_EQ(parse_error(""), at(0, "no JSON value (the text is empty)"));
  EXPECT_EQ(parse_error("  \n "),
            "at byte 0 (line 1, column 1): no JSON value (the text is empty)");
  EXPECT_EQ(parse_error("[1,]"), "at byte 3 (line 1, column 4), in [1]: unexpected ']'");
  EXPECT_EQ(parse_error("{\"a\" 1}"), at(5, "unexpected '1'"));
  EXPECT_EQ(parse_error("[1 2]"), at(3, "unexpected '2'"));
  EXPECT_EQ(parse_error("\"a\nb\""),
            at(2, "a control character inside a text (write it as an escape)"));
  EXPECT_EQ(parse_error("01"), at(0, "a malformed number"));
  EXPECT_EQ(parse_error("1."), at(0, "a malformed number"));
  EXPECT_EQ(parse_error("-"), at(0, "a malformed number"));
  EXPECT_EQ(parse_error("1e400"), at(0, "a number out of range"));
  EXPECT_EQ(parse_error("[0.5, -1e400]"),
            "at byte 6 (line 1, column 7), in [1]: a number out of range");
  EXPECT_EQ(parse_error("tru"), at(0, "unexpected text (true, false or null?)"));
  EXPECT_EQ(parse_error("\"\\x\""), at(0, "an invalid escape in a text"));
  EXPECT_EQ(parse_error("\"\\ud800\""), at(0, "an invalid escape in a text"));
  EXPECT_EQ(parse_error("\"\\udc00\""), at(0, "an invalid escape in a text"));
  EXPECT_EQ(parse_error("\"\xC0\xAF\""), at(1, "invalid UTF-8"));
  EXPECT_EQ(parse_error("\"\xED\xA0\x80\""), at(1, "invalid UTF-8"));
  EXPECT_EQ(parse_error("\"abc"), at(0, "a text without its closing quote"));
  EXPECT_EQ(parse_error("[1] [2]"), at(4, "text after the document's end"));
  EXPECT_EQ(parse_error("{\"a\": 1}}"), at(8, "text after the document's end"));
  EXPECT_EQ(parse_error("[[1]"), at(4, "the text ends before the document does"));
  // Nested values are named by their place; lines and columns count from 1.
  EXPECT_EQ(
      parse_error("{\n  \"devices\": [\n    {\"name\": \"a\"},\n    {\"precisions\": {\"bf16\": "
                  "nul}}\n  ]\n}"),
      "at byte 64 (line 4, column 29), in devices[1].precisions.bf16: unexpected text (true, "
      "false or null?)");
  EXPECT_EQ(parse_error(R"({"a": {"b": [true, "x\q"]}})"),
            "at byte 19 (line 1, column 20), in a.b[1]: an invalid escape in a text");
  // Nesting: 512 levels are read, 513 are refused where the 513th opens.
  EXPECT_EQ(parse_error(std::string(600, '[')), at(512, "nested more than 512 levels deep"));
  EXPECT_EQ(parse_error(std::string(513, '[') + std::string(513, ']')),
            at(512, "nested more than 512 levels deep"));
  EXPECT_EQ(parse_error(std::string(512, '[') + std::string(512, ']')), "");
  // The same with a value innermost (simdjson counts only what holds something), objects alike.
  EXPECT_EQ(parse_error(std::string(512, '[') + "1" + std::string(512, ']')), "");
  EXPECT_EQ(parse_error(std::string(513, '[') + "1" + std::string(513, ']')),
            at(512, "nested more than 512 levels deep"));
  std::string objects;
  for (int i = 0; i < 513; ++i) objects += "{\"a\":";
  EXPECT_NE(
      parse_error(objects + "1" + std::string(513, '}')).find("nested more than 512 levels deep"),
      std::string::npos);
  EXPECT_EQ(parse_error(objects.substr(5) + "1" + std::string(512, '}')), "");
  // A backslash outside a text is refused where it stands (simdjson took the quote after it as
  // escaped, and said only that a text was never closed).
  EXPECT_EQ(parse_error(R"({"a": \"x"})"), at(6, "unexpected '\\' outside a text"));
  // A text cut in a value is cut, not a malformed value.
  EXPECT_EQ(parse_error(R"({"a":12)"),
            "at byte 7 (line 1, column 8), in a: the text ends before the "
            "document does");
  EXPECT_EQ(parse_error(R"([1, tru)"),
            "at byte 7 (line 1, column 8), in [1]: the text ends before "
            "the document does");
  EXPECT_EQ(parse_error(R"([1, 2e)"),
            "at byte 6 (line 1, column 7), in [1]: the text ends before "
            "the document does");
  EXPECT_EQ(parse_error(R"([1, 2e, 3])"),
            "at byte 4 (line 1, column 5), in [1]: a malformed number");
  // Every prefix of a document is refused, never read past its end.
  const std::string text = R"({"a": [1, 2.5, "x\u00e9"], "b": {"c": null}})";
  for (std::size_t cut = 0; cut < text.size(); ++cut) {
    EXPECT_NE(parse_error(text.substr(0, cut)), "") << cut;
  }
}

// An integer past 64 bits is read again as a floating-point number; texts are left as they are,
// an escaped quote inside one included.
TEST(JsonDocument, ALargeIntegerIsADoubleAndTextsStayAsTheyAre) {
  const std::string text =
      R"({"a": "x\"123456789012345678901234", "b": 123456789012345678901234, "c": "\\"})";
  jf::JsonDocument doc;
  ASSERT_EQ(parsed(doc, text), "");
  EXPECT_EQ(rebuild(doc.root()), nlohmann::json::parse(text));
  EXPECT_EQ(doc.root().find("a")->string_view(), "x\"123456789012345678901234");
  EXPECT_FALSE(doc.root().find("b")->is_number_integer());
  EXPECT_EQ(doc.root().find("b")->number(), 123456789012345678901234.0);
  EXPECT_EQ(doc.root().find("c")->string_view(), "\\");
  // Where the document is refused for something else, the place is said in the text as given.
  EXPECT_EQ(parse_error(R"([123456789012345678901234, 1e999])"),
            "at byte 27 (line 1, column 28), in [1]: a number out of range");
}

TEST(JsonDocument, ABomIsSkippedAndATinyNumberIsZero) {
  jf::JsonDocument doc;
  ASSERT_EQ(parsed(doc, "\xEF\xBB\xBF{\"a\": 1e-400, \"b\": 4.9e-324}"), "");
  const auto a = doc.root().find("a");
  const auto b = doc.root().find("b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->number(), 0.0);
  EXPECT_GT(b->number(), 0.0);
  // A refusal counts its place from the file's first byte, the mark's three included.
  EXPECT_EQ(parse_error("\xEF\xBB\xBF[1, x]"),
            "at byte 7 (line 1, column 8), in [1]: unexpected 'x'");
  EXPECT_EQ(parse_error("\xEF\xBB\xBF{\"a\":1,\"a\":2}"),
            "at byte 10 (line 1, column 11): the member \"a\" of the top-level object is given "
            "twice (first at byte 4, line 1, column 5): a strict reader refuses duplicate keys");
  EXPECT_EQ(parse_error("-1e400"), "at byte 0 (line 1, column 1): a number out of range");
  // Too small is zero of its sign, however it is written; too large is refused, however written.
  const std::string tiny = "0." + std::string(330, '0') + "1";
  const std::string huge = "1" + std::string(330, '0') + ".5";
  const std::vector<std::string> small = {"-1e-400",    tiny,          "-" + tiny,
                                          "1000e-1000", "0.0001e-330", "-0.0e999"};
  for (const std::string& text : small) {
    ASSERT_EQ(parsed(doc, text), "") << text;
    const double expected = nlohmann::json::parse(text).get<double>();
    EXPECT_EQ(doc.root().number(), 0.0) << text;
    EXPECT_EQ(std::signbit(doc.root().number()), std::signbit(expected)) << text;
  }
  EXPECT_EQ(parse_error(huge), "at byte 0 (line 1, column 1): a number out of range");
  EXPECT_EQ(parse_error("0.001e312"), "at byte 0 (line 1, column 1): a number out of range");
}

TEST(JsonDocument, FindsMembersInAnyOrderWithAHint) {
  jf::JsonDocument doc;
  ASSERT_EQ(parsed(doc, R"({"a": 1, "b": {"x": [1, 2]}, "c": 3, "d": 4})"), "");
  const jf::JsonValue root = doc.root();
  std::uint32_t hint = 0;
  EXPECT_EQ(root.find("a", &hint)->int64(), 1);
  EXPECT_EQ(root.find("b", &hint)->size(), 1U);
  EXPECT_EQ(root.find("c", &hint)->int64(), 3);
  EXPECT_EQ(root.find("b", &hint)->size(), 1U);  // behind the hint: found going round
  EXPECT_EQ(root.find("d", &hint)->int64(), 4);
  EXPECT_EQ(root.find("a", &hint)->int64(), 1);  // past the last member: from the first
  EXPECT_FALSE(root.find("z", &hint));
  EXPECT_FALSE(root.find("x"));  // a nested key is not a member
  EXPECT_EQ(root.find("c")->int64(), 3);
}

// A key given twice in one object is refused, named, with the object's place and both places:
// readers disagree on which one counts (the first, or the last for Python and jq), so
// `"exit_code": 0, "exit_code": 4` must not read as either.
TEST(JsonDocument, RefusesAnObjectThatNamesAMemberTwice) {
  EXPECT_EQ(parse_error(R"({"exit_code": 0, "exit_code": 4})"),
            "at byte 17 (line 1, column 18): the member \"exit_code\" of the top-level object is "
            "given twice (first at byte 1, line 1, column 2): a strict reader refuses duplicate "
            "keys");
  EXPECT_EQ(
      parse_error(R"({"devices": [{"a": 1}, {"precisions": {"bf16": 1, "x": 2, "bf16": 3}}]})"),
      "at byte 58 (line 1, column 59): the member \"bf16\" of the object devices[1].precisions is "
      "given twice (first at byte 39, line 1, column 40): a strict reader refuses duplicate keys");
  // A name written with an escape is the same name.
  EXPECT_EQ(parse_error(R"({"a": 1, "\u0061": 2})"),
            "at byte 9 (line 1, column 10): the member \"a\" of the top-level object is given "
            "twice (first at byte 1, line 1, column 2): a strict reader refuses duplicate keys");
  // A large object (its names sorted rather than hashed) is checked the same way.
  std::string large = "{";
  for (int i = 0; i < 100; ++i)
    large += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  const std::size_t again = large.size();
  large += "\"k42\": 0}";
  EXPECT_EQ(parse_error(large), "at byte " + std::to_string(again) + " (line 1, column " +
                                    std::to_string(again + 1) +
                                    "): the member \"k42\" of the top-level object is given twice "
                                    "(first at byte 443, line 1, column 444): a strict reader "
                                    "refuses duplicate keys");
  EXPECT_EQ(parse_error(large.substr(0, again - 2) + "}"), "");
  // Names that hash alike but differ are no duplicate; the same name in different objects, or as
  // a value, is none either.
  EXPECT_EQ(parse_error(R"({"ab": 1, "a_b": 2, "axb": 3, "ayb": 4, "": 5, "b": 6})"), "");
  EXPECT_EQ(parse_error(R"({"a": {"a": "a"}, "b": [{"a": 1}, {"a": 2}], "c": "a"})"), "");
  EXPECT_NE(parse_error(R"({"": 1, "": 2})"), "");
}

// A text followed by padding the parser may read is parsed where it stands, to the same values.
TEST(JsonDocument, APaddedTextReadsAsACopiedOne) {
  std::string text = R"({"a": [1, 2.5, "x"], "b": {"c": null}})";
  const std::size_t size = text.size();
  text.append(jf::kJsonPadding, '}');  // what follows must not matter
  jf::JsonDocument padded;
  jf::JsonDocument copied;
  ASSERT_EQ(parsed(padded, std::string_view(text.data(), size), true), "");
  ASSERT_EQ(parsed(copied, std::string_view(text.data(), size)), "");
  EXPECT_EQ(rebuild(padded.root()), rebuild(copied.root()));
  EXPECT_EQ(parsed(padded, std::string_view(text.data(), size - 1), true),
            "at byte 37 (line 1, column 38): the text ends before the document does");
}

// The reader of fields reads through the view: a value of the wrong type is refused with its
// path, a list longer than the limit too.
TEST(JsonDocument, TheFieldReaderRefusesWithThePath) {
  jf::JsonDocument doc;
  ASSERT_EQ(parsed(doc, R"({"a": 3, "b": [1, "two"]})"), "");
  const jf::ReadLimits limits;  // (a reader keeps a reference to its limits)
  jf::Reader r(doc.root(), "pair", limits);
  int a = 0;
  r("a", a);
  EXPECT_EQ(a, 3);
  std::vector<int> b;
  try {
    r("b", b);
    ADD_FAILURE() << "a text read as an integer";
  } catch (const jf::FieldError& e) {
    EXPECT_STREQ(e.what(), "pair.b[1]: expected an integer");
  }
  jf::ReadLimits small;
  small.max_items = 1;
  jf::Reader tight(doc.root(), "pair", small);
  try {
    tight("b", b);
    ADD_FAILURE() << "a list past its limit read";
  } catch (const jf::FieldError& e) {
    EXPECT_STREQ(e.what(), "pair.b: a list of more than 1");
  }
}
