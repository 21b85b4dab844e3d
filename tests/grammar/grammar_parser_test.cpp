#include "grammar/grammar_parser.h"

#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/pushdown_stepper.h"

namespace qmlx::grammar {
namespace {

// Whether the whole of `text` is a sentence of the grammar, byte by byte.
bool matches(const std::string& grammar_text, std::string_view text) {
  CompiledGrammar g = compile_grammar(grammar_text);
  StackArena arena;
  PushdownStepper stepper(*g.grammar, arena);
  ParserState a, b;
  stepper.start_state(a);
  for (char c : text) {
    if (!stepper.step(a, static_cast<uint8_t>(c), b)) return false;
    std::swap(a, b);
  }
  return a.complete;
}

std::string error_of(const std::string& grammar_text) {
  try {
    compile_grammar(grammar_text);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

TEST(GrammarParser, LiteralsSequencesAndAlternatives) {
  std::string g = R"(root ::= "ab" ("c" | "de") "f")";
  EXPECT_TRUE(matches(g, "abcf"));
  EXPECT_TRUE(matches(g, "abdef"));
  EXPECT_FALSE(matches(g, "abf"));
  EXPECT_FALSE(matches(g, "abc"));
}

TEST(GrammarParser, RepetitionOperators) {
  EXPECT_TRUE(matches(R"(root ::= "a"*)", ""));
  EXPECT_TRUE(matches(R"(root ::= "a"*)", "aaaa"));
  EXPECT_FALSE(matches(R"(root ::= "a"+)", ""));
  EXPECT_TRUE(matches(R"(root ::= "a"? "b")", "b"));
  EXPECT_TRUE(matches(R"(root ::= "a"{2,3})", "aaa"));
  EXPECT_FALSE(matches(R"(root ::= "a"{2,3})", "a"));
  EXPECT_FALSE(matches(R"(root ::= "a"{2,3})", "aaaa"));
  EXPECT_TRUE(matches(R"(root ::= "a"{2,})", "aaaaaa"));
  EXPECT_TRUE(matches(R"(root ::= "a"{2})", "aa"));
  // A nullable body inside a star must not loop forever.
  EXPECT_TRUE(matches(R"(root ::= ("a"?)* "b")", "aab"));
}

TEST(GrammarParser, CharacterClassesMatchUtf8CodePoints) {
  std::string g = R"(root ::= [a-cé-ê]+)";
  EXPECT_TRUE(matches(g, "abé"));
  EXPECT_TRUE(matches(g, "ê"));
  EXPECT_FALSE(matches(g, "d"));
  std::string negated = R"(root ::= [^"\\]*)";
  EXPECT_TRUE(matches(negated, "hello 世界 😀"));
  EXPECT_FALSE(matches(negated, "a\"b"));
  EXPECT_FALSE(matches(negated, "\xC3"));  // partial UTF-8 is not a character
  EXPECT_TRUE(matches(R"(root ::= .)", "😀"));
  EXPECT_FALSE(matches(R"(root ::= .)", "\xED\xA0\x80"));  // a surrogate
}

TEST(GrammarParser, EscapesInLiteralsAndClasses) {
  EXPECT_TRUE(matches(R"(root ::= "\n\t\"\\\x41\u00e9")", "\n\t\"\\A\xC3\xA9"));
  EXPECT_TRUE(matches(R"(root ::= [\x41-\x43]+)", "ABC"));
  EXPECT_TRUE(matches(R"(root ::= [\]\-]+)", "]-]"));
}

TEST(GrammarParser, RulesReferenceEachOtherAndRecurse) {
  std::string g = R"(
    # nested lists
    root ::= list
    list ::= "[" (item ("," item)*)? "]"
    item ::= [0-9]+ | list
  )";
  EXPECT_TRUE(matches(g, "[1,[2,[]],33]"));
  EXPECT_FALSE(matches(g, "[1,]"));
  EXPECT_FALSE(matches(g, "[[1]"));
}

TEST(GrammarParser, ErrorsNameTheProblemAndPlace) {
  EXPECT_NE(error_of("root ::= \"a").find("unterminated string literal"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\nfoo ::= bar").find("undefined rule 'bar'"),
            std::string::npos);
  EXPECT_NE(error_of("foo ::= \"a\"").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(error_of("root ::= ( \"a\"").find("line 1"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\nroot ::= \"b\"").find("defined twice"), std::string::npos);
  EXPECT_NE(error_of("root ::= [b-a]").find("reversed"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{3,2}").find("max < min"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
}

TEST(GrammarParser, RefusesLeftRecursion) {
  EXPECT_NE(error_of("root ::= root \"a\" | \"b\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(error_of("root ::= x? root \"a\" | \"b\"\nx ::= \"x\"").find("left-recursive"),
            std::string::npos);
  EXPECT_EQ(error_of("root ::= \"a\" root | \"b\""), "");
}

TEST(GrammarParser, NodeLimitIsAnErrorNamingTheLimit) {
  try {
    compile_grammar(R"(root ::= ("a"{1000}){1000})",
                    GrammarLimits{.max_nodes = 10000, .max_unrolled_repeat = 100000});
    FAIL() << "expected a limit error";
  } catch (const GrammarError& e) {
    EXPECT_EQ(e.limit(), "max_grammar_nodes");
  }
  // Counted repetitions (the default above 4) stay small, nested ones included.
  auto g = compile_grammar(R"(root ::= ("a"{1000}){1000})", GrammarLimits{.max_nodes = 10000});
  EXPECT_EQ(g.grammar->repeats.size(), 2u);
  EXPECT_LT(g.grammar->nodes.size(), 20u);
}

}  // namespace
}  // namespace qmlx::grammar
