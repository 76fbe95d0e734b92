#include <gtest/gtest.h>

#include "common/strings.hpp"

namespace pp = precision_probe;

TEST(Strings, ParseIntIsStrict) {
  EXPECT_EQ(pp::parse_int("42"), 42);
  EXPECT_EQ(pp::parse_int("+7"), 7);
  EXPECT_EQ(pp::parse_int("-3"), -3);
  EXPECT_FALSE(pp::parse_int(""));
  EXPECT_FALSE(pp::parse_int("+"));
  EXPECT_FALSE(pp::parse_int("1.5"));
  EXPECT_FALSE(pp::parse_int("0x10"));
  EXPECT_FALSE(pp::parse_int(" 1"));
  EXPECT_FALSE(pp::parse_int("99999999999999999999999"));  // overflow
}

TEST(Strings, PrintableEscapesControlsAndCutsLongInputOnCharacterBoundaries) {
  EXPECT_EQ(pp::printable("a\nb"), "a\\x0ab");
  EXPECT_EQ(pp::printable(std::string(100, 'x'), 10), std::string(10, 'x') + "...");
  // "é" is two bytes: cutting after 2 characters keeps it whole.
  EXPECT_EQ(pp::printable("éé é", 2), "éé...");
}

TEST(Strings, SplitKeepsEmptyParts) {
  EXPECT_EQ(pp::split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(pp::split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(pp::trim("  x y \t"), "x y");
}
