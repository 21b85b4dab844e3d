// The OpenAI Responses wire format: the response object and the streamed event sequence that
// Codex and the OpenAI SDKs parse. ResponsesEventStream is the state machine that turns the
// server's output deltas into output items, one open at a time, each announced by
// response.output_item.added and closed by response.output_item.done:
//   reasoning        content_part.added, reasoning_text.delta..., reasoning_text.done,
//                    content_part.done (the item carries encrypted_content, see
//                    reasoning_signature.h)
//   message          content_part.added, output_text.delta..., output_text.done,
//                    content_part.done
//   function_call    function_call_arguments.delta..., function_call_arguments.done
//   custom_tool_call custom_tool_call_input.delta, custom_tool_call_input.done
// framed by response.created + response.in_progress and ended by response.completed (or
// response.incomplete at max_output_tokens, response.failed on an error). Every event carries
// a sequence_number. While the prompt is prefilled, `keepalive` events (a type the OpenAI SDK
// knows and Codex skips) reset clients' idle timers: SSE comments do not reach Codex's parser.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "server/chat/openai_format.h"
#include "server/responses/responses_request.h"
#include "server/scheduling/generation_job.h"
#include "text/output/output_delta.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {

// input_tokens is the whole prompt, cached_tokens the part restored from the cache.
nlohmann::json responses_usage(const GenerationStats& stats, int64_t reasoning_tokens);

// Each method returns the SSE text to send (possibly empty).
class ResponsesEventStream {
 public:
  // `tokenizer` counts the reasoning tokens for usage.
  ResponsesEventStream(ResponseMeta meta, std::shared_ptr<const ResponsesRequest> request,
                       const Tokenizer& tokenizer);

  std::string start();
  std::string keepalive();
  std::string delta(const OutputDelta& delta);
  // Closes the open item, then response.completed (response.incomplete at the length limit).
  std::string finish(const GenerationEvent& done);
  std::string fail(int status, const std::string& message);

  // The response object as it stands (the final one after finish / fail).
  nlohmann::json response() const;
  // The finished output items, as a client sends them back in its next input.
  const nlohmann::json& output() const { return output_; }

 private:
  enum class Item { kNone, kReasoning, kMessage, kFunctionCall, kCustomToolCall };
  std::string event(const std::string& type, nlohmann::json payload);
  std::string open(Item kind, nlohmann::json item);
  std::string close();
  std::string append_text(Item kind, const std::string& text);
  std::string tool_call(const ToolCallDelta& call);
  nlohmann::json item_event(nlohmann::json payload) const;  // adds item_id, output_index

  ResponseMeta meta_;
  std::shared_ptr<const ResponsesRequest> request_;
  const Tokenizer& tokenizer_;
  int64_t sequence_ = 0;
  Item open_ = Item::kNone;
  nlohmann::json item_;  // the open item
  std::string text_;     // its text so far (reasoning, message text, call arguments)
  size_t tool_index_ = SIZE_MAX;
  std::string reasoning_;  // all reasoning, for the usage count
  nlohmann::json output_ = nlohmann::json::array();
  std::string status_ = "in_progress";
  nlohmann::json usage_ = nullptr;
  nlohmann::json error_ = nullptr;
  nlohmann::json incomplete_details_ = nullptr;
};

// The non-streamed response: the same items as the stream, from the whole reply.
nlohmann::json responses_object(const ResponseMeta& meta,
                                std::shared_ptr<const ResponsesRequest> request,
                                const Tokenizer& tokenizer, const ParsedOutput& output,
                                const GenerationEvent& done);

}  // namespace qmlx::server
