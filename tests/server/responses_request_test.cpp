// The Responses request parser: every input item type, tools (function, namespace, custom,
// built-in), tool_choice, the fields Codex sends, previous_response_id, and errors by name.
#include <gtest/gtest.h>

#include "server/common/reasoning_signature.h"
#include "server/prompt/system_message_placement.h"
#include "server/responses/responses_request.h"
#include "tests/server/api_error_of.h"

namespace qmlx::server {
namespace {

using ojson = nlohmann::ordered_json;
using testing::error_of;

GenerationRequest parse(const std::string& body, const ResponseStore& store = ResponseStore()) {
  return parse_responses_request(ojson::parse(body), SamplingDefaults(), store);
}

TEST(ResponsesRequestTest, StringInputIsOneUserMessage) {
  auto r = parse(R"({"model": "m", "input": "hello", "instructions": "be brief"})");
  EXPECT_EQ(r.route, Route::kResponses);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.messages, ojson::parse(R"([{"role": "system", "content": "be brief"},
                                         {"role": "user", "content": "hello"}])"));
  ASSERT_TRUE(r.responses);
  EXPECT_EQ(r.responses->conversation.size(), 1u);
  EXPECT_TRUE(r.responses->store);
}

// Codex opens with two developer messages: they and `instructions` are system messages in
// place, and place_system_messages (which every chat route applies) merges the leading ones into
// the one system message the Qwen templates accept and turns a later one into a user turn for a
// template that refuses a system message there.
TEST(ResponsesRequestTest, LeadingDeveloperMessagesMergeLaterOnesBecomeUserTurns) {
  auto r = parse(R"({"instructions": "base", "input": [
      {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "d1"}]},
      {"type": "message", "role": "system", "content": "d2"},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "u1"},
                                                       {"type": "input_text", "text": "u2"}]},
      {"role": "developer", "content": "late"}]})");
  EXPECT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[4], ojson({{"role", "system"}, {"content", "late"}}));
  place_system_messages(r.messages, /*template_takes_later_system=*/false);
  EXPECT_EQ(r.messages, ojson::parse(R"([{"role": "system", "content": "base\n\nd1\n\nd2"},
                                         {"role": "user", "content": "u1\nu2"},
                                         {"role": "user", "content": "late"}])"));
}

// A reply comes back as reasoning + message + calls: one assistant message, as the server
// renders a reply into history; the outputs become tool messages.
TEST(ResponsesRequestTest, ReplyItemsBecomeOneAssistantMessageAndToolMessages) {
  ojson body = ojson::parse(R"({"input": [
      {"type": "message", "role": "user", "content": "go"},
      {"type": "reasoning", "summary": [], "encrypted_content": ""},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
      {"type": "function_call", "call_id": "c1", "name": "close_agent",
       "namespace": "multi_agent_v1", "arguments": "{\"target\":\"a\",\"n\":1}"},
      {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin"},
      {"type": "function_call_output", "call_id": "c1",
       "output": [{"type": "input_text", "text": "closed"}]},
      {"type": "custom_tool_call_output", "call_id": "c2", "output": "patched"}]})");
  body["input"][1]["encrypted_content"] = reasoning_signature("think\nhard");
  auto r = parse_responses_request(body, SamplingDefaults(), ResponseStore());
  EXPECT_EQ(r.messages, ojson::parse(R"([
      {"role": "user", "content": "go"},
      {"role": "assistant", "content": "ok", "reasoning_content": "think\nhard",
       "tool_calls": [
         {"id": "c1", "type": "function",
          "function": {"name": "multi_agent_v1.close_agent", "arguments": {"target": "a", "n": 1}}},
         {"id": "c2", "type": "function",
          "function": {"name": "apply_patch", "arguments": {"input": "*** Begin"}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "closed"},
      {"role": "tool", "tool_call_id": "c2", "content": "patched"}])"));
}

// Reasoning without qmlx's envelope (another server's, or none) falls back to its text.
TEST(ResponsesRequestTest, ReasoningFallsBackToContentThenSummary) {
  auto content = parse(R"({"input": [{"role": "user", "content": "q"},
      {"type": "reasoning", "encrypted_content": "gAAAA-not-ours", "summary": [],
       "content": [{"type": "reasoning_text", "text": "raw"}]},
      {"type": "message", "role": "assistant", "content": "a"}]})");
  EXPECT_EQ(content.messages[1]["reasoning_content"], "raw");
  auto summary = parse(R"({"input": [{"role": "user", "content": "q"},
      {"type": "reasoning", "summary": [{"type": "summary_text", "text": "s1"},
                                        {"type": "summary_text", "text": "s2"}]},
      {"type": "message", "role": "assistant", "content": "a"}]})");
  EXPECT_EQ(summary.messages[1]["reasoning_content"], "s1\n\ns2");
}

TEST(ResponsesRequestTest, ToolsFunctionNamespaceCustomAndBuiltIn) {
  auto r = parse(R"({"input": "x", "tools": [
      {"type": "function", "name": "exec_command", "description": "run", "strict": false,
       "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
      {"type": "namespace", "name": "multi_agent_v1", "description": "agents",
       "tools": [{"type": "function", "name": "close_agent", "parameters": {"type": "object"}}]},
      {"type": "custom", "name": "apply_patch", "description": "edit files",
       "format": {"type": "grammar", "syntax": "lark", "definition": "start: patch"}},
      {"type": "web_search", "external_web_access": false}]})");
  ASSERT_EQ(r.tools.size(), 3u);
  EXPECT_EQ(r.tools[0], ojson::parse(R"({"type": "function", "function": {"name": "exec_command",
      "description": "run",
      "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}})"));
  EXPECT_EQ(r.tools[1]["function"]["name"], "multi_agent_v1.close_agent");
  const ojson& patch = r.tools[2]["function"];
  EXPECT_EQ(patch["name"], "apply_patch");
  EXPECT_EQ(patch["parameters"]["required"], ojson::array({"input"}));
  std::string about = patch["parameters"]["properties"]["input"]["description"];
  EXPECT_NE(about.find("lark grammar:\nstart: patch"), std::string::npos) << about;

  const ResponsesRequest& info = *r.responses;
  EXPECT_EQ(info.tool("multi_agent_v1.close_agent").name_space, "multi_agent_v1");
  EXPECT_EQ(info.tool("multi_agent_v1.close_agent").name, "close_agent");
  EXPECT_EQ(info.tool("apply_patch").kind, ResponsesTool::Kind::kCustom);
  EXPECT_EQ(info.tool("exec_command").kind, ResponsesTool::Kind::kFunction);
  EXPECT_EQ(info.tool("undeclared").name, "undeclared");

  auto twice = error_of([] {
    parse(R"({"input": "x", "tools": [{"type": "function", "name": "f"},
                                       {"type": "custom", "name": "f"}]})");
  });
  EXPECT_EQ(twice.param(), "tools[1].name");
}

TEST(ResponsesRequestTest, ToolChoiceForms) {
  const char* tools = R"("tools": [{"type": "function", "name": "f"},
      {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "g"}]}])";
  auto parse_choice = [&](const std::string& choice) {
    return parse(std::string(R"({"input": "x", )") + tools + R"(, "tool_choice": )" + choice + "}");
  };
  EXPECT_EQ(parse_choice(R"("auto")").tool_choice, ToolChoiceMode::kAuto);
  EXPECT_EQ(parse_choice(R"("none")").tool_choice, ToolChoiceMode::kNone);
  EXPECT_EQ(parse_choice(R"("required")").tool_choice, ToolChoiceMode::kRequired);
  auto named = parse_choice(R"({"type": "function", "name": "g", "namespace": "ns"})");
  EXPECT_EQ(named.tool_choice, ToolChoiceMode::kNamed);
  EXPECT_EQ(named.tool_choice_name, "ns.g");
  EXPECT_EQ(
      parse_choice(R"({"type": "allowed_tools", "mode": "required", "tools": []})").tool_choice,
      ToolChoiceMode::kRequired);
  EXPECT_EQ(error_of([&] { parse_choice(R"("sometimes")"); }).param(), "tool_choice");
}

// The top-level fields of Codex 0.171's first request: all accepted, the meaningful mapped.
TEST(ResponsesRequestTest, EveryFieldCodexSendsIsAccepted) {
  auto r = parse(R"({"model": "qwen-local", "instructions": "", "input": "hi",
      "tools": [], "tool_choice": "auto", "parallel_tool_calls": true,
      "reasoning": {"summary": "auto", "effort": "none"}, "store": false, "stream": true,
      "include": ["reasoning.encrypted_content"], "prompt_cache_key": "01a2",
      "text": {"verbosity": "low"}, "service_tier": "default", "truncation": "auto",
      "client_metadata": {"x-codex-window-id": "w"}, "max_output_tokens": 99,
      "temperature": 0.5, "top_p": 0.9, "metadata": {"k": "v"}, "user": "u"})");
  EXPECT_TRUE(r.stream);
  EXPECT_FALSE(r.responses->store);
  EXPECT_EQ(r.max_tokens, 99);
  EXPECT_EQ(r.sampling.temperature, 0.5);
  EXPECT_EQ(r.sampling.top_p, 0.9);
  EXPECT_EQ(r.template_kwargs["enable_thinking"], false);
  EXPECT_EQ(r.responses->echo["prompt_cache_key"], "01a2");
  EXPECT_EQ(r.responses->echo["reasoning"]["summary"], "auto");
  EXPECT_EQ(r.messages, ojson::parse(R"([{"role": "user", "content": "hi"}])"));
  auto effort = parse(R"({"input": "x", "reasoning": {"effort": "high"}})");
  EXPECT_FALSE(effort.template_kwargs.contains("enable_thinking"));
}

TEST(ResponsesRequestTest, PreviousResponseIdContinuesTheStoredConversation) {
  ResponseStore store;
  store.put("resp_1", ojson::parse(R"([{"role": "user", "content": "first"}])"),
            nlohmann::json::parse(R"([{"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "answer"}]}])"));
  auto r = parse(R"({"previous_response_id": "resp_1", "input": "second",
                     "instructions": "sys"})",
                 store);
  EXPECT_EQ(r.messages, ojson::parse(R"([{"role": "system", "content": "sys"},
      {"role": "user", "content": "first"}, {"role": "assistant", "content": "answer"},
      {"role": "user", "content": "second"}])"));
  EXPECT_EQ(r.responses->conversation.size(), 3u);
  EXPECT_EQ(r.responses->previous_response_id, "resp_1");

  auto unknown = error_of([&] { parse(R"({"previous_response_id": "resp_9", "input": "x"})"); });
  EXPECT_EQ(unknown.status(), 404);
  EXPECT_EQ(unknown.param(), "previous_response_id");
  EXPECT_NE(std::string(unknown.what()).find("resp_9"), std::string::npos);
}

TEST(ResponsesRequestTest, BadInputIsNamed) {
  EXPECT_EQ(error_of([] { parse(R"({"model": "m"})"); }).param(), "input");
  EXPECT_EQ(error_of([] { parse(R"({"input": 5})"); }).param(), "input");
  auto image = error_of([] {
    parse(R"({"input": [{"role": "user", "content": [{"type": "input_text", "text": "see"},
        {"type": "input_image", "image_url": "data:image/png;base64,AA"}]}]})");
  });
  EXPECT_EQ(image.status(), 400);
  EXPECT_EQ(image.param(), "input[0].content[1]");  // a model without vision (the default)
  EXPECT_NE(std::string(image.what()).find("reads no images"), std::string::npos);
  auto type = error_of([] { parse(R"({"input": [{"type": "item_reference", "id": "x"}]})"); });
  EXPECT_EQ(type.param(), "input[0].type");
  auto role = error_of([] { parse(R"({"input": [{"role": "wizard", "content": "x"}]})"); });
  EXPECT_EQ(role.param(), "input[0].role");
  auto call = error_of([] { parse(R"({"input": [{"type": "function_call", "name": "f"}]})"); });
  EXPECT_EQ(call.param(), "input[0].call_id");
}

}  // namespace
}  // namespace qmlx::server
