#include <gtest/gtest.h>

#include "server/request_parser.h"
#include "tests/server/api_error_of.h"

namespace qmlx::server {
namespace {

using ojson = nlohmann::ordered_json;
using testing::error_of;

TEST(RequestParserTest, MalformedJsonIs400) {
  EXPECT_EQ(error_of([] { parse_body("{\"messages\": ["); }).status(), 400);
  EXPECT_EQ(error_of([] { parse_body("[1, 2]"); }).status(), 400);
}

TEST(RequestParserTest, ChatFieldsAreParsed) {
  SamplingDefaults defaults;
  defaults.top_k = 20;
  auto r = parse_chat_request(ojson::parse(R"({
      "model": "m", "stream": true, "stream_options": {"include_usage": true},
      "messages": [{"role": "system", "content": "s"},
                   {"role": "user", "content": [{"type": "text", "text": "a"},
                                                {"type": "text", "text": "b"}]},
                   {"role": "assistant", "content": null, "reasoning_content": "r",
                    "tool_calls": [{"id": "c1", "type": "function",
                                    "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
                   {"role": "tool", "tool_call_id": "c1", "content": "42"}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
      "tool_choice": {"type": "function", "function": {"name": "f"}},
      "max_completion_tokens": 7, "temperature": 0, "seed": 5, "stop": "END",
      "logprobs": true, "top_logprobs": 3, "chat_template_kwargs": {"enable_thinking": false}})"),
                              defaults);
  EXPECT_EQ(r.model, "m");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
  EXPECT_EQ(r.messages[2]["reasoning_content"], "r");
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["arguments"]["x"], 1);
  EXPECT_EQ(r.messages[3]["tool_call_id"], "c1");
  EXPECT_EQ(r.tool_choice, ToolChoiceMode::kNamed);
  EXPECT_EQ(r.tool_choice_name, "f");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0);
  EXPECT_EQ(r.sampling.top_k, 20);  // from the defaults
  EXPECT_EQ(r.sampling.seed, 5u);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_EQ(r.template_kwargs["enable_thinking"], false);
}

TEST(RequestParserTest, MissingAndMistypedFieldsAreNamed) {
  SamplingDefaults d;
  auto missing = error_of([&] { parse_chat_request(ojson::parse(R"({"model": "m"})"), d); });
  EXPECT_EQ(missing.status(), 400);
  EXPECT_EQ(missing.param(), "messages");
  EXPECT_NE(std::string(missing.what()).find("messages"), std::string::npos);

  auto mistyped = error_of([&] {
    parse_chat_request(
        ojson::parse(R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})"),
        d);
  });
  EXPECT_EQ(mistyped.param(), "temperature");

  auto role = error_of([&] {
    parse_chat_request(ojson::parse(R"({"messages": [{"role": "wizard", "content": "x"}]})"), d);
  });
  EXPECT_EQ(role.param(), "messages[0].role");

  auto image = error_of([&] {
    parse_chat_request(ojson::parse(R"({"messages": [{"role": "user", "content":
        [{"type": "image_url", "image_url": {"url": "x"}}]}]})"),
                       d);
  });
  EXPECT_EQ(image.param(), "messages[0].content[0].type");
}

TEST(RequestParserTest, CompletionPromptIsTextOrTokenIds) {
  SamplingDefaults d;
  auto text = parse_completion_request(ojson::parse(R"({"prompt": "hi", "echo": true})"), d);
  EXPECT_EQ(text.prompt_text, "hi");
  EXPECT_TRUE(text.echo);
  EXPECT_EQ(text.max_tokens, 16);
  auto ids = parse_completion_request(ojson::parse(R"({"prompt": [1, 2, 3], "logprobs": 2})"), d);
  EXPECT_EQ(ids.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(ids.top_logprobs, 2);
  EXPECT_EQ(error_of([&] {
              parse_completion_request(ojson::parse(R"({"prompt": [1, "x"]})"), d);
            }).param(),
            "prompt[1]");
}

TEST(RequestParserTest, AnthropicMessagesBecomeOpenAIMessages) {
  SamplingDefaults d;
  auto r = parse_messages_request(ojson::parse(R"({
      "model": "m", "max_tokens": 100, "system": [{"type": "text", "text": "sys"}],
      "messages": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [
          {"type": "thinking", "thinking": "hmm", "signature": "s"},
          {"type": "text", "text": "checking"},
          {"type": "tool_use", "id": "t1", "name": "get", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [
          {"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}]}],
      "tools": [{"name": "get", "description": "d", "input_schema": {"type": "object"}}],
      "tool_choice": {"type": "any"}, "stop_sequences": ["X"],
      "thinking": {"type": "enabled", "budget_tokens": 1000}})"),
                                  d);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[0]["content"], "sys");
  EXPECT_EQ(r.messages[2]["reasoning_content"], "hmm");
  EXPECT_EQ(r.messages[2]["content"], "checking");
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["name"], "get");
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["arguments"]["city"], "Paris");
  EXPECT_EQ(r.messages[3]["role"], "tool");
  EXPECT_EQ(r.messages[3]["tool_call_id"], "t1");
  EXPECT_EQ(r.messages[3]["content"], "sunny");
  EXPECT_EQ(r.tools[0]["function"]["name"], "get");
  EXPECT_EQ(r.tools[0]["function"]["parameters"]["type"], "object");
  EXPECT_EQ(r.tool_choice, ToolChoiceMode::kRequired);
  EXPECT_EQ(r.stop, std::vector<std::string>{"X"});
  EXPECT_EQ(r.template_kwargs["enable_thinking"], true);
  EXPECT_EQ(r.max_tokens, 100);
}

TEST(RequestParserTest, AnthropicRequiresMaxTokens) {
  auto e = error_of([] {
    parse_messages_request(ojson::parse(R"({"messages": [{"role": "user", "content": "x"}]})"),
                           SamplingDefaults{});
  });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "max_tokens");
}

TEST(RequestParserTest, ToolsKeepTheClientKeyOrder) {
  auto r = parse_chat_request(ojson::parse(R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters":
        {"type": "object", "properties": {"zeta": {}, "alpha": {}}}}}]})"),
                              SamplingDefaults{});
  EXPECT_EQ(r.tools[0]["function"]["parameters"]["properties"].dump(), R"({"zeta":{},"alpha":{}})");
}

}  // namespace
}  // namespace qmlx::server
