// Counted repetition (GrammarNode::Kind::kCounted): bounded strings (minLength / maxLength) and
// large x{n,m} run as one copy of the body with the count in the stack frame. Masks must stay
// exact: a token is in the mask iff accept_token() takes it.
#include <gtest/gtest.h>

#include "grammar/json_schema_compiler.h"
#include "grammar_test_support.h"

namespace qmlx::grammar {
namespace {

using Json = nlohmann::ordered_json;
using test_support::accepts;
using test_support::allowed_by_mask;
using test_support::allowed_by_trying;
using test_support::kStopId;

// The shared small vocabulary plus tokens spanning many characters, escapes, multi-byte
// characters and a string's end, so one token completes up to a dozen repetitions.
std::shared_ptr<const TokenVocabulary> long_token_vocabulary() {
  auto base = test_support::small_vocabulary();
  std::vector<std::string> bytes;
  std::vector<bool> special;
  for (int32_t id = 0; id < base->size(); ++id) {
    bytes.push_back(base->bytes(id));
    special.push_back(base->is_special(id));
  }
  for (const char* t : {"abcd",
                        "abcdefgh",
                        "hello world!",
                        "aaaa",
                        "aaaaaaaaaaa",
                        "a\\n",
                        "\\n\\n",
                        "\\u0001",
                        "\\u00",
                        "01",
                        "\xC3\xA9\xC3\xA9",
                        "b\xC3\xA9",
                        "\xE4\xB8\xAD\xE4\xB8\xAD\xE4\xB8\xAD",
                        "ab\"",
                        "ab\",",
                        "abcd\"}",
                        "\",\"",
                        "a\"]",
                        "\"\"",
                        "aa\"",
                        "\xF0\x9F\x98\x80\xF0\x9F"})
    bytes.push_back(t), special.push_back(false);
  return std::make_shared<const TokenVocabulary>(bytes, special, std::vector<int32_t>{kStopId});
}

int32_t id_of(const TokenVocabulary& vocab, const std::string& bytes) {
  for (int32_t id = 0; id < vocab.size(); ++id)
    if (vocab.bytes(id) == bytes && !vocab.is_special(id)) return id;
  ADD_FAILURE() << "no token " << bytes;
  return -1;
}

// Random walks (with rollbacks), checking every mask against trying every token.
void check_masks_on_random_walks(const std::shared_ptr<const TokenMaskTables>& tables,
                                 const std::string& what, int walks, int steps) {
  const int32_t n = tables->vocab().size();
  std::mt19937 rng(11);
  for (int walk = 0; walk < walks; ++walk) {
    GrammarMatcher m(tables);
    for (int step = 0; step < steps && !m.is_terminated(); ++step) {
      auto by_mask = allowed_by_mask(m, n);
      ASSERT_EQ(by_mask, allowed_by_trying(m, n)) << what << " walk " << walk << " step " << step;
      if (by_mask.empty()) break;
      // Prefer staying in a string (non-stop tokens) so walks reach the bounds.
      int32_t pick = by_mask[rng() % by_mask.size()];
      if (pick == kStopId && by_mask.size() > 1 && rng() % 4) pick = by_mask[1];
      ASSERT_TRUE(m.accept_token(pick));
      if (step > 2 && rng() % 6 == 0) m.rollback(1 + rng() % 2), step -= 2;
    }
  }
}

SchemaOptions counted_always() {
  SchemaOptions o;
  o.grammar_limits.max_unrolled_repeat = 0;  // even {0,2} becomes a counted repetition
  return o;
}

TEST(CountedRepetition, BoundedStringMasksAreExact) {
  auto vocab = long_token_vocabulary();
  const char* schemas[] = {
      R"({"type": "string", "maxLength": 3})",
      R"({"type": "string", "minLength": 2, "maxLength": 5})",
      R"({"type": "string", "minLength": 4, "maxLength": 4})",
      R"({"type": "string", "minLength": 6})",
      R"({"type": "string", "maxLength": 12})",
      R"({"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 3}})",
      R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 2},
          "b": {"type": "string", "minLength": 3, "maxLength": 7}}, "required": ["a"]})",
  };
  for (const char* text : schemas) {
    auto counted = compile_json_schema(Json::parse(text), counted_always());
    ASSERT_TRUE(counted.unsupported.empty()) << text;
    ASSERT_FALSE(counted.grammar->repeats.empty()) << text;
    check_masks_on_random_walks(TokenMaskTables::build(counted.grammar, vocab), text, 40, 30);
  }
}

// The counted grammar accepts exactly the strings the unrolled one does.
TEST(CountedRepetition, SameLanguageAsUnrolled) {
  SchemaOptions unrolled;
  unrolled.grammar_limits.max_unrolled_repeat = 1000;
  const char* schema = R"({"type": "string", "minLength": 2, "maxLength": 5})";
  auto a = compile_json_schema(Json::parse(schema), counted_always());
  auto b = compile_json_schema(Json::parse(schema), unrolled);
  ASSERT_TRUE(b.grammar->repeats.empty());
  const char* pieces[] = {"a", "\\n", "\xC3\xA9", "\xF0\x9F\x98\x80", "\\u0001", "\\", "\""};
  std::mt19937 rng(3);
  for (int i = 0; i < 3000; ++i) {
    std::string s = "\"";
    for (size_t n = rng() % 8; n-- > 0;) s += pieces[rng() % std::size(pieces)];
    if (rng() % 4) s += "\"";
    ASSERT_EQ(accepts(a, s), accepts(b, s)) << s;
  }
}

TEST(CountedRepetition, ExactlyMaxCodePointsThenOnlyTheQuote) {
  auto vocab = long_token_vocabulary();
  auto g = compile_json_schema(Json::parse(R"({"type": "string", "maxLength": 100})"));
  ASSERT_TRUE(g.unsupported.empty());
  ASSERT_EQ(g.grammar->repeats.size(), 1u);
  auto tables = TokenMaskTables::build(g.grammar, vocab);
  const int32_t quote = id_of(*vocab, "\"");
  // Characters of every kind count as one: ASCII, escapes, 2- and 4-byte UTF-8, \u00xx.
  const char* chars[] = {"a", "\\n", "\xC3\xA9", "\xF0\x9F\x98\x80", "\\u0001", "\\\""};
  GrammarMatcher m(tables);
  ASSERT_TRUE(m.accept_token(quote));
  for (int i = 0; i < 100; ++i) {
    ASSERT_FALSE(m.is_complete());
    ASSERT_TRUE(m.accept_bytes(chars[i % std::size(chars)])) << i;
  }
  for (const char* c : chars) EXPECT_FALSE(m.accept_bytes(c)) << c;
  EXPECT_EQ(allowed_by_mask(m, vocab->size()), allowed_by_trying(m, vocab->size()));
  // Only tokens that close the string right away (with nothing after it: the root ends).
  for (int32_t id : allowed_by_mask(m, vocab->size())) EXPECT_EQ(vocab->bytes(id), "\"");
  // Rollback across the bound: two characters back, a two-character token fits again.
  m.rollback(2);
  EXPECT_TRUE(m.accept_token(id_of(*vocab, "ab")));
  EXPECT_FALSE(m.accept_token(id_of(*vocab, "a")));
  m.rollback(1);
  EXPECT_FALSE(m.accept_token(id_of(*vocab, "abcd")));
  EXPECT_TRUE(m.accept_token(id_of(*vocab, "ab\"")));
  EXPECT_TRUE(m.is_complete());
  EXPECT_TRUE(m.accept_token(kStopId));
}

TEST(CountedRepetition, MinimumLengthIsEnforced) {
  auto vocab = long_token_vocabulary();
  auto g = compile_json_schema(Json::parse(R"({"type": "string", "minLength": 20})"));
  ASSERT_TRUE(g.unsupported.empty());
  ASSERT_EQ(g.grammar->repeats.size(), 1u);
  auto tables = TokenMaskTables::build(g.grammar, vocab);
  GrammarMatcher m(tables);
  ASSERT_TRUE(m.accept_token(id_of(*vocab, "\"")));
  ASSERT_TRUE(m.accept_token(id_of(*vocab, "hello world!")));      // 12
  ASSERT_TRUE(m.accept_token(id_of(*vocab, "\\n\\n")));            // 14
  ASSERT_TRUE(m.accept_token(id_of(*vocab, "\xC3\xA9\xC3\xA9")));  // 16
  EXPECT_FALSE(m.accept_token(id_of(*vocab, "ab\"")));             // 18: too short
  EXPECT_FALSE(m.accept_token(id_of(*vocab, "abcd\"}")));
  EXPECT_EQ(allowed_by_mask(m, vocab->size()), allowed_by_trying(m, vocab->size()));
  ASSERT_TRUE(m.accept_token(id_of(*vocab, "ab")));  // 18
  EXPECT_FALSE(m.accept_token(id_of(*vocab, "\"")));
  EXPECT_TRUE(m.accept_token(id_of(*vocab, "ab\"")));  // 20
  EXPECT_TRUE(m.is_complete());
  m.rollback(1);
  ASSERT_TRUE(m.accept_token(id_of(*vocab, "aaaaaaaaaaa")));  // 29: no upper bound
  EXPECT_EQ(allowed_by_mask(m, vocab->size()), allowed_by_trying(m, vocab->size()));
  EXPECT_TRUE(m.accept_token(id_of(*vocab, "\"")));
}

// Our text syntax's x{n,m} with large counts uses the same construct, bodies with rule calls
// and alternatives included.
TEST(CountedRepetition, TextGrammarRepetitions) {
  auto vocab = long_token_vocabulary();
  const char* grammars[] = {
      R"(root ::= "\"" [a-z]{3,40} ("," [0-9]{2,7})* "\"")",
      R"(root ::= "[" item{0,9} "]"
         item ::= "\"" ("a" | "ab" | "\\n"){1,6} "\"" ","?)",
      R"(root ::= ("a" | "b" | "\xC3\xA9"){5,} "\"")",
  };
  for (const char* text : grammars) {
    auto g = compile_grammar(text);
    ASSERT_FALSE(g.grammar->repeats.empty()) << text;
    check_masks_on_random_walks(TokenMaskTables::build(g.grammar, vocab), text, 40, 30);
  }
}

// Binding walks the body once, whatever the bound.
TEST(CountedRepetition, TablesDoNotGrowWithTheBound) {
  auto vocab = long_token_vocabulary();
  auto size_for = [&](const char* schema) {
    auto g = compile_json_schema(Json::parse(schema));
    return TokenMaskTables::build(g.grammar, vocab)->memory_bytes();
  };
  size_t small = size_for(R"({"type": "string", "maxLength": 50})");
  size_t large = size_for(R"({"type": "string", "minLength": 20, "maxLength": 10000})");
  EXPECT_LT(large, small * 2);
}

}  // namespace
}  // namespace qmlx::grammar
