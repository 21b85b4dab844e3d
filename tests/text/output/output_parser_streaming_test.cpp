// Streaming behaviour: what each feed returns (text goes out as soon as its role is certain,
// partial tags are held back), tool-call deltas and ids, and randomised split invariance.

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "parser_test_support.h"
#include "text/output/output_parser.h"

namespace qmlx {
namespace {

using testing::expect_random_splits_agree;
using testing::options_for;
using testing::plain_options;

TEST(OutputParserStreaming, ContentIsEmittedImmediatelyWithoutTools) {
  OutputParser parser(plain_options());
  EXPECT_EQ(parser.feed("Hello wor").content, "Hello wor");
  EXPECT_EQ(parser.feed("ld <tool").content, "ld <tool");
  EXPECT_TRUE(parser.finish().empty());
}

TEST(OutputParserStreaming, PartialToolCallTagIsHeldUntilDecided) {
  OutputParser parser(options_for(ToolCallFormat::kJson));
  EXPECT_EQ(parser.feed("Hi").content, "Hi");
  EXPECT_EQ(parser.feed(" <too").content, "");
  OutputDelta delta = parser.feed("ls are great");
  EXPECT_EQ(delta.content, " <tools are great");
  EXPECT_TRUE(delta.tool_calls.empty());
}

TEST(OutputParserStreaming, ToolCallIsEmittedWholeWhenItCloses) {
  OutputParser parser(options_for(ToolCallFormat::kJson));
  EXPECT_EQ(parser.feed("Let me look.\n<tool_").content, "Let me look.");
  EXPECT_TRUE(parser.feed("call>\n{\"name\": \"search\", ").empty());
  EXPECT_TRUE(parser.feed("\"arguments\": {\"query\": \"x\"}}\n</tool_call").empty());
  OutputDelta delta = parser.feed(">\n");
  EXPECT_EQ(delta.content, "");
  ASSERT_EQ(delta.tool_calls.size(), 1u);
  EXPECT_EQ(delta.tool_calls[0].index, 0u);
  EXPECT_EQ(delta.tool_calls[0].name, "search");
  EXPECT_EQ(delta.tool_calls[0].arguments, R"({"query":"x"})");
  EXPECT_TRUE(delta.tool_calls[0].id.starts_with("call_"));

  delta = parser.feed("<tool_call>\n{\"name\": \"no_args\"}\n</tool_call>");
  ASSERT_EQ(delta.tool_calls.size(), 1u);
  EXPECT_EQ(delta.tool_calls[0].index, 1u);
  EXPECT_NE(delta.tool_calls[0].id, parser.result().tool_calls[0].id);
  EXPECT_TRUE(parser.finish().empty());
  EXPECT_EQ(parser.result().content, "Let me look.");
  EXPECT_EQ(parser.result().tool_calls.size(), 2u);
}

TEST(OutputParserStreaming, ReasoningIsStreamedBeforeTheBlockCloses) {
  OutputParser parser(plain_options());
  EXPECT_TRUE(parser.feed("<thi").empty());
  EXPECT_TRUE(parser.feed("nk>\n").empty());
  EXPECT_EQ(parser.feed("step one").reasoning, "step one");
  // A newline might be the framing before </think>: held until the next character decides.
  EXPECT_EQ(parser.feed("\n").reasoning, "");
  EXPECT_EQ(parser.feed("step two\n</th").reasoning, "\nstep two");
  OutputDelta delta = parser.feed("ink>\n\nAnswer");
  EXPECT_EQ(delta.reasoning, "");
  EXPECT_EQ(delta.content, "Answer");
}

TEST(OutputParserStreaming, TrailingWhitespaceIsHeldOnlyWhileACallMayFollow) {
  OutputParser with_tools(options_for(ToolCallFormat::kXml));
  EXPECT_EQ(with_tools.feed("a \n").content, "a");
  EXPECT_EQ(with_tools.feed("b").content, " \nb");
  EXPECT_EQ(with_tools.feed("\n").content, "");
  EXPECT_EQ(with_tools.finish().content, "\n");
}

TEST(OutputParserStreaming, FeedAfterFinishIsAnError) {
  OutputParser parser(plain_options());
  parser.finish();
  EXPECT_THROW(parser.feed("x"), std::logic_error);
  EXPECT_THROW(parser.finish(), std::logic_error);
}

TEST(OutputParserStreaming, SeededIdsAreReproducibleAndSeedsDiffer) {
  const std::string reply =
      "<tool_call>\n{\"name\": \"no_args\"}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"no_args\"}\n</tool_call>";
  OutputParserOptions options = options_for(ToolCallFormat::kJson);
  const ParsedOutput first = parse_output(reply, options);
  const ParsedOutput again = parse_output(reply, options);
  ASSERT_EQ(first.tool_calls.size(), 2u);
  EXPECT_EQ(first.tool_calls[0].id, again.tool_calls[0].id);
  EXPECT_NE(first.tool_calls[0].id, first.tool_calls[1].id);
  options.id_seed = 43;
  EXPECT_NE(parse_output(reply, options).tool_calls[0].id, first.tool_calls[0].id);
  options.id_seed.reset();
  EXPECT_NE(parse_output(reply, options).tool_calls[0].id,
            parse_output(reply, options).tool_calls[0].id);
}

// Random replies built from tags, partial tags, whitespace, multi-byte characters and call
// bodies: the parser must never throw and must give the same result for every split.
std::string random_reply(std::mt19937& random) {
  static const std::vector<std::string> kPieces = {
      "<think>",
      "</think>",
      "<tool_call>",
      "</tool_call>",
      "<tool",
      "</",
      "<",
      ">",
      "\n",
      "\n\n",
      " ",
      "x",
      "答案",
      "🌍",
      "👨‍👩‍👧",
      "{\"name\": \"search\", \"arguments\": {\"query\": \"q\"}}",
      "{\"name\": \"nope\"}",
      "{",
      "<function=search>",
      "<parameter=query>",
      "<parameter=limit>",
      "</parameter>",
      "</function>",
      "3",
      "<think",
      "</tool_call",
  };
  std::uniform_int_distribution<size_t> length(0, 14);
  std::uniform_int_distribution<size_t> pick(0, kPieces.size() - 1);
  std::string reply;
  for (size_t i = length(random); i > 0; --i) reply += kPieces[pick(random)];
  return reply;
}

TEST(OutputParserStreaming, RandomRepliesAreSplitInvariantInEveryMode) {
  std::mt19937 random(7);
  const std::vector<OutputParserOptions> modes = {plain_options(), plain_options(true),
                                                  options_for(ToolCallFormat::kJson),
                                                  options_for(ToolCallFormat::kXml, true)};
  for (int i = 0; i < 150; ++i) {
    const std::string reply = random_reply(random);
    for (const OutputParserOptions& options : modes) {
      SCOPED_TRACE(reply);
      expect_random_splits_agree(reply, options, /*random_splits=*/8);
    }
  }
}

TEST(OutputParserStreaming, WithoutToolsOrThinkEveryByteIsContent) {
  std::mt19937 random(11);
  for (int i = 0; i < 200; ++i) {
    const std::string reply = "." + random_reply(random);  // "." so it cannot open with <think>
    EXPECT_EQ(parse_output(reply, plain_options()).content, reply);
  }
}

}  // namespace
}  // namespace qmlx
