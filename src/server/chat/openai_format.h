// The OpenAI wire format: chat.completion / text_completion objects and their streamed
// chunks, usage with cached tokens, logprobs, and the llama.cpp-style `timings` object.
// Pure functions from the server's own types to JSON, so each shape is unit-tested.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/scheduling/generation_job.h"
#include "text/output/output_delta.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {

// Identity of one response, shared by all its chunks.
struct ResponseMeta {
  std::string id;
  std::string model;
  int64_t created = 0;  // unix seconds
  // Reasoning is generated and carried (Anthropic: in the thinking block's signature) but its
  // text is not shown: Anthropic thinking.display "omitted".
  bool hide_reasoning = false;
};

nlohmann::json openai_usage(const GenerationStats& stats);
nlohmann::json timings_json(const GenerationStats& stats);

// Chat logprobs: {"content": [{token, logprob, bytes, top_logprobs: [...]}, ...]}.
nlohmann::json chat_logprobs(const std::vector<TokenLogprob>& tokens, const Tokenizer& tokenizer);
// Legacy completions logprobs: {tokens, token_logprobs, top_logprobs, text_offset}.
nlohmann::json completion_logprobs(const std::vector<TokenLogprob>& tokens,
                                   const Tokenizer& tokenizer, size_t text_offset);

nlohmann::json chat_completion(const ResponseMeta& meta, const ParsedOutput& output,
                               const nlohmann::json& logprobs, const GenerationEvent& done);
nlohmann::json chat_chunk(const ResponseMeta& meta, const nlohmann::json& delta,
                          const nlohmann::json& logprobs = nullptr,
                          const char* finish_reason = nullptr);
// The delta of one output event ({reasoning_content, content, tool_calls}).
nlohmann::json chat_delta(const OutputDelta& delta);
nlohmann::json usage_chunk(const ResponseMeta& meta, const char* object,
                           const GenerationStats& stats);
nlohmann::json progress_chunk(const ResponseMeta& meta, const char* object,
                              const PromptProgress& progress);

nlohmann::json text_completion(const ResponseMeta& meta, const std::string& text,
                               const nlohmann::json& logprobs, const GenerationEvent& done);
nlohmann::json text_chunk(const ResponseMeta& meta, const std::string& text,
                          const nlohmann::json& logprobs = nullptr,
                          const char* finish_reason = nullptr);

}  // namespace qmlx::server
