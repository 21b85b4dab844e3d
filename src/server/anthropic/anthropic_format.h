// The Anthropic Messages wire format: the message object and the streamed event sequence
// message_start, then per content block content_block_start / content_block_delta
// (text_delta, thinking_delta, input_json_delta) / content_block_stop, then message_delta
// (stop_reason, usage) and message_stop. AnthropicEventStream is the state machine that turns
// the server's output deltas into exactly that sequence, one block open at a time.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/chat/openai_format.h"
#include "server/scheduling/generation_job.h"
#include "text/output/output_delta.h"

namespace qmlx::server {

// input_tokens = prefilled, cache_read_input_tokens = cached (their sum is the prompt).
nlohmann::json anthropic_usage(const GenerationStats& stats);

nlohmann::json anthropic_message(const ResponseMeta& meta, const ParsedOutput& output,
                                 const GenerationEvent& done);

// Each method returns the SSE text to send (possibly empty).
class AnthropicEventStream {
 public:
  explicit AnthropicEventStream(ResponseMeta meta) : meta_(std::move(meta)) {}

  // message_start (before anything else), with the prompt size known so far.
  std::string start(int64_t prompt_tokens);
  std::string ping();
  std::string progress(const PromptProgress& progress);
  std::string delta(const OutputDelta& delta);
  // Closes the open block, then message_delta and message_stop.
  std::string finish(const GenerationEvent& done);

 private:
  enum class Block { kNone, kThinking, kText, kToolUse };
  std::string open(Block type, const nlohmann::json& content_block);
  std::string close();
  std::string append(Block type, const std::string& text);

  ResponseMeta meta_;
  Block open_ = Block::kNone;
  int index_ = -1;
  size_t tool_index_ = SIZE_MAX;
  std::string reasoning_;  // the open thinking block's text, for its signature
};

}  // namespace qmlx::server
