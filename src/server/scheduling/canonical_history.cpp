#include "server/scheduling/canonical_history.h"

#include <algorithm>
#include <string>

#include "base/error.h"
#include "base/json_depth.h"
#include "server/scheduling/prompt_images.h"

namespace qmlx::server {
namespace {

using ordered_json = nlohmann::ordered_json;

enum class NextRole { kUser, kTool };

// The message that will follow the reply, with a placeholder body.
ordered_json next_message(const ParsedOutput& reply, NextRole role, const std::string& body) {
  if (role == NextRole::kUser) return {{"role", "user"}, {"content", body}};
  const std::string id = reply.tool_calls.empty() ? "call_0" : reply.tool_calls.front().id;
  return {{"role", "tool"}, {"tool_call_id", id}, {"content", body}};
}

std::string render_text(const ModelRuntime& runtime, const ordered_json& messages,
                        const ordered_json& tools, const ordered_json& kwargs) {
  if (runtime.render_text) return runtime.render_text(messages, tools, false, kwargs);
  return runtime.render_chat(messages, tools, false, kwargs).text;
}

}  // namespace

ordered_json assistant_message(const ParsedOutput& reply) {
  ordered_json message = {{"role", "assistant"}, {"content", reply.content}};
  if (!reply.reasoning.empty()) message["reasoning_content"] = reply.reasoning;
  if (!reply.tool_calls.empty()) {
    ordered_json calls = ordered_json::array();
    for (const ToolCall& call : reply.tool_calls) {
      // Requests carry arguments as objects after parsing (chat/chat_request.cpp), so the
      // template sees them the same way when the agent sends the call back.
      ordered_json arguments = parse_json_bounded<ordered_json>(call.arguments_json);
      if (arguments.is_discarded() || !arguments.is_object()) arguments = call.arguments_json;
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", arguments}}}});
    }
    message["tool_calls"] = std::move(calls);
  }
  return message;
}

namespace {

std::vector<int32_t> render_before(const ModelRuntime& runtime, const ordered_json& messages,
                                   const ordered_json& tools, const ordered_json& kwargs,
                                   const ParsedOutput& reply, NextRole role, int32_t marker) {
  // Two renderings that differ only in the next message's body: their common text is the
  // history as the next turn shows it, whatever the template does to the reply.
  std::string texts[2];
  const char* bodies[2] = {"\x01", "\x02"};
  for (int i = 0; i < 2; ++i) {
    ordered_json conversation = messages;
    conversation.push_back(assistant_message(reply));
    conversation.push_back(next_message(reply, role, bodies[i]));
    try {
      texts[i] = render_text(runtime, conversation, tools, kwargs);
    } catch (const std::exception&) {
      return {};  // the template rejects this shape of conversation: nothing to pre-fill
    }
  }
  auto split = std::mismatch(texts[0].begin(), texts[0].end(), texts[1].begin(), texts[1].end());
  std::string common(texts[0].begin(), split.first);
  // Cut before the next message's opening marker: a special token, so the text before it
  // tokenizes the same whatever follows.
  size_t cut = common.rfind(runtime.tokenizer->token_text(marker));
  if (cut == std::string::npos || cut == 0) return {};
  return runtime.tokenizer->encode(std::string_view(common).substr(0, cut));
}

}  // namespace

std::vector<std::vector<int32_t>> render_canonical_histories(
    const ModelRuntime& runtime, const ordered_json& messages, const ordered_json& tools,
    const ordered_json& kwargs, const ParsedOutput& reply,
    std::span<const std::shared_ptr<const image::VisionInput>> images,
    std::vector<PromptImage>* placed) {
  if (reply.content.empty() && reply.reasoning.empty() && reply.tool_calls.empty()) return {};
  if (!runtime.tokenizer) return {};
  auto marker = runtime.tokenizer->token_id("<|im_start|>");
  if (!marker) return {};
  // A tool result follows tool calls and a user message follows anything else, but clients
  // break that rule (a user who rejects a tool call, an agent that feeds back a command's
  // output after a plain reply), and Qwen's templates render the reply differently for each:
  // a user message makes the reply's reasoning old and strips it.
  const NextRole likely = reply.tool_calls.empty() ? NextRole::kUser : NextRole::kTool;
  const NextRole other = likely == NextRole::kUser ? NextRole::kTool : NextRole::kUser;
  std::vector<std::vector<int32_t>> histories;
  for (NextRole role : {likely, other}) {
    auto ids = render_before(runtime, messages, tools, kwargs, reply, role, *marker);
    if (!images.empty() && !ids.empty()) {
      RenderedPrompt history;
      history.ids = std::move(ids);
      try {
        place_prompt_images(history, images, runtime.image_pad_id);
      } catch (const Error&) {
        continue;  // the rendering holds another number of pads: nothing safe to pre-fill
      }
      if (placed) *placed = std::move(history.images);
      ids = std::move(history.ids);
    }
    if (!ids.empty() && std::find(histories.begin(), histories.end(), ids) == histories.end())
      histories.push_back(std::move(ids));
  }
  return histories;
}

}  // namespace qmlx::server
