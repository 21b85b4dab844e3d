#include "grammar/token_vocabulary.h"

#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::grammar {
namespace {

// A Tokenizer with a fixed table: just what TokenVocabulary reads.
class TableTokenizer : public Tokenizer {
 public:
  TableTokenizer(std::vector<std::string> bytes, std::vector<int32_t> special)
      : bytes_(std::move(bytes)), special_(std::move(special)) {}
  std::vector<int32_t> encode(std::string_view, bool) const override { return {}; }
  std::string decode(std::span<const int32_t>, bool) const override { return {}; }
  std::optional<int32_t> token_id(std::string_view) const override { return std::nullopt; }
  std::string token_text(int32_t id) const override { return bytes_[static_cast<size_t>(id)]; }
  std::string token_bytes(int32_t id) const override { return bytes_[static_cast<size_t>(id)]; }
  bool is_special(int32_t id) const override {
    return std::find(special_.begin(), special_.end(), id) != special_.end();
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(bytes_.size()); }

 private:
  std::vector<std::string> bytes_;
  std::vector<int32_t> special_;
};

TEST(TokenVocabulary, FromTokenizerKeepsBytesSpecialsAndStops) {
  TableTokenizer tokenizer({"<|im_end|>", "a", "b", "<tool_call>", "ab"}, {0, 3});
  auto vocab = TokenVocabulary::from_tokenizer(tokenizer, {0});
  EXPECT_EQ(vocab->size(), 5);
  EXPECT_EQ(vocab->bytes(4), "ab");
  EXPECT_TRUE(vocab->is_special(3));
  EXPECT_TRUE(vocab->is_stop(0));
  EXPECT_FALSE(vocab->is_stop(3));
  // Special tokens never match, even when their bytes would.
  auto tables = TokenMaskTables::build(
      compile_grammar(R"(root ::= "<tool_call>" | "a" "b"?)").grammar, vocab);
  GrammarMatcher m(tables);
  EXPECT_FALSE(m.accept_token(3));
  EXPECT_TRUE(m.accept_token(4));
  EXPECT_TRUE(m.accept_token(0));
  EXPECT_TRUE(m.is_terminated());
}

TEST(TokenVocabulary, FingerprintChangesWithBytesSpecialsAndStops) {
  TableTokenizer base({"<|im_end|>", "a", "b"}, {0});
  uint64_t f = TokenVocabulary::from_tokenizer(base, {0})->fingerprint();
  EXPECT_EQ(TokenVocabulary::from_tokenizer(base, {0})->fingerprint(), f);
  EXPECT_NE(TokenVocabulary::from_tokenizer(base, {})->fingerprint(), f);
  EXPECT_NE(TokenVocabulary::from_tokenizer(TableTokenizer({"<|im_end|>", "a", "c"}, {0}), {0})
                ->fingerprint(),
            f);
  EXPECT_NE(TokenVocabulary::from_tokenizer(TableTokenizer({"<|im_end|>", "a", "b"}, {0, 1}), {0})
                ->fingerprint(),
            f);
}

}  // namespace
}  // namespace qmlx::grammar
