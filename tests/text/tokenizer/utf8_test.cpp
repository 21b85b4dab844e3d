#include "text/tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace qmlx::utf8 {
namespace {

TEST(Utf8, ValidTextIsUnchanged) {
  std::string text = "a\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x99\x82";  // a é 你 🙂
  EXPECT_TRUE(is_valid(text));
  EXPECT_EQ(to_valid_lossy(text), text);
}

TEST(Utf8, InvalidSubpartsBecomeOneReplacementEach) {
  // E4 BD is a truncated 3-byte sequence: one maximal subpart; C0 and FF are each invalid.
  EXPECT_EQ(to_valid_lossy("x\xE4\xBDy"), "x\xEF\xBF\xBDy");
  EXPECT_EQ(to_valid_lossy("\xC0\xFF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  // Surrogates (ED A0 80) are invalid: ED cannot be followed by A0, so three subparts.
  EXPECT_EQ(to_valid_lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_FALSE(is_valid("\xF4\x90\x80\x80"));  // above U+10FFFF
}

TEST(Utf8, CompletePrefixStopsBeforeAnUnfinishedCharacter) {
  EXPECT_EQ(complete_prefix_length("ab\xF0\x9F\x99"), 2u);
  EXPECT_EQ(complete_prefix_length("ab\xF0\x9F\x99\x82"), 6u);
  EXPECT_EQ(complete_prefix_length("ab\xE4"), 2u);
  // A truncated sequence followed by ASCII can never complete, so it is all "complete".
  EXPECT_EQ(complete_prefix_length("\xE4\xBD"
                                   "a"),
            3u);
  EXPECT_EQ(complete_prefix_length(""), 0u);
}

TEST(Utf8, DecodeAndAppendRoundTrip) {
  for (char32_t cp : {0x41u, 0xE9u, 0x4F60u, 0x1F642u, 0x10FFFFu}) {
    std::string s;
    append(s, cp);
    size_t i = 0;
    EXPECT_EQ(decode_at(s, i), cp);
    EXPECT_EQ(i, s.size());
  }
}

}  // namespace
}  // namespace qmlx::utf8
