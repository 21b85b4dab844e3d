#include "text/tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "fixtures.h"

namespace qmlx {
namespace {

using Pieces = std::vector<std::string>;
using testing::bl;

Pieces run(const nlohmann::json& spec, std::string_view text) {
  auto pre = make_pre_tokenizer(spec, "test");
  PieceList in, out;
  in.add(text);
  pre->pre_tokenize(in, out);
  Pieces pieces;
  for (size_t i = 0; i < out.size(); ++i) pieces.emplace_back(out.piece(i));
  return pieces;
}

nlohmann::json split(const std::string& behavior, nlohmann::json pattern, bool invert = false) {
  return {{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}, {"invert", invert}};
}

// The examples from the Hugging Face documentation of SplitDelimiterBehavior.
TEST(SplitPreTokenizer, Behaviors) {
  nlohmann::json dash = {{"String", "-"}};
  const char* text = "the-final--countdown";
  EXPECT_EQ(run(split("Removed", dash), text), (Pieces{"the", "final", "countdown"}));
  EXPECT_EQ(run(split("Isolated", dash), text),
            (Pieces{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(run(split("MergedWithPrevious", dash), text),
            (Pieces{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(run(split("MergedWithNext", dash), text), (Pieces{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(run(split("Contiguous", dash), text), (Pieces{"the", "-", "final", "--", "countdown"}));
}

TEST(SplitPreTokenizer, InvertKeepsTheGapsAsMatches) {
  nlohmann::json digits = {{"Regex", "[0-9]+"}};
  EXPECT_EQ(run(split("Removed", digits, true), "ab12cd3"), (Pieces{"12", "3"}));
  EXPECT_EQ(run(split("Removed", digits, false), "ab12cd3"), (Pieces{"ab", "cd"}));
}

TEST(SplitPreTokenizer, QwenRegexWithLookAheadAndUnicodeClasses) {
  nlohmann::json qwen = {
      {"Regex",
       R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}};
  // Whitespace before a word keeps one space for the word (look-ahead); digits split singly;
  // contractions match case-insensitively.
  EXPECT_EQ(run(split("Isolated", qwen), "Hello  world\n\n  x"),
            (Pieces{"Hello", " ", " world", "\n\n", " ", " x"}));
  EXPECT_EQ(run(split("Isolated", qwen), "I'LL pay 42!"),
            (Pieces{"I", "'LL", " pay", " ", "4", "2", "!"}));
  EXPECT_EQ(run(split("Isolated", qwen), "\xC3\xA9t\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD"),
            (Pieces{"\xC3\xA9t\xC3\xA9", " \xE4\xBD\xA0\xE5\xA5\xBD"}));
}

// Oniguruma's \s is exactly White_Space: U+0085 is a space, U+180E (a format character since
// Unicode 6.3) is not, even though PCRE2 alone would say it is.
TEST(SplitPreTokenizer, WhitespaceClassFollowsUnicodeWhiteSpace) {
  nlohmann::json spaces = {{"Regex", R"(\s+)"}};
  EXPECT_EQ(run(split("Isolated", spaces),
                "a\xC2\x85"
                "b"),
            (Pieces{"a", "\xC2\x85", "b"}));
  EXPECT_EQ(run(split("Isolated", spaces),
                "a\xE1\xA0\x8E"
                "b"),
            (Pieces{"a\xE1\xA0\x8E"
                    "b"}));
  nlohmann::json not_space = {{"Regex", R"([^\s]+)"}};
  EXPECT_EQ(run(split("Isolated", not_space), "a\xE1\xA0\x8E b"),
            (Pieces{"a\xE1\xA0\x8E", " ", "b"}));
}

TEST(ByteLevelPreTokenizer, MapsBytesAndHonoursFlags) {
  nlohmann::json plain = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  EXPECT_EQ(run(plain, "hi there\n\xC3\xA9"), (Pieces{bl("hi there\n\xC3\xA9")}));
  EXPECT_EQ(bl(" \n\xC3\xA9"), "\xC4\xA0\xC4\x8A\xC3\x83\xC2\xA9");  // Ġ Ċ Ã ©
  nlohmann::json prefixed = plain;
  prefixed["add_prefix_space"] = true;
  EXPECT_EQ(run(prefixed, "hi"), (Pieces{bl(" hi")}));
  EXPECT_EQ(run(prefixed, " hi"), (Pieces{bl(" hi")}));
  nlohmann::json gpt2 = plain;
  gpt2["use_regex"] = true;
  EXPECT_EQ(run(gpt2, "it's 2024  ok"), (Pieces{"it", "'s", bl(" 2024"), bl(" "), bl(" ok")}));
}

TEST(PreTokenizer, CharacterClassSplitters) {
  EXPECT_EQ(run({{"type", "Whitespace"}}, "Hey man!!  ok?"),
            (Pieces{"Hey", "man", "!!", "ok", "?"}));
  EXPECT_EQ(run({{"type", "WhitespaceSplit"}}, "a  b\tc!"), (Pieces{"a", "b", "c!"}));
  EXPECT_EQ(run({{"type", "Digits"}, {"individual_digits", true}}, "ab123c"),
            (Pieces{"ab", "1", "2", "3", "c"}));
  EXPECT_EQ(run({{"type", "Digits"}, {"individual_digits", false}}, "ab123c"),
            (Pieces{"ab", "123", "c"}));
}

TEST(PreTokenizer, MetaspaceReplacesSpacesAndSplits) {
  const std::string m = "\xE2\x96\x81";  // ▁
  nlohmann::json always = {
      {"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "always"}, {"split", true}};
  EXPECT_EQ(run(always, "hello world"), (Pieces{m + "hello", m + "world"}));
  nlohmann::json no_split = always;
  no_split["split"] = false;
  no_split["prepend_scheme"] = "never";
  EXPECT_EQ(run(no_split, "hello world"), (Pieces{"hello" + m + "world"}));
}

TEST(PreTokenizer, SequenceAppliesStepsInOrder) {
  nlohmann::json seq = {
      {"type", "Sequence"},
      {"pretokenizers",
       {split("Removed", {{"String", " "}}), {{"type", "Digits"}, {"individual_digits", true}}}}};
  EXPECT_EQ(run(seq, "a12 b3"), (Pieces{"a", "1", "2", "b", "3"}));
}

TEST(PreTokenizer, UnsupportedTypesAreNamed) {
  try {
    make_pre_tokenizer({{"type", "BertPreTokenizer"}}, "m/tokenizer.json");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("BertPreTokenizer"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("m/tokenizer.json"), std::string::npos);
  }
  EXPECT_THROW(make_pre_tokenizer(split("Sideways", {{"String", "-"}}), "t"), Error);
  EXPECT_THROW(make_pre_tokenizer(split("Isolated", {{"Regex", "(unclosed"}}), "t"), Error);
  EXPECT_EQ(make_pre_tokenizer(nullptr, "t"), nullptr);
}

}  // namespace
}  // namespace qmlx
