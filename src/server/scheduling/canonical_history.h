// Canonical history: how the next turn of a conversation will render the reply just given.
// Templates rewrite old assistant turns (Qwen drops the reasoning of turns before the last
// user message, tool calls are re-serialised), so the tokens of a reply as generated are not
// the tokens the next prompt contains. The cache pre-fills this rendering in idle time and
// snapshots it, so the next turn prefills only its new message.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/scheduling/model_runtime.h"
#include "text/output/output_delta.h"

namespace qmlx::server {

// The reply as an OpenAI assistant message, as an agent appends it to its history.
nlohmann::ordered_json assistant_message(const ParsedOutput& reply);

// Token ids of `messages` + the reply, rendered as history, up to the start of the message that
// will follow it, once for each role that message may have (the likelier first: a tool result
// after tool calls, else a user message; equal renderings once). Empty when the template gives
// no stable point or the reply is empty. With `images` (the request's, in order), each image's
// pad is widened to its keyed pads as in the prompt (prompt_images.h) and `placed`, when set,
// receives where they stand; a history whose pads do not match the images is dropped.
std::vector<std::vector<int32_t>> render_canonical_histories(
    const ModelRuntime& runtime, const nlohmann::ordered_json& messages,
    const nlohmann::ordered_json& tools, const nlohmann::ordered_json& kwargs,
    const ParsedOutput& reply,
    std::span<const std::shared_ptr<const image::VisionInput>> images = {},
    std::vector<PromptImage>* placed = nullptr);

}  // namespace qmlx::server
