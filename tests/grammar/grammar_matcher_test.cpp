#include "grammar/grammar_matcher.h"

#include <gtest/gtest.h>

#include "grammar_test_support.h"

namespace qmlx::grammar {
namespace {

using test_support::allowed_by_mask;
using test_support::allowed_by_trying;
using test_support::kSpecialId;
using test_support::kStopId;
using test_support::small_vocabulary;
using test_support::tables_for;

const char* kJsonish = R"(
  root   ::= value
  value  ::= object | array | string | number | "true" | "false" | "null"
  object ::= "{" (pair ("," pair)*)? "}"
  pair   ::= string ":" value
  array  ::= "[" (value ("," value)*)? "]"
  string ::= "\"" ([^"\\\x00-\x1f] | "\\" ["\\nt])* "\""
  number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
)";

int32_t id_of(const std::string& bytes) {
  auto vocab = small_vocabulary();
  for (int32_t id = 0; id < vocab->size(); ++id)
    if (vocab->bytes(id) == bytes) return id;
  ADD_FAILURE() << "no token " << bytes;
  return -1;
}

TEST(GrammarMatcher, MultiSymbolTokensFollowTheStack) {
  GrammarMatcher m(tables_for(compile_grammar(kJsonish)));
  ASSERT_TRUE(m.accept_token(id_of("[{")));
  ASSERT_TRUE(m.accept_token(id_of("\"name\":\"")));
  ASSERT_TRUE(m.accept_token(id_of("abc")));
  // Closing the string, the object and continuing the array in one token.
  EXPECT_TRUE(m.accept_token(id_of("\"},")));
  m.rollback(1);
  EXPECT_FALSE(m.accept_token(id_of("\"]")));  // the object is still open
  EXPECT_TRUE(m.accept_token(id_of("\"}")));
  EXPECT_FALSE(m.is_complete());
  EXPECT_FALSE(m.accept_token(kStopId));
  EXPECT_TRUE(m.accept_token(id_of("]")));
  EXPECT_TRUE(m.is_complete());
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.accept_token(kStopId));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept_token(id_of("a")));
}

TEST(GrammarMatcher, PartialUtf8TokensCompleteACharacter) {
  GrammarMatcher m(tables_for(compile_grammar(R"(root ::= "\"" [^"]* "\"")")));
  ASSERT_TRUE(m.accept_token(id_of("\"")));
  ASSERT_TRUE(m.accept_token(id_of("\xE4\xB8")));
  // Mid-character only a continuation byte fits.
  auto allowed = allowed_by_mask(m, small_vocabulary()->size());
  EXPECT_EQ(allowed, (std::vector<int32_t>{id_of("\xA9"), id_of("\xAD")}));
  EXPECT_FALSE(m.accept_token(id_of("\"")));
  EXPECT_TRUE(m.accept_token(id_of("\xAD")));
  EXPECT_TRUE(m.accept_token(id_of("\"")));
  EXPECT_TRUE(m.is_complete());
}

TEST(GrammarMatcher, SpecialTokensAreNeverAllowedAndStopOnlyWhenComplete) {
  GrammarMatcher m(tables_for(compile_grammar(R"(root ::= "1"+)")));
  auto allowed = allowed_by_mask(m, small_vocabulary()->size());
  EXPECT_EQ(allowed, (std::vector<int32_t>{id_of("1")}));
  ASSERT_TRUE(m.accept_token(id_of("1")));
  allowed = allowed_by_mask(m, small_vocabulary()->size());
  EXPECT_EQ(allowed, (std::vector<int32_t>{kStopId, id_of("1")}));
  EXPECT_FALSE(m.accept_token(kSpecialId));
}

TEST(GrammarMatcher, RollbackRestoresEarlierStates) {
  GrammarMatcher m(tables_for(compile_grammar(kJsonish)));
  auto initial = allowed_by_mask(m, small_vocabulary()->size());
  ASSERT_TRUE(m.accept_token(id_of("{\"")));
  ASSERT_TRUE(m.accept_token(id_of("ab")));
  auto inside = allowed_by_mask(m, small_vocabulary()->size());
  ASSERT_TRUE(m.accept_token(id_of("\":")));
  ASSERT_TRUE(m.accept_token(id_of("12")));
  m.rollback(2);
  EXPECT_EQ(allowed_by_mask(m, small_vocabulary()->size()), inside);
  m.rollback(2);
  EXPECT_EQ(allowed_by_mask(m, small_vocabulary()->size()), initial);
  EXPECT_THROW(m.rollback(1), std::out_of_range);
}

TEST(GrammarMatcher, RejectedTokenChangesNothing) {
  GrammarMatcher m(tables_for(compile_grammar(kJsonish)));
  ASSERT_TRUE(m.accept_token(id_of("[")));
  auto before = allowed_by_mask(m, small_vocabulary()->size());
  EXPECT_FALSE(m.accept_token(id_of("}")));
  EXPECT_FALSE(m.accept_token(id_of("1}")));  // a number cannot close an array with '}'
  EXPECT_FALSE(m.accept_token(id_of(":")));
  EXPECT_EQ(allowed_by_mask(m, small_vocabulary()->size()), before);
}

// The mask is exactly the set of tokens accept_token() takes, at every step of random walks
// through several grammars (including rollbacks, as a speculative decoder would do).
TEST(GrammarMatcher, MaskEqualsTryingEveryTokenOnRandomWalks) {
  const char* grammars[] = {
      kJsonish,
      R"(root ::= "{\"name\":" ("\"" [a-z]{0,3} "\"" | "null") ",\"n\":" "-"? [0-9]+ "}")",
      R"(root ::= ("ab" | "a" "b"+ | "\"" ) ("," root)?)",
      R"(root ::= "[" ([0-9] | "\"" [^"]* "\"")* "]")",
  };
  auto vocab = small_vocabulary();
  std::mt19937 rng(7);
  for (const char* text : grammars) {
    auto tables = TokenMaskTables::build(compile_grammar(text).grammar, vocab);
    for (int walk = 0; walk < 30; ++walk) {
      GrammarMatcher m(tables);
      for (int step = 0; step < 40 && !m.is_terminated(); ++step) {
        auto by_mask = allowed_by_mask(m, vocab->size());
        ASSERT_EQ(by_mask, allowed_by_trying(m, vocab->size())) << text << " step " << step;
        if (by_mask.empty()) break;
        ASSERT_TRUE(m.accept_token(by_mask[rng() % by_mask.size()]));
        if (step > 2 && rng() % 5 == 0) m.rollback(1 + rng() % 2), step -= 2;
      }
    }
  }
}

}  // namespace
}  // namespace qmlx::grammar
