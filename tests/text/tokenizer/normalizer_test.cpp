#include "text/tokenizer/normalizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qmlx {
namespace {

std::string run(const nlohmann::json& spec, std::string text) {
  make_normalizer(spec, "test")->normalize(text);
  return text;
}

TEST(Normalizer, UnicodeForms) {
  const std::string decomposed = "e\xCC\x81", composed = "\xC3\xA9";  // e + U+0301, é
  EXPECT_EQ(run({{"type", "NFC"}}, "caf" + decomposed), "caf" + composed);
  EXPECT_EQ(run({{"type", "NFD"}}, composed), decomposed);
  EXPECT_EQ(run({{"type", "NFC"}}, "\xE2\x84\xAB"), "\xC3\x85");  // Angstrom sign -> Å
  // Hangul jamo L V T compose to one syllable (각).
  EXPECT_EQ(run({{"type", "NFC"}}, "\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");
  EXPECT_EQ(run({{"type", "NFKC"}}, "\xEF\xAC\x81"), "fi");  // ligature ﬁ
  EXPECT_EQ(run({{"type", "NFC"}}, "\xEF\xAC\x81"), "\xEF\xAC\x81");
  EXPECT_EQ(run({{"type", "NFKD"}}, "\xC2\xB2"), "2");
  EXPECT_EQ(run({{"type", "NFC"}}, "plain ascii"), "plain ascii");
}

TEST(Normalizer, TextRewriters) {
  EXPECT_EQ(run({{"type", "Lowercase"}},
                "\xC3\x80"
                "BC"),
            "\xC3\xA0"
            "bc");
  EXPECT_EQ(run({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "_"}}, "a b c"),
            "a_b_c");
  EXPECT_EQ(
      run({{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}}, "a \t\n b"),
      "a b");
  EXPECT_EQ(run({{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}}, "hi"),
            "\xE2\x96\x81"
            "hi");
  EXPECT_EQ(run({{"type", "Prepend"}, {"prepend", "x"}}, ""), "");
  EXPECT_EQ(run({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, " \t a b \n"),
            "a b");
  EXPECT_EQ(run({{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}}, "  a  "), "  a");
  EXPECT_EQ(run({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, "   "), "");
}

TEST(Normalizer, SequenceAppliesInOrder) {
  nlohmann::json seq = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Lowercase"}},
        {{"type", "Replace"}, {"pattern", {{"String", "a"}}}, {"content", "4"}}}}};
  EXPECT_EQ(run(seq, "AbA"), "4b4");
}

TEST(Normalizer, UnsupportedTypesAreNamed) {
  try {
    make_normalizer({{"type", "Precompiled"}}, "x/tokenizer.json");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Precompiled"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("x/tokenizer.json"), std::string::npos);
  }
  EXPECT_THROW(make_normalizer({{"kind", "NFC"}}, "t"), Error);
  EXPECT_EQ(make_normalizer(nullptr, "t"), nullptr);
}

}  // namespace
}  // namespace qmlx
