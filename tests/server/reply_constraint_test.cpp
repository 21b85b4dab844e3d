// ReplyConstraint in the decode loop's terms, on the fake runtime's byte-level tokenizer: the
// mask allows exactly what the grammar allows, stop only at the end; reasoning is free but may
// not end the turn and is closed in time; a tool call may replace the value.
#include "server/scheduling/reply_constraint.h"

#include <gtest/gtest.h>

#include <cmath>

#include "grammar/compiled_grammar.h"
#include "tests/server/fake_runtime.h"

namespace qmlx::server {
namespace {

class ReplyConstraintTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime_ = testing::make_fake_runtime({});
    tokenizer_ = runtime_->tokenizer;
    eos_ = *tokenizer_->token_id("<|im_end|>");
    vocab_ = grammar::TokenVocabulary::from_tokenizer(*tokenizer_, {eos_});
  }
  std::shared_ptr<const grammar::TokenMaskTables> tables(const std::string& text) {
    return grammar::TokenMaskTables::build(grammar::compile_grammar(text).grammar, vocab_);
  }
  std::vector<float> flat() const { return std::vector<float>(size_t(tokenizer_->vocab_size()), 0.f); }
  int32_t id(char c) const { return int32_t(static_cast<unsigned char>(c)); }
  static bool allowed(std::span<const float> l, int32_t id) { return std::isfinite(l[size_t(id)]); }

  std::shared_ptr<ModelRuntime> runtime_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  int32_t eos_ = 0;
  std::shared_ptr<const grammar::TokenVocabulary> vocab_;
};

TEST_F(ReplyConstraintTest, MaskFollowsTheGrammarAndStopComesAtTheEnd) {
  ReplyConstraint c(tables("root ::= \"ok\" [0-9]?"), "<|im_start|>assistant\n", 100, *tokenizer_);
  ASSERT_TRUE(c.enabled());
  std::vector<float> logits = flat();
  auto l = c.mask(logits);
  EXPECT_TRUE(allowed(l, id('o')));
  EXPECT_FALSE(allowed(l, id('k')));
  EXPECT_FALSE(allowed(l, eos_));
  c.observe(id('o'));
  c.observe(id('k'));
  l = c.mask(logits);
  EXPECT_TRUE(allowed(l, id('7')));
  EXPECT_TRUE(allowed(l, eos_));  // complete: the turn may end
  EXPECT_FALSE(allowed(l, id('x')));
  EXPECT_EQ(c.refused(), 0);
}

TEST_F(ReplyConstraintTest, WithoutTablesNothingChanges) {
  ReplyConstraint c(nullptr, "", 100, *tokenizer_);
  std::vector<float> logits = flat();
  EXPECT_FALSE(c.enabled());
  EXPECT_EQ(c.mask(logits).data(), logits.data());
  EXPECT_FALSE(c.forced_token(0));
}

TEST_F(ReplyConstraintTest, ReasoningIsFreeCannotEndTheTurnAndIsClosedInTime) {
  const std::string prompt = "<|im_start|>assistant\n<think>\n";
  ReplyConstraint c(tables("root ::= \"ok\""), prompt, 40, *tokenizer_);
  std::vector<float> logits = flat();
  auto l = c.mask(logits);
  EXPECT_TRUE(allowed(l, id('x')));  // reasoning: free text
  EXPECT_FALSE(allowed(l, eos_));    // but not the end of the turn
  // max_tokens 40 keeps 10 for the reply: after 30 tokens of reasoning, `</think>\n\n` is forced.
  for (int i = 0; i < 30; ++i) {
    ASSERT_FALSE(c.forced_token(i)) << i;
    c.observe(id('x'));
  }
  std::string forced;
  for (int i = 30; auto token = c.forced_token(i); ++i) {
    forced += tokenizer_->token_bytes(*token);
    c.observe(*token);
  }
  EXPECT_EQ(forced, "</think>\n\n");
  l = c.mask(logits);
  EXPECT_TRUE(allowed(l, id('o')));
  EXPECT_FALSE(allowed(l, id('x')));
}

TEST_F(ReplyConstraintTest, TheModelsOwnThinkEndStartsTheGrammarAfterTheBlankLine) {
  ReplyConstraint c(tables("root ::= \"ok\""), "<think>\n", 100, *tokenizer_);
  c.observe(id('h'));
  c.observe(*tokenizer_->token_id("</think>"));
  std::string forced;
  for (int i = 2; auto token = c.forced_token(i); ++i) {
    forced += tokenizer_->token_bytes(*token);
    c.observe(*token);
  }
  EXPECT_EQ(forced, "\n\n");
  std::vector<float> logits = flat();
  EXPECT_TRUE(allowed(c.mask(logits), id('o')));
}

TEST_F(ReplyConstraintTest, AToolCallMayReplaceTheValue) {
  const int32_t open = *tokenizer_->token_id("<tool_call>");
  ReplyConstraint c(tables("root ::= \"ok\""), "", 100, *tokenizer_, open);
  std::vector<float> logits = flat();
  EXPECT_TRUE(allowed(c.mask(logits), open));
  c.observe(open);
  // From here the call is free.
  EXPECT_EQ(c.mask(logits).data(), logits.data());
  // Once the value has started, a tool call is no longer offered.
  ReplyConstraint d(tables("root ::= \"ok\""), "", 100, *tokenizer_, open);
  d.observe(id('o'));
  EXPECT_FALSE(allowed(d.mask(logits), open));
}

}  // namespace
}  // namespace qmlx::server
