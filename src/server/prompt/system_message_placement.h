// Where system messages go. Chat templates take one system message, first. Clients send more:
// Anthropic's top-level `system` plus `system` messages inside `messages` (Claude Code puts its
// environment block after the first user message), Codex's developer items, OpenAI clients'
// system messages in mid-conversation. The rule, applied to every chat route before rendering:
//  1. System messages before the first other message are the system prompt: they merge into
//     one, their texts joined by a blank line.
//  2. A system message after that stays where it is, so everything before it renders exactly
//     as in the previous turn (a stable prefix for the cache). Where the model's template
//     renders a system turn there (Qwen3 and Qwen3-Next do), it is passed on as it is; where the
//     template refuses one (Qwen3.5 raises "System message must be at the beginning"), it
//     becomes a user message with the same text.
#pragma once

#include <nlohmann/json.hpp>

#include "server/scheduling/model_runtime.h"

namespace qmlx::server {

// `messages` are OpenAI-shaped ({"role", "content"} with string content for system messages).
void place_system_messages(nlohmann::ordered_json& messages, bool template_takes_later_system);

// Whether the runtime's chat template renders a system message that follows a user message
// (probed by rendering a two-message conversation; a template error means it does not).
bool template_takes_later_system(const ModelRuntime& runtime);

}  // namespace qmlx::server
