#include <gtest/gtest.h>

#include "strings/strings.hpp"

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
  // A byte that is no UTF-8 character is escaped: a lone 0x9b is CSI on a terminal in 8-bit mode.
  EXPECT_EQ(pp::printable("\x9b"
                          "2J"),
            "\\x9b2J");
  EXPECT_EQ(pp::printable("a\xc3"), "a\\xc3");                  // a character cut short
  EXPECT_EQ(pp::printable("\xc0\xaf"), "\\xc0\\xaf");           // an overlong '/'
  EXPECT_EQ(pp::printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(pp::printable("\xc2\x9b"
                          "2J"),
            "\\u009b2J");  // C1 as UTF-8
  EXPECT_EQ(pp::printable("\xf0\x9f\x99\x82 \xc2\xa0"), "\xf0\x9f\x99\x82 \xc2\xa0");  // kept
}

TEST(Strings, SplitKeepsEmptyParts) {
  EXPECT_EQ(pp::split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(pp::split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(pp::trim("  x y \t"), "x y");
}

TEST(Strings, DurationsNeedAUnitAndAddUp) {
  EXPECT_EQ(pp::parse_duration("90m"), 5400);
  EXPECT_EQ(pp::parse_duration("24h"), 86400);
  EXPECT_EQ(pp::parse_duration("1h30m"), 5400);
  EXPECT_EQ(pp::parse_duration("45s"), 45);
  EXPECT_EQ(pp::parse_duration("7d"), 7 * 86400);
  EXPECT_EQ(pp::parse_duration("0s"), 0);
  for (const char* bad : {"", "90", "m", "1.5h", "-1h", "1w", "1h ", " 1h", "1hh", "1H",
                          "9999999999h", "1000000000d"}) {
    EXPECT_FALSE(pp::parse_duration(bad).has_value()) << bad;
  }
}

TEST(Strings, UtcTimestampsRoundTrip) {
  EXPECT_EQ(pp::parse_utc_timestamp("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(pp::parse_utc_timestamp("2026-12-01T06:52:08.123Z"), 1796107928123);
  EXPECT_EQ(pp::parse_utc_timestamp("2026-12-01T06:52:08+00:00"), 1796107928000);
  EXPECT_EQ(pp::parse_utc_timestamp("2024-02-29T23:59:59.5Z"), 1709251199500);
  EXPECT_EQ(pp::format_utc_timestamp(1796107928), "2026-12-01T06:52:08Z");
  EXPECT_EQ(pp::format_utc_timestamp(1796107928 + 3600), "2026-12-01T07:52:08Z");
  for (const char* bad : {"", "2026-12-01", "2026-12-01T06:52:08", "2026-13-01T06:52:08Z",
                          "2026-12-01T06:52:08+02:00", "2026-12-01 06:52:08Z",
                          "2026-12-01T06:52:08.Z", "x026-12-01T06:52:08Z"}) {
    EXPECT_FALSE(pp::parse_utc_timestamp(bad).has_value()) << bad;
  }
}

// A day past its month's end is refused, not read as a day of the next month (2026-02-31 is not
// 3 March); February has 29 days in the leap years of the Gregorian calendar only.
TEST(Strings, UtcTimestampsOfImpossibleDatesAreRefused) {
  for (const char* bad : {"2026-02-31T00:00:00Z", "2026-02-29T00:00:00Z", "2100-02-29T00:00:00Z",
                          "2026-04-31T12:00:00Z", "2026-06-31T12:00:00Z", "2026-09-31T12:00:00Z",
                          "2026-11-31T12:00:00Z", "2026-01-32T00:00:00Z", "2026-01-00T00:00:00Z"}) {
    EXPECT_FALSE(pp::parse_utc_timestamp(bad).has_value()) << bad;
  }
  EXPECT_EQ(pp::parse_utc_timestamp("2024-02-29T00:00:00Z"), 1709164800000);
  EXPECT_EQ(pp::parse_utc_timestamp("2000-02-29T00:00:00Z"), 951782400000);
  EXPECT_EQ(pp::parse_utc_timestamp("2026-01-31T00:00:00Z"), 1769817600000);
  EXPECT_EQ(pp::parse_utc_timestamp("2026-12-31T23:59:59Z"), 1798761599000);
}
