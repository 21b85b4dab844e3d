#include <gtest/gtest.h>

#include "server/common/reasoning_signature.h"
#include "server/anthropic/anthropic_request.h"
#include "server/chat/chat_request.h"
#include "server/common/request_fields.h"
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
  EXPECT_EQ(image.param(), "messages[0].content[0]");  // a model without vision (the default)
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

// Claude Code 2.1.332's first request, reduced to the fields that used to be refused (a
// system message after the first user message, thinking "adaptive" with display "omitted")
// and the ones it sends that this server ignores.
ojson claude_code_request() {
  return ojson::parse(R"({
      "model": "claude-opus-5-5", "max_tokens": 128000, "stream": true,
      "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.0b8;"},
                 {"type": "text", "text": "You are an agent.", "cache_control": {"type": "ephemeral"}}],
      "messages": [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>r</system-reminder>"},
                                     {"type": "text", "text": "say hi", "cache_control": {"type": "ephemeral"}}]},
        {"role": "system", "content": [{"type": "text", "text": "# Environment", "cache_control": {"type": "ephemeral"}}]}],
      "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}},
                {"name": "Grep", "description": "search", "input_schema": {"type": "object"}, "defer_loading": true},
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}],
      "metadata": {"user_id": "{\"device_id\":\"d\"}"},
      "thinking": {"type": "adaptive", "display": "omitted"},
      "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
      "output_config": {"effort": "medium"}})");
}

TEST(RequestParserTest, ClaudeCodeFirstRequestIsAccepted) {
  auto r = parse_messages_request(claude_code_request(), {});
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["role"], "user");
  EXPECT_EQ(r.messages[1]["content"], "<system-reminder>r</system-reminder>\nsay hi");
  EXPECT_EQ(r.messages[2]["role"], "system");
  EXPECT_EQ(r.messages[2]["content"], "# Environment");
  EXPECT_EQ(r.template_kwargs["enable_thinking"], true);
  EXPECT_TRUE(r.omit_reasoning_text);
  // The deferred tool and Anthropic's server-side web search stay out of the prompt's tools.
  ASSERT_EQ(r.tools.size(), 1u);
  EXPECT_EQ(r.tools[0]["function"]["name"], "Bash");
}

TEST(RequestParserTest, ThinkingTypesAndDisplay) {
  auto body = claude_code_request();
  body["thinking"] = {{"type", "enabled"}, {"budget_tokens", 2000}};
  auto r = parse_messages_request(body, {});
  EXPECT_EQ(r.template_kwargs["enable_thinking"], true);
  EXPECT_FALSE(r.omit_reasoning_text);
  body["thinking"] = {{"type", "disabled"}};
  EXPECT_EQ(parse_messages_request(body, {}).template_kwargs["enable_thinking"], false);
  body["thinking"] = {{"type", "adaptive"}, {"display", "summarized"}};
  EXPECT_FALSE(parse_messages_request(body, {}).omit_reasoning_text);
  body["thinking"] = {{"type", "sometimes"}};
  EXPECT_EQ(error_of([&] { parse_messages_request(body, {}); }).param(), "thinking.type");
  body["thinking"] = {{"type", "adaptive"}, {"display", "updates"}};  // Claude Code sends it too
  EXPECT_FALSE(parse_messages_request(body, {}).omit_reasoning_text);
  body["thinking"] = {{"type", "adaptive"}, {"display", 3}};
  EXPECT_EQ(error_of([&] { parse_messages_request(body, {}); }).param(), "thinking.display");
}

TEST(RequestParserTest, HiddenReasoningComesBackThroughTheSignature) {
  auto body = claude_code_request();
  body["messages"].push_back(ojson::parse(R"({"role": "assistant", "content": [
      {"type": "thinking", "thinking": ""},
      {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]})"));
  body["messages"].back()["content"][0]["signature"] = reasoning_signature("I should list.");
  body["messages"].push_back(ojson::parse(R"({"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]})"));
  auto r = parse_messages_request(body, {});
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[3]["reasoning_content"], "I should list.");
  // Shown reasoning wins over the signature; a foreign signature carries nothing.
  body["messages"][2]["content"][0]["thinking"] = "shown";
  EXPECT_EQ(parse_messages_request(body, {}).messages[3]["reasoning_content"], "shown");
  body["messages"][2]["content"][0]["thinking"] = "";
  body["messages"][2]["content"][0]["signature"] = "EqQBCkgIARABGAIiQL";
  EXPECT_FALSE(parse_messages_request(body, {}).messages[3].contains("reasoning_content"));
}

TEST(RequestParserTest, ToolReferenceLoadsADeferredToolWhereItIs) {
  auto body = claude_code_request();
  body["messages"].push_back(ojson::parse(R"({"role": "assistant", "content": [
      {"type": "tool_use", "id": "t1", "name": "ToolSearch", "input": {"query": "grep"}}]})"));
  body["messages"].push_back(ojson::parse(R"({"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "t1",
       "content": [{"type": "tool_reference", "tool_name": "Grep"}]}]})"));
  auto r = parse_messages_request(body, {});
  const std::string text = r.messages.back()["content"];
  EXPECT_EQ(text.rfind("Tool loaded: ", 0), 0u) << text;
  EXPECT_NE(text.find("\"name\":\"Grep\""), std::string::npos) << text;
  EXPECT_NE(text.find("search"), std::string::npos) << text;
  body["messages"].back()["content"][0]["content"][0]["tool_name"] = "Nope";
  EXPECT_EQ(error_of([&] { parse_messages_request(body, {}); }).status(), 400);
}

TEST(RequestParserTest, ImagesWithoutVisionAndDocumentsAreRefusedByName) {
  auto body = claude_code_request();
  body["messages"][0]["content"].push_back(
      {{"type", "image"},
       {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", "AA=="}}}});
  ApiError e = error_of([&] { parse_messages_request(body, {}); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "messages[0].content[2]");
  EXPECT_NE(std::string(e.what()).find("is an image, and this model reads no images"),
            std::string::npos)
      << e.what();
  body = claude_code_request();
  body["messages"].push_back(ojson::parse(R"({"role": "assistant", "content": [
      {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]})"));
  body["messages"].push_back(ojson::parse(R"({"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "t1",
       "content": [{"type": "document", "source": {"type": "text", "data": "x"}}]}]})"));
  e = error_of([&] { parse_messages_request(body, {}); });
  EXPECT_EQ(e.param(), "messages[3].content[0].content[0]");
  EXPECT_NE(std::string(e.what()).find("a document block"), std::string::npos) << e.what();
}

TEST(RequestParserTest, RequestedModelIsReadLeniently) {
  EXPECT_EQ(requested_model(ojson::parse(R"({"model": "gpt-5"})")), "gpt-5");
  EXPECT_EQ(requested_model(ojson::parse(R"({"model": 3})")), "");
  EXPECT_EQ(requested_model(ojson::parse(R"({})")), "");
}

}  // namespace
}  // namespace qmlx::server
