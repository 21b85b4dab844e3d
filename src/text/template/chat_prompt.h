// ChatPrompt: a conversation rendered and tokenized for the engine, with the token offsets of
// the message boundaries where the cache writes checkpoints.
//
// A checkpoint at offset n is only reusable if another request's prompt has the same first n
// tokens. So each boundary is computed as the longest common token prefix between the full
// prompt and the rendering of the corresponding shorter conversation:
//   last_message_end: the conversation without the generation prompt;
//   last_user_start:  the messages before the last user message.
// Templates that render earlier messages differently once later ones exist (Qwen drops old
// reasoning) and BPE merges across the boundary both just shorten the common prefix, so the
// offsets are always positions where the full prompt agrees with the shorter rendering.
// If a shorter conversation cannot be rendered (a template that rejects it, such as Qwen3.5
// without any user query), last_user_start is the common prefix with the conversation whose
// last user message has different content instead. edit_points are found in the rendered text
// and checked against the tokenizer, with no extra rendering.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/template/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx {

struct ChatPrompt {
  std::string text;
  std::vector<int32_t> ids;
  size_t last_message_end = 0;  // token offset where the last message ends
  size_t last_user_start = 0;   // token offset where the last user message starts
  // Token offsets before last_message_end where an injected reminder block starts (the deepest
  // 16; text/template/edit_points.h): where agents edit their history next turn.
  std::vector<size_t> edit_points;
};

ChatPrompt render_chat_prompt(
    const ChatTemplate& chat_template, const Tokenizer& tokenizer,
    const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
    bool add_generation_prompt,
    const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

}  // namespace qmlx
