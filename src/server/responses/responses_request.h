// The OpenAI Responses API request (POST /v1/responses, as Codex sends it) converted into a
// GenerationRequest, so the chat pipeline (template, context limit, scheduler, cache, output
// parser) serves it unchanged:
//   - `instructions` and the developer/system messages at the start of `input` become the one
//     system message Qwen templates accept; a developer/system message later in the input
//     becomes a user message (the templates refuse a system message anywhere but first, and a
//     user message keeps everything before it a stable prefix);
//   - reasoning + assistant message + function_call / custom_tool_call items in a row become one
//     assistant message with reasoning_content and tool_calls (exactly the message the server
//     renders as this reply's history, so the next turn stays a prefix of the cache);
//   - function_call_output / custom_tool_call_output become tool messages;
//   - input_image parts (data URLs) in user messages and tool outputs are read as images
//     (image_parts.h), as Codex's view_image sends a screenshot;
//   - function tools pass through; a `namespace` group's tools are shown to the model as
//     "<namespace>.<name>"; a `custom` (freeform) tool becomes a function with one string
//     parameter `input` whose description carries the tool's grammar; built-in tools (web_search,
//     ...) are dropped with a log line, a local model cannot run them.
// ResponsesRequest keeps what the reply needs to be mapped back into Responses items.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "server/common/generation_request.h"
#include "server/common/image_reading.h"
#include "server/config/options.h"
#include "server/responses/response_store.h"

namespace qmlx::server {

// A tool as the client declared it, found by the name the model calls it by.
struct ResponsesTool {
  enum class Kind { kFunction, kCustom };
  Kind kind = Kind::kFunction;
  std::string name_space;  // the enclosing `namespace` tool's name, empty at top level
  std::string name;        // the name within the namespace
};

struct ResponsesRequest {
  // The conversation as Responses items: the previous_response_id chain, then this input.
  nlohmann::ordered_json conversation = nlohmann::ordered_json::array();
  // Model-visible function name -> the declared tool.
  std::map<std::string, ResponsesTool> tools;
  bool store = true;
  std::string previous_response_id;
  // Request fields that the response object repeats (instructions, tools, tool_choice, ...).
  nlohmann::ordered_json echo = nlohmann::ordered_json::object();

  // The declared tool behind a model-visible name; a plain function when not declared.
  ResponsesTool tool(const std::string& model_name) const;
};

// The name the model sees for tool `name` inside namespace `name_space` ("" at top level).
std::string model_tool_name(const std::string& name_space, const std::string& name);

// Parses and converts; an unknown previous_response_id is a 404, any malformed field a 400
// naming it. Fields that do not change the reply (store, include, prompt_cache_key,
// client_metadata, metadata, parallel_tool_calls, text, truncation, ...) are accepted.
GenerationRequest parse_responses_request(const nlohmann::ordered_json& body,
                                          const SamplingDefaults& defaults,
                                          const ResponseStore& store,
                                          const ImageReading& images = ImageReading());

}  // namespace qmlx::server
