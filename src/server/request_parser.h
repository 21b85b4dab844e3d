// Request parsing: turns a route's JSON body into a GenerationRequest, or throws ApiError(400)
// naming the field that is missing or has the wrong type. Anthropic messages (system blocks,
// tool_use / tool_result / thinking blocks) are converted to the OpenAI message shape that
// Hugging Face chat templates expect.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/generation_request.h"
#include "server/options.h"

namespace qmlx::server {

// Parses the raw body; malformed JSON or a non-object body is a 400.
nlohmann::ordered_json parse_body(const std::string& body);

GenerationRequest parse_chat_request(const nlohmann::ordered_json& body,
                                     const SamplingDefaults& defaults);
GenerationRequest parse_completion_request(const nlohmann::ordered_json& body,
                                           const SamplingDefaults& defaults);
GenerationRequest parse_messages_request(const nlohmann::ordered_json& body,
                                         const SamplingDefaults& defaults);

// The body's `model` when it is a string, else empty (the parsers report a wrong type). Routes
// check it before parsing the rest, so a request for another model is told that first.
std::string requested_model(const nlohmann::ordered_json& body);

// The Anthropic body's conversation (model, messages, tools, tool_choice, thinking) in the
// server's terms; parse_messages_request adds sampling, and count_tokens uses it alone.
void parse_anthropic_conversation(const nlohmann::ordered_json& body, GenerationRequest& r);
nlohmann::ordered_json anthropic_to_openai_messages(const nlohmann::ordered_json& body);
nlohmann::ordered_json anthropic_to_openai_tools(const nlohmann::ordered_json& tools);

}  // namespace qmlx::server
