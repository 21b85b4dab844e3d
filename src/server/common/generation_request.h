// GenerationRequest: one API request in the server's own terms, whatever route it came from.
// The generation routes (OpenAI chat, completions and responses, Anthropic messages) parse and
// validate into this; everything downstream (template, scheduler, decode loop) sees only it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "image/vision_preprocess.h"
#include "server/common/api_error.h"
#include "server/common/reply_format.h"

namespace qmlx::server {

enum class Route { kChatCompletions, kCompletions, kMessages, kResponses };

struct ResponsesRequest;  // server/responses_request.h

struct SamplingParams {
  double temperature = 1.0;
  double top_p = 1.0;
  int top_k = 0;
  double min_p = 0.0;
  double repetition_penalty = 1.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  std::optional<uint64_t> seed;
};

enum class ToolChoiceMode { kAuto, kNone, kRequired, kNamed };

struct GenerationRequest {
  Route route = Route::kChatCompletions;
  std::string model;
  bool stream = false;
  bool include_usage = false;    // OpenAI stream_options.include_usage
  bool return_progress = false;  // llama.cpp-style prompt_progress chunks
  std::optional<int> max_tokens;
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool logprobs = false;
  int top_logprobs = 0;
  // What the reply must be (JSON for a schema, a grammar's language); free text by default.
  ReplyFormat reply_format;

  // Chat routes: OpenAI-shaped messages ready for the chat template (Anthropic requests are
  // converted), OpenAI-shaped tools, and template kwargs (enable_thinking...).
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  ToolChoiceMode tool_choice = ToolChoiceMode::kAuto;
  std::string tool_choice_name;
  // The tools whose calls must conform to their parameter schemas (OpenAI function.strict,
  // Anthropic and Responses `strict: true`), by function name.
  std::vector<std::string> strict_tools;
  // OpenAI parallel_tool_calls (Anthropic: tool_choice.disable_parallel_tool_use is its
  // negation): false allows one tool call per reply.
  bool parallel_tool_calls = true;
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
  // The request's images, decoded and preprocessed once when it was parsed, in the order their
  // {"type": "image"} parts appear in `messages` (so in the order the template renders them).
  std::vector<std::shared_ptr<const image::VisionInput>> images;
  // Anthropic thinking.display "omitted": reasoning is generated but its text is not sent.
  bool omit_reasoning_text = false;

  // Completions route: the prompt as text or as token ids (exactly one is set).
  std::optional<std::string> prompt_text;
  std::vector<int32_t> prompt_ids;
  bool echo = false;

  // The prompt normalization rules that changed this request, in order (for its log line).
  std::vector<std::string> normalized;
  // Responses route: what mapping the reply back to Responses items needs (tool kinds and
  // namespaces, the conversation to store for previous_response_id); null on other routes.
  std::shared_ptr<const ResponsesRequest> responses;

  ApiStyle style() const {
    return route == Route::kMessages ? ApiStyle::kAnthropic : ApiStyle::kOpenAI;
  }
};

}  // namespace qmlx::server
