#include "grammar/grammar_cache.h"

#include <gtest/gtest.h>

#include <latch>
#include <random>
#include <thread>

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

// Requests with one schema arriving together: one binds it, the others wait for that build.
// A vocabulary of 40,000 random tokens makes the build take long enough (tens of ms) that all
// the callers arrive during it.
TEST(GrammarCache, ConcurrentMissesOfOneKeyBuildOnce) {
  std::mt19937_64 rng(5);
  std::vector<std::string> tokens;
  for (int i = 0; i < 40000; ++i) {
    std::string t(1 + rng() % 6, ' ');
    for (char& c : t) c = char(' ' + rng() % 95);
    tokens.push_back(std::move(t));
  }
  auto vocab = std::make_shared<const TokenVocabulary>(
      std::move(tokens), std::vector<bool>(40000, false), std::vector<int32_t>{});
  GrammarCache cache(256 << 20);
  const Json schema = Json::parse(
      R"({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}})");
  constexpr int kCallers = 4;
  std::latch start(kCallers);
  std::vector<std::shared_ptr<const TokenMaskTables>> got(kCallers);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i)
    callers.emplace_back([&, i] {
      start.arrive_and_wait();
      got[size_t(i)] = cache.json_schema(schema, {}, vocab).tables;
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(cache.misses(), 1u);
  EXPECT_EQ(cache.hits(), uint64_t(kCallers - 1));
  for (const auto& tables : got) EXPECT_EQ(tables, got[0]);
  EXPECT_EQ(cache.entries(), 1u);
}

}  // namespace
}  // namespace qmlx::grammar
