// Server-sent events framing for streamed responses: OpenAI streams `data:` lines ending in
// `data: [DONE]`; Anthropic streams named events. Comments (`: ...`) keep idle connections
// alive while a long prefill runs.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace qmlx::server {

std::string sse_data(const nlohmann::json& payload);
std::string sse_event(const std::string& event, const nlohmann::json& payload);
std::string sse_comment(const std::string& text);
std::string sse_done();

// Compact JSON as sent on the wire; invalid UTF-8 is replaced, never thrown on.
std::string dump_json(const nlohmann::json& value);

}  // namespace qmlx::server
