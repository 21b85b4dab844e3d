// GenerationJob: one request travelling from an HTTP thread to the engine thread and back.
// The engine thread publishes events (prefill progress, output deltas, the end) into the
// job's channel; the HTTP thread consumes them, turns them into JSON or SSE, and raises
// `cancelled` when the client goes away, which the engine checks between decode steps; a stream
// also reports how much of the reply reached the client (mark_delivered).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "grammar/token_mask_tables.h"
#include "server/activity/request_origin.h"
#include "server/common/generation_request.h"
#include "server/scheduling/cache_hooks.h"
#include "server/scheduling/model_runtime.h"
#include "server/scheduling/token_logprobs.h"
#include "text/output/output_delta.h"

namespace qmlx::server {

enum class FinishReason { kStop, kLength, kStopSequence, kToolCalls, kCancelled };

struct PromptProgress {
  int64_t total = 0;      // prompt tokens
  int64_t cache = 0;      // restored from the cache
  int64_t processed = 0;  // cached + prefilled so far
  double time_ms = 0;
};

struct GenerationStats {
  uint64_t uid = 0;  // the request's number in the log
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t prefill_tokens = 0;
  int64_t completion_tokens = 0;
  double queue_ms = 0;
  double prefill_ms = 0;
  double ttft_ms = 0;  // from the start of processing to the first generated token
  double decode_ms = 0;
  double run_ms = 0;  // from the slot taking it to its end
  // A request cut short: the checkpoint the cache left of what the client holds ("" if none).
  std::string checkpoint;
  CacheLookupResult cache;
  std::vector<std::string> normalized;  // prompt normalization rules that changed the request
  // Images in the prompt, those the vision tower encoded for it (the others were restored with
  // the cache or kept from an earlier turn) and the time that took.
  int images = 0;
  int images_encoded = 0;
  double image_encode_ms = 0;
  // Speculative decoding's steps, drafts, accepted drafts and tokens produced (all zero when off).
  SpeculativeCounts speculative;
  // The reply format the decode held the reply to (ReplyFormat::kind_name(): "json_object",
  // "json_schema", "grammar"; "" for free text) and the schema's name ("" when none).
  std::string reply_format;
  std::string reply_format_name;

  double prefill_tokens_per_second() const;
  double decode_tokens_per_second() const;
};

struct GenerationEvent {
  enum class Kind { kProgress, kOutput, kDone, kError };
  Kind kind = Kind::kOutput;
  PromptProgress progress;             // kProgress
  OutputDelta delta;                   // kOutput
  std::vector<TokenLogprob> logprobs;  // kOutput: the tokens generated since the last event
  // kOutput: the generated tokens whose text this event and the earlier ones hold in full (text
  // held back by the stop matcher, the output parser or an unfinished character does not count)
  int64_t settled_tokens = 0;
  FinishReason finish = FinishReason::kStop;  // kDone
  std::string stop_sequence;                  // kDone, when a stop string matched
  GenerationStats stats;                      // kDone
  std::vector<int32_t> generated;             // kDone: every generated token
  int status = 500;                           // kError
  std::string message;                        // kError
};

class GenerationJob {
 public:
  // `reply_grammar`: the request's reply format bound to the vocabulary (reply_grammars.h);
  // null for free text. `tool_call_grammar`: its tool calls' grammar (tool_call_grammar.h);
  // null when calls are free.
  GenerationJob(uint64_t uid, GenerationRequest request, RenderedPrompt prompt,
                RequestOrigin origin = {},
                std::shared_ptr<const grammar::TokenMaskTables> reply_grammar = nullptr,
                std::shared_ptr<const grammar::TokenMaskTables> tool_call_grammar = nullptr)
      : uid_(uid),
        request_(std::move(request)),
        prompt_(std::move(prompt)),
        origin_(std::move(origin)),
        reply_grammar_(std::move(reply_grammar)),
        tool_call_grammar_(std::move(tool_call_grammar)) {}

  uint64_t uid() const { return uid_; }
  const GenerationRequest& request() const { return request_; }
  // Who sent it and which conversation it continues (for the status page).
  const RequestOrigin& origin() const { return origin_; }
  const std::shared_ptr<const grammar::TokenMaskTables>& reply_grammar() const {
    return reply_grammar_;
  }
  const std::shared_ptr<const grammar::TokenMaskTables>& tool_call_grammar() const {
    return tool_call_grammar_;
  }
  const RenderedPrompt& prompt() const { return prompt_; }
  std::chrono::steady_clock::time_point created() const { return created_; }

  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }
  // For work that checks it as it goes (the engine's prefill, at each step's end).
  const std::atomic<bool>& cancel_flag() const { return cancelled_; }

  // The stream's writer tells, after each event written to the client, the event's
  // settled_tokens: the client has the text of that many generated tokens. A stream cut short
  // is checkpointed there (the `interrupted` snapshot), not where generation had got to.
  void mark_delivered(int64_t settled_tokens);
  // 0 until a stream reported delivery (a whole response delivers nothing before its end).
  int64_t delivered_tokens() const { return delivered_.load(); }

  void publish(GenerationEvent event);
  // True once the last event (done or error) is published: the client may already be sending
  // its next request while the slot finishes this one (checkpoints, idle work).
  bool answered() const { return answered_.load(); }
  // The next event, or nullopt when none arrived within `timeout`.
  std::optional<GenerationEvent> next(std::chrono::milliseconds timeout);

 private:
  const uint64_t uid_;
  const GenerationRequest request_;
  const RenderedPrompt prompt_;
  const RequestOrigin origin_;
  const std::shared_ptr<const grammar::TokenMaskTables> reply_grammar_;
  const std::shared_ptr<const grammar::TokenMaskTables> tool_call_grammar_;
  const std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  std::atomic<bool> cancelled_{false};
  std::atomic<int64_t> delivered_{0};
  std::atomic<bool> answered_{false};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<GenerationEvent> events_;
};

}  // namespace qmlx::server
