#include "text/tokenizer/bpe_model.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qmlx {
namespace {

using Ids = std::vector<int32_t>;

nlohmann::json model(nlohmann::json vocab, nlohmann::json merges) {
  return {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", std::move(merges)}};
}

Ids tokenize(const BpeModel& bpe, std::string_view piece) {
  Ids ids;
  bpe.tokenize(piece, ids);
  return ids;
}

const nlohmann::json kAbcVocab = {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}};

TEST(BpeModel, LowestRankMergeAppliesFirst) {
  // "b c" outranks "a b": abc -> a bc -> abc.
  auto bc_first = BpeModel::from_json(model(kAbcVocab, {"b c", "a bc", "a b"}), "t");
  EXPECT_EQ(tokenize(*bc_first, "abc"), (Ids{5}));
  EXPECT_EQ(tokenize(*bc_first, "abcab"), (Ids{5, 3}));
  // Without "a bc" the word stops at a + bc.
  auto no_abc = BpeModel::from_json(model(kAbcVocab, {"b c", "a b"}), "t");
  EXPECT_EQ(tokenize(*no_abc, "abc"), (Ids{0, 4}));
  // "a b" first: ab + c, and no "ab c" merge.
  auto ab_first = BpeModel::from_json(model(kAbcVocab, {"a b", "b c"}), "t");
  EXPECT_EQ(tokenize(*ab_first, "abc"), (Ids{3, 2}));
}

TEST(BpeModel, BothMergeSerializationsAgree) {
  auto strings = BpeModel::from_json(model(kAbcVocab, {"b c", "a bc"}), "t");
  auto pairs =
      BpeModel::from_json(model(kAbcVocab, nlohmann::json::array({{"b", "c"}, {"a", "bc"}})), "t");
  for (std::string_view word : {"abc", "cab", "bcbca", "aabbcc"}) {
    EXPECT_EQ(tokenize(*strings, word), tokenize(*pairs, word)) << word;
  }
  EXPECT_EQ(tokenize(*pairs, "bcbca"), (Ids{4, 4, 0}));
}

TEST(BpeModel, EqualRanksMergeLeftmostFirst) {
  auto bpe = BpeModel::from_json(model({{"a", 0}, {"aa", 1}}, {"a a"}), "t");
  EXPECT_EQ(tokenize(*bpe, "aaa"), (Ids{1, 0}));
  EXPECT_EQ(tokenize(*bpe, "aaaa"), (Ids{1, 1}));
}

TEST(BpeModel, LongWordsUseTheSameMergeOrder) {
  // 100 'a's: "a a" pairs them left to right (50 x aa), then "aa aa" gives 25 x aaaa.
  // A 101st 'a' stays alone at the end. Long words take the priority-queue path.
  auto bpe = BpeModel::from_json(model({{"a", 0}, {"aa", 1}, {"aaaa", 2}}, {"a a", "aa aa"}), "t");
  EXPECT_EQ(tokenize(*bpe, std::string(100, 'a')), Ids(25, 2));
  Ids odd(25, 2);
  odd.push_back(0);
  EXPECT_EQ(tokenize(*bpe, std::string(101, 'a')), odd);
}

TEST(BpeModel, IgnoreMergesTakesWholeWordsFromTheVocab) {
  nlohmann::json spec = model(kAbcVocab, nlohmann::json::array());
  EXPECT_EQ(tokenize(*BpeModel::from_json(spec, "t"), "abc"), (Ids{0, 1, 2}));
  spec["ignore_merges"] = true;
  EXPECT_EQ(tokenize(*BpeModel::from_json(spec, "t"), "abc"), (Ids{5}));
  EXPECT_EQ(tokenize(*BpeModel::from_json(spec, "t"), "abca"), (Ids{0, 1, 2, 0}));
}

TEST(BpeModel, ByteFallbackAndUnknownTokens) {
  nlohmann::json vocab = {{"<unk>", 0}, {"a", 1}, {"<0xC3>", 2}, {"<0xA9>", 3}};
  nlohmann::json spec = model(vocab, nlohmann::json::array());
  spec["byte_fallback"] = true;
  EXPECT_EQ(tokenize(*BpeModel::from_json(spec, "t"), "a\xC3\xA9"), (Ids{1, 2, 3}));
  // "ü" (C3 BC) lacks <0xBC>: falls back to unk; without unk it is dropped.
  spec["unk_token"] = "<unk>";
  EXPECT_EQ(tokenize(*BpeModel::from_json(spec, "t"),
                     "\xC3\xBC"
                     "a"),
            (Ids{0, 1}));
  spec["byte_fallback"] = false;
  spec["fuse_unk"] = true;
  EXPECT_EQ(tokenize(*BpeModel::from_json(spec, "t"), "xyza"), (Ids{0, 1}));
  spec["fuse_unk"] = false;
  EXPECT_EQ(tokenize(*BpeModel::from_json(spec, "t"), "xya"), (Ids{0, 0, 1}));
  spec.erase("unk_token");
  EXPECT_EQ(tokenize(*BpeModel::from_json(spec, "t"), "xya"), (Ids{1}));
}

TEST(BpeModel, SubwordPrefixAndSuffix) {
  nlohmann::json prefixed = model({{"a", 0}, {"##b", 1}, {"ab", 2}, {"b", 3}}, {"a ##b"});
  prefixed["continuing_subword_prefix"] = "##";
  auto bpe = BpeModel::from_json(prefixed, "t");
  EXPECT_EQ(tokenize(*bpe, "ab"), (Ids{2}));
  EXPECT_EQ(tokenize(*bpe, "b"), (Ids{3}));

  nlohmann::json suffixed = model({{"a", 0}, {"b</w>", 1}, {"ab</w>", 2}}, {"a b</w>"});
  suffixed["end_of_word_suffix"] = "</w>";
  EXPECT_EQ(tokenize(*BpeModel::from_json(suffixed, "t"), "ab"), (Ids{2}));
}

TEST(BpeModel, VocabLookups) {
  auto bpe = BpeModel::from_json(model(kAbcVocab, {"a b"}), "t");
  EXPECT_EQ(bpe->token_id("bc"), 4);
  EXPECT_FALSE(bpe->token_id("zz").has_value());
  ASSERT_NE(bpe->token_text(5), nullptr);
  EXPECT_EQ(*bpe->token_text(5), "abc");
  EXPECT_EQ(bpe->token_text(6), nullptr);
  EXPECT_EQ(bpe->id_limit(), 6);
}

TEST(BpeModel, RejectsWhatItCannotHonour) {
  EXPECT_THROW(BpeModel::from_json(model(kAbcVocab, {"a z"}), "t"), Error);
  EXPECT_THROW(BpeModel::from_json(model(kAbcVocab, {"c a"}), "t"), Error);  // "ca" missing
  EXPECT_THROW(BpeModel::from_json(model(kAbcVocab, {"abc"}), "t"), Error);
  nlohmann::json dropout = model(kAbcVocab, nlohmann::json::array());
  dropout["dropout"] = 0.1;
  EXPECT_THROW(BpeModel::from_json(dropout, "t"), Error);
  try {
    BpeModel::from_json({{"type", "WordPiece"}, {"vocab", kAbcVocab}}, "dir/tokenizer.json");
    FAIL() << "WordPiece accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("WordPiece"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("dir/tokenizer.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace qmlx
