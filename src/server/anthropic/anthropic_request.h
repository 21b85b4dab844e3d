// The Anthropic Messages request body, parsed into a GenerationRequest (or ApiError(400)
// naming the field): system blocks, tool_use / tool_result / thinking blocks and tools are
// converted to the OpenAI message shape that Hugging Face chat templates expect; image blocks
// (in user turns and tool results) are read with `images` (image_parts.h).
#pragma once

#include <nlohmann/json.hpp>

#include "server/common/generation_request.h"
#include "server/common/image_parts.h"
#include "server/common/image_reading.h"
#include "server/config/options.h"

namespace qmlx::server {

GenerationRequest parse_messages_request(const nlohmann::ordered_json& body,
                                         const SamplingDefaults& defaults,
                                         const ImageReading& images = ImageReading());

// The Anthropic body's conversation (model, messages, tools, tool_choice, thinking) in the
// server's terms; parse_messages_request adds sampling, and count_tokens uses it alone.
void parse_anthropic_conversation(const nlohmann::ordered_json& body, GenerationRequest& r,
                                  const ImageReading& images = ImageReading());
nlohmann::ordered_json anthropic_to_openai_messages(const nlohmann::ordered_json& body,
                                                    RequestImages& images);
nlohmann::ordered_json anthropic_to_openai_tools(const nlohmann::ordered_json& tools);

}  // namespace qmlx::server
