// The Responses route keeps a Codex conversation warm: turn 1's output items, sent back in
// turn 2's input as Codex does (reasoning with its encrypted_content, message, function and
// custom tool calls, then their outputs), render under the real Qwen3.5 template to a prompt
// that starts with exactly the tokens the cache pre-fills as turn 1's history.
#include <gtest/gtest.h>

#include <algorithm>

#include "modelgen/chat_template.h"
#include "server/prompt/system_message_placement.h"
#include "server/responses/responses_format.h"
#include "server/responses/responses_request.h"
#include "server/scheduling/canonical_history.h"
#include "tests/server/fake_runtime.h"
#include "text/template/chat_prompt.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

std::shared_ptr<ModelRuntime> qwen35_runtime() {
  auto runtime = testing::make_fake_runtime({});
  auto chat = std::make_shared<const ChatTemplate>(
      modelgen::chat_template_for(modelgen::Arch::kQwen35), "qwen3_5");
  auto tokenizer = runtime->tokenizer;
  runtime->render_chat = [chat, tokenizer](const ojson& messages, const ojson& tools, bool add_gp,
                                           const ojson& kwargs) {
    ChatPrompt p = render_chat_prompt(*chat, *tokenizer, messages,
                                      tools.empty() ? ojson(nullptr) : tools, add_gp, kwargs);
    return RenderedPrompt{p.text,
                          p.ids,
                          static_cast<int64_t>(p.last_message_end),
                          static_cast<int64_t>(p.last_user_start),
                          std::vector<int64_t>(p.edit_points.begin(), p.edit_points.end()),
                          {}};
  };
  return runtime;
}

const char kTurn1[] = R"({"model": "qwen-local", "stream": true, "store": false,
    "include": ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"},
    "input": [
      {"type": "message", "role": "developer",
       "content": [{"type": "input_text", "text": "You are a coding agent."}]},
      {"type": "message", "role": "user",
       "content": [{"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}],
    "tools": [
      {"type": "function", "name": "exec_command", "description": "Runs a command.",
       "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
                      "required": ["cmd"]}},
      {"type": "namespace", "name": "multi_agent_v1", "description": "Sub-agents.",
       "tools": [{"type": "function", "name": "close_agent",
                  "parameters": {"type": "object", "properties": {"target": {"type": "string"}}}}]},
      {"type": "custom", "name": "apply_patch", "description": "Edit files.",
       "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch"}}]})";

ParsedOutput turn1_reply() {
  ParsedOutput reply;
  reply.reasoning = "The bug is in main.c.\nLet me look first.";
  reply.content = "Looking.";
  reply.tool_calls = {{"call_1", "exec_command", R"({"cmd":"cat main.c"})"},
                      {"call_2", "apply_patch", R"({"input":"*** Begin Patch\n*** End Patch\n"})"},
                      {"call_3", "multi_agent_v1.close_agent", R"({"target":"a1"})"}};
  return reply;
}

// Turn 2's body as Codex builds it: turn 1's input, the output items, the tools' outputs.
ojson turn2_body(const json& output_items) {
  ojson body = ojson::parse(kTurn1);
  for (const auto& item : output_items) body["input"].push_back(ojson::parse(item.dump()));
  body["input"].push_back(ojson::parse(
      R"({"type": "function_call_output", "call_id": "call_1", "output": "int main() {}"})"));
  body["input"].push_back(ojson::parse(
      R"({"type": "custom_tool_call_output", "call_id": "call_2", "output": "Done!"})"));
  body["input"].push_back(
      ojson::parse(R"({"type": "function_call_output", "call_id": "call_3", "output": "closed"})"));
  return body;
}

bool starts_with(const std::vector<int32_t>& ids, const std::vector<int32_t>& prefix) {
  return prefix.size() <= ids.size() && std::equal(prefix.begin(), prefix.end(), ids.begin());
}

TEST(ResponsesRoundTripTest, NextTurnStartsWithTheCachedHistory) {
  auto runtime = qwen35_runtime();
  GenerationRequest turn1 =
      parse_responses_request(ojson::parse(kTurn1), SamplingDefaults(), ResponseStore());
  place_system_messages(turn1.messages, false);  // as every chat route does before rendering
  RenderedPrompt prompt1 = runtime->render_chat(turn1.messages, turn1.tools, true, {});
  ParsedOutput reply = turn1_reply();
  GenerationEvent done;
  done.finish = FinishReason::kToolCalls;
  json response =
      responses_object({"resp_qmlx1", "m", 0}, turn1.responses, *runtime->tokenizer, reply, done);
  ASSERT_EQ(response["output"].size(), 5u);
  EXPECT_EQ(response["output"][3]["type"], "custom_tool_call");
  EXPECT_EQ(response["output"][4]["namespace"], "multi_agent_v1");

  auto histories = render_canonical_histories(*runtime, turn1.messages, turn1.tools,
                                              turn1.template_kwargs, reply);
  ASSERT_FALSE(histories.empty());
  const std::vector<int32_t>& history = histories.front();  // a tool result follows the calls
  // The history extends turn 1's prompt up to its generation prompt.
  ASSERT_GT(history.size(), prompt1.ids.size());

  GenerationRequest turn2 =
      parse_responses_request(turn2_body(response["output"]), SamplingDefaults(), ResponseStore());
  place_system_messages(turn2.messages, false);
  RenderedPrompt prompt2 = runtime->render_chat(turn2.messages, turn2.tools, true, {});
  EXPECT_TRUE(starts_with(prompt2.ids, history)) << "turn 2:\n"
                                                 << prompt2.text << "\nhistory:\n"
                                                 << runtime->tokenizer->decode(history);

  // The check can fail: a client that drops the reasoning changes the history's tokens.
  ojson stripped = turn2_body(response["output"]);
  stripped["input"].erase(3);  // the reasoning item
  GenerationRequest without =
      parse_responses_request(stripped, SamplingDefaults(), ResponseStore());
  place_system_messages(without.messages, false);
  RenderedPrompt prompt3 = runtime->render_chat(without.messages, without.tools, true, {});
  EXPECT_FALSE(starts_with(prompt3.ids, history));
}

}  // namespace
}  // namespace qmlx::server
