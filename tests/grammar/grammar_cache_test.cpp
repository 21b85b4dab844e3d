#include "grammar/grammar_cache.h"

#include <gtest/gtest.h>

#include "grammar_test_support.h"

namespace qmlx::grammar {
namespace {

using Json = nlohmann::ordered_json;

TEST(GrammarCache, HitsReturnTheSameTablesAndKeepUnsupportedKeywords) {
  auto vocab = test_support::small_vocabulary();
  GrammarCache cache(64 << 20);
  Json schema = Json::parse(R"({"type": "array", "uniqueItems": true})");
  BoundGrammar a = cache.json_schema(schema, {}, vocab);
  BoundGrammar b =
      cache.json_schema(Json::parse(R"({"type": "array", "uniqueItems": true})"), {}, vocab);
  EXPECT_EQ(a.tables, b.tables);
  EXPECT_EQ(b.unsupported, (std::vector<UnsupportedKeyword>{{"uniqueItems", ""}}));
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 1u);
}

TEST(GrammarCache, MemberOrderAndVocabularyAreTheKey) {
  auto vocab = test_support::small_vocabulary();
  GrammarCache cache(64 << 20);
  auto a = cache.json_schema(Json::parse(R"({"properties": {"a": {}, "b": {}}})"), {}, vocab);
  auto b = cache.json_schema(Json::parse(R"({"properties": {"b": {}, "a": {}}})"), {}, vocab);
  EXPECT_NE(a.tables, b.tables);  // different output order
  auto other_vocab = std::make_shared<const TokenVocabulary>(
      std::vector<std::string>{"a", "b"}, std::vector<bool>{false, false}, std::vector<int32_t>{});
  auto c = cache.json_schema(Json::parse(R"({"properties": {"a": {}, "b": {}}})"), {}, other_vocab);
  EXPECT_NE(a.tables, c.tables);
  EXPECT_EQ(cache.entries(), 3u);
}

TEST(GrammarCache, StaysWithinItsByteBoundEvictingTheLeastRecentlyUsed) {
  auto vocab = test_support::small_vocabulary();
  auto schema = [](int i) { return Json{{"const", i}}; };
  size_t one = GrammarCache(64 << 20).json_schema(schema(0), {}, vocab).tables->memory_bytes();
  size_t capacity = one * 2 + one / 2;  // room for two
  GrammarCache cache(capacity);
  auto zero = cache.json_schema(schema(0), {}, vocab);
  cache.json_schema(schema(1), {}, vocab);
  cache.json_schema(schema(0), {}, vocab);  // 0 is now the most recently used
  cache.json_schema(schema(2), {}, vocab);  // evicts 1
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_LE(cache.bytes(), capacity);
  uint64_t misses = cache.misses();
  EXPECT_EQ(cache.json_schema(schema(0), {}, vocab).tables, zero.tables);
  EXPECT_EQ(cache.misses(), misses);
  cache.json_schema(schema(1), {}, vocab);
  EXPECT_EQ(cache.misses(), misses + 1);
}

TEST(GrammarCache, CompileErrorsAreNotCached) {
  auto vocab = test_support::small_vocabulary();
  GrammarCache cache(64 << 20);
  EXPECT_THROW(cache.grammar("root ::= (", vocab), GrammarError);
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_NE(cache.grammar("root ::= \"a\"", vocab).tables, nullptr);
}

}  // namespace
}  // namespace qmlx::grammar
