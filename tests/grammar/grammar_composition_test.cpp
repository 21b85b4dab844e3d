// Grammar composition: a grammar written back as text parses to the same language, and rules
// embedded under a prefix keep their references inside the prefix.
#include "grammar/grammar_composition.h"

#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_parser.h"
#include "grammar/json_schema_compiler.h"
#include "grammar_test_support.h"

namespace qmlx::grammar {
namespace {

bool matches(const std::string& grammar_text, const std::string& text) {
  auto tables = TokenMaskTables::build(compile_grammar(grammar_text).grammar,
                                       test_support::small_vocabulary());
  GrammarMatcher matcher(tables);
  return matcher.accept_bytes(text) && matcher.is_complete();
}

TEST(GrammarComposition, WrittenBackTextMeansTheSame) {
  const std::string schema_text =
      compile_json_schema(nlohmann::ordered_json::parse(
                              R"({"type": "object", "required": ["a"], "properties": {
                                  "a": {"type": "string", "maxLength": 3},
                                  "b": {"type": "array", "items": {"enum": [1, "x"]}}}})"))
          .text;
  const std::string written = grammar_ast_text(parse_grammar(schema_text));
  for (std::string text : {R"({"a":"abc"})", R"({"a":"","b":[1,"x"]})", R"({"a":"abcd"})",
                           R"({"b":[]})", R"({"a":"é\n"})"}) {
    EXPECT_EQ(matches(written, text), matches(schema_text, text)) << text;
  }
  EXPECT_TRUE(matches(written, R"({"a":"ab","b":[1]})"));
  EXPECT_FALSE(matches(written, R"({"a":"ab","b":[2]})"));
  // Classes that match nothing survive the trip.
  EXPECT_FALSE(
      matches(grammar_ast_text(parse_grammar("root ::= \"a\" [^\\x00-\\U0010ffff]?")), "ab"));
}

TEST(GrammarComposition, EmbeddedRulesKeepTheirReferences) {
  GrammarAst whole = parse_grammar("root ::= \"<\" x-root \">\"");
  GrammarAst part = parse_grammar("root ::= item (\",\" item)*\nitem ::= [0-9]+");
  EXPECT_EQ(embed_rules(whole, part, "x-"), "x-root");
  const std::string text = grammar_ast_text(whole);
  EXPECT_NE(text.find("x-item ::="), std::string::npos);
  EXPECT_TRUE(matches(text, "<1,22>"));
  EXPECT_FALSE(matches(text, "<1,>"));
}

}  // namespace
}  // namespace qmlx::grammar
