// The guards in front of toml++ 3.3 (config/toml_preflight.hpp): the ASCII shadow keeps every
// position (toml++ counts code points) and the pre-scan refuses the text toml++ cannot read safely.
#include "config/toml_preflight.hpp"

#include <gtest/gtest.h>

namespace tessera::config_detail {
namespace {

TEST(AsciiShadow, PureAsciiNeedsNone) { EXPECT_FALSE(ascii_shadow("a = \"b\"\n").has_value()); }

TEST(AsciiShadow, EachCodePointBecomesOneX) {
  // é (2 bytes), U+FEFE (3 bytes), U+1F600 (4 bytes).
  const auto shadow = ascii_shadow("s = \"caf\xc3\xa9 \xef\xbb\xbe \xf0\x9f\x98\x80\"");
  ASSERT_TRUE(shadow.has_value());
  EXPECT_EQ(*shadow, "s = \"cafx x x\"");
}

TEST(AsciiShadow, KeepsTheByteOrderMarkAndIllFormedBytes) {
  // A leading BOM stays (toml++ skips it); a lone continuation byte, a surrogate (ED A0 80) and a
  // truncated sequence stay as they are, for toml++ to refuse as invalid UTF-8.
  const auto shadow = ascii_shadow(
      "\xef\xbb\xbf"
      "a = \"\x80\xed\xa0\x80\xc3\xa9\xe2\x82\"");
  ASSERT_TRUE(shadow.has_value());
  EXPECT_EQ(*shadow,
            "\xef\xbb\xbf"
            "a = \"\x80\xed\xa0\x80x\xe2\x82\"");
}

TEST(TomlPreflight, RefusesNonAsciiOutsideStringsWithItsPosition) {
  const auto problem = find_text_unsafe_for_tomlpp("a = 1\nb = \xc3\xa9\n", "f.toml");
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->to_string().rfind("f.toml:2:5: non-ASCII character outside", 0), 0u)
      << problem->to_string();
}

TEST(TomlPreflight, AcceptsNonAsciiInStringsAndComments) {
  EXPECT_FALSE(
      find_text_unsafe_for_tomlpp("# caf\xc3\xa9\na = \"caf\xc3\xa9\"\nb = 'x\xe3\x80\x80'\n", "f")
          .has_value());
}

}  // namespace
}  // namespace tessera::config_detail
