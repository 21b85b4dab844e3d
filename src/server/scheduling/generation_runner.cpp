#include "server/scheduling/generation_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <random>

#include "base/logging.h"
#include "server/scheduling/canonical_history.h"
#include "server/scheduling/draft_constraint.h"
#include "server/scheduling/reply_constraint.h"
#include "server/scheduling/stop_matcher.h"
#include "server/scheduling/tool_call_constraint.h"
#include "server/scheduling/tool_choice_constraint.h"
#include "text/output/output_parser.h"

namespace qmlx::server {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

OutputParserOptions parser_options(const GenerationRequest& request, const RenderedPrompt& prompt,
                                   const ModelRuntime& runtime) {
  OutputParserOptions options;
  options.starts_in_reasoning = prompt_ends_inside_think(prompt.text);
  options.parse_tool_calls = !request.tools.empty() && request.tool_choice != ToolChoiceMode::kNone;
  options.tool_call_format = runtime.tool_call_format;
  options.tools = ToolCatalog(nlohmann::json(request.tools));
  options.id_seed = request.sampling.seed;
  return options;
}

// Turns generated text into the job's output events: through the stop matcher, then (on chat
// routes) the reasoning / tool-call parser. Completions pass text through as content.
class OutputPipeline {
 public:
  OutputPipeline(GenerationJob& job, const ModelRuntime& runtime)
      : job_(job), stops_(job.request().stop) {
    if (job.request().route != Route::kCompletions) {
      parser_.emplace(parser_options(job.request(), job.prompt(), runtime));
    }
  }

  void add_logprob(TokenLogprob logprob) { pending_logprobs_.push_back(std::move(logprob)); }

  // Adds the detokenizer's text; `complete_tokens` is how many generated tokens have all their
  // bytes in the text pushed so far (0: the last token's character is not finished yet).
  // Returns true when a stop string matched.
  bool push(const std::string& text, int64_t complete_tokens) {
    fed_bytes_ += text.size();
    if (complete_tokens > 0) token_ends_.push_back({fed_bytes_, complete_tokens});
    std::string released = stops_.push(text);
    released_bytes_ += released.size();
    emit(released, false);
    return stops_.matched().has_value();
  }

  void finish() { emit(stops_.finish(), true); }

  const std::optional<std::string>& matched_stop() const { return stops_.matched(); }
  bool produced_tool_calls() const { return parser_ && !parser_->result().tool_calls.empty(); }
  // The whole reply as parsed (chat routes only).
  std::optional<ParsedOutput> reply() const {
    if (!parser_) return std::nullopt;
    return parser_->result();
  }

 private:
  void emit(const std::string& text, bool at_end) {
    GenerationEvent event;
    event.kind = GenerationEvent::Kind::kOutput;
    if (parser_) {
      if (!text.empty()) event.delta = parser_->feed(text);
      if (at_end) append(event.delta, parser_->finish());
    } else {
      event.delta.content = text;
    }
    event.logprobs.swap(pending_logprobs_);
    if (event.delta.empty() && event.logprobs.empty()) return;
    event.settled_tokens = settled_tokens(at_end);
    job_.publish(std::move(event));
  }

  // The generated tokens whose bytes have all left the pipeline (emitted, or dropped as framing).
  int64_t settled_tokens(bool at_end) {
    const size_t held = at_end || !parser_ ? 0 : parser_->held_bytes();
    const size_t settled = released_bytes_ - std::min(released_bytes_, held);
    while (!token_ends_.empty() && token_ends_.front().first <= settled) {
      settled_tokens_ = token_ends_.front().second;
      token_ends_.pop_front();
    }
    return settled_tokens_;
  }

  static void append(OutputDelta& into, const OutputDelta& more) {
    into.reasoning += more.reasoning;
    into.content += more.content;
    into.tool_calls.insert(into.tool_calls.end(), more.tool_calls.begin(), more.tool_calls.end());
  }

  GenerationJob& job_;
  StopMatcher stops_;
  std::optional<OutputParser> parser_;
  std::vector<TokenLogprob> pending_logprobs_;
  // Bytes pushed in, bytes the stop matcher let through, and (byte offset, token count) at each
  // token whose text ended there, not yet settled.
  size_t fed_bytes_ = 0;
  size_t released_bytes_ = 0;
  std::deque<std::pair<size_t, int64_t>> token_ends_;
  int64_t settled_tokens_ = 0;
};

class Run {
 public:
  Run(GenerationJob& job, InferenceSession& session, const ModelRuntime& runtime, CacheHooks& hooks,
      const RunnerSettings& settings)
      : job_(job),
        request_(job.request()),
        session_(session),
        runtime_(runtime),
        hooks_(hooks),
        settings_(settings),
        prompt_ids_(job.prompt().ids),
        view_{prompt_ids_, job.prompt().last_message_end, job.prompt().last_user_start,
              job.prompt().edit_points, [client = &job] { return client->cancelled(); }} {}

  GenerationOutcome execute() {
    start_ = Clock::now();
    stats_.queue_ms = std::chrono::duration<double, std::milli>(start_ - job_.created()).count();
    stats_.uid = job_.uid();
    stats_.normalized = request_.normalized;
    stats_.prompt_tokens = static_cast<int64_t>(prompt_ids_.size());
    place_images();
    restore_from_cache();
    encode_images();
    if (!prefill_prompt()) return finish(FinishReason::kCancelled);
    hooks_.on_prompt_end(view_, session_.state_source());
    return finish(decode());
  }

 private:
  void restore_from_cache() {
    // The session still holds the last request's state: the hook may continue from it.
    stats_.cache = hooks_.lookup_and_restore(view_, session_);
    int64_t cached = stats_.cache.cached_tokens;
    // A restore is trusted only if the session is where the hook says it put it.
    if (cached <= 0 || cached > stats_.prompt_tokens || session_.position() != cached ||
        (cached == stats_.prompt_tokens && session_.logits().empty())) {
      if (session_.position() != 0) session_.reset();
      stats_.cache.cached_tokens = 0;
    }
    stats_.cached_tokens = stats_.cache.cached_tokens;
  }

  // The session learns where the prompt's images are before the cache restores it (a restore
  // continues their positions), and gets their rows only after: an image the restore covers is
  // not encoded at all. Always set: the session may hold the last request's images.
  void place_images() {
    const std::vector<PromptImage>& images = job_.prompt().images;
    stats_.images = int(images.size());
    if (images.empty()) {
      session_.set_images({});
      return;
    }
    session_.set_images(runtime_.encode_images(images, INT64_MAX).images);
  }

  void encode_images() {
    const std::vector<PromptImage>& images = job_.prompt().images;
    if (images.empty()) return;
    const auto start = Clock::now();
    PlacedImages placed = runtime_.encode_images(images, stats_.cached_tokens);
    stats_.images_encoded = placed.encoded;
    stats_.image_encode_ms = ms_since(start);
    session_.set_images(std::move(placed.images));
  }

  // False when the client went away mid-prefill.
  bool prefill_prompt() {
    auto prefill_start = Clock::now();
    auto last_log = prefill_start;
    int64_t pos = stats_.cached_tokens;
    const int64_t total = stats_.prompt_tokens;
    publish_progress(pos, prefill_start);
    // The cache's checkpoints must land exactly on their positions, so chunks end there too.
    std::vector<int64_t> stops = hooks_.checkpoint_positions(view_, pos);
    auto next_stop = stops.begin();
    // A client that leaves stops the prefill at the next step's end; what was prefilled counts.
    auto cancelled = [&] {
      stats_.prefill_tokens = pos - stats_.cached_tokens;
      stats_.prefill_ms = ms_since(prefill_start);
      return false;
    };
    while (pos < total) {
      if (job_.cancelled()) return cancelled();
      while (next_stop != stops.end() && *next_stop <= pos) ++next_stop;
      int64_t end = std::min<int64_t>(pos + settings_.prefill_chunk_tokens, total);
      if (next_stop != stops.end()) end = std::min(end, *next_stop);
      end = std::clamp(hooks_.chunk_end(session_.state_source(), pos, end), pos + 1, end);
      const int64_t n = end - pos;
      const int64_t fed = session_.prefill_until_cancelled(
          std::span<const int32_t>(prompt_ids_).subspan(size_t(pos), size_t(n)),
          job_.cancel_flag());
      pos += fed;
      if (fed < n) return cancelled();
      hooks_.on_prefill_progress(view_, session_.state_source());
      publish_progress(pos, prefill_start);
      if (std::chrono::duration<double>(Clock::now() - last_log).count() >=
              settings_.progress_log_seconds &&
          pos < total) {
        log_progress(pos, prefill_start);
        last_log = Clock::now();
      }
    }
    stats_.prefill_tokens = total - stats_.cached_tokens;
    stats_.prefill_ms = ms_since(prefill_start);
    return true;
  }

  void publish_progress(int64_t processed, Clock::time_point prefill_start) {
    if (!request_.return_progress || !request_.stream) return;
    GenerationEvent event;
    event.kind = GenerationEvent::Kind::kProgress;
    event.progress = {stats_.prompt_tokens, stats_.cached_tokens, processed,
                      ms_since(prefill_start)};
    job_.publish(std::move(event));
  }

  void log_progress(int64_t pos, Clock::time_point prefill_start) {
    double seconds = ms_since(prefill_start) / 1000.0;
    double rate = (pos - stats_.cached_tokens) / std::max(seconds, 1e-9);
    double eta = (stats_.prompt_tokens - pos) / std::max(rate, 1e-9);
    char line[256];
    std::snprintf(line, sizeof line, "uid=%llu prefill %lld/%lld tokens, %.1f tok/s, ETA %.0fs",
                  static_cast<unsigned long long>(job_.uid()), static_cast<long long>(pos),
                  static_cast<long long>(stats_.prompt_tokens), rate, eta);
    log_info(line);
  }

  uint64_t seed() const {
    if (request_.sampling.seed) return *request_.sampling.seed;
    return (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  }

  bool is_stop_token(int32_t id) const {
    const auto& stops = runtime_.stop_token_ids;
    return std::find(stops.begin(), stops.end(), id) != stops.end();
  }

  FinishReason decode() {
    auto sampler = runtime_.new_sampler(request_.sampling, seed());
    StreamingDetokenizer detokenizer(*runtime_.tokenizer);
    OutputPipeline output(job_, runtime_);
    ToolChoiceConstraint tool_choice(request_, job_.prompt().text, runtime_.tool_call_format,
                                     *runtime_.tokenizer);
    std::vector<int32_t> history = prompt_ids_;
    const int max_tokens = request_.max_tokens.value_or(1);
    ReplyConstraint reply(job_.reply_grammar(), job_.prompt().text, max_tokens, *runtime_.tokenizer,
                          tool_call_token());
    if (reply.enabled()) {
      stats_.reply_format = request_.reply_format.kind_name();
      stats_.reply_format_name = request_.reply_format.name;
    }
    ToolCallConstraint tool_calls(job_.tool_call_grammar(), request_, job_.prompt().text,
                                  *runtime_.tokenizer, runtime_.stop_token_ids);
    SpeculativeDecoding* speculative = speculation(tool_choice);
    // The step's drafts and checks are held to the reply's constraints, when it has any.
    DraftConstraint drafts(reply, tool_calls, runtime_.stop_token_ids);
    TokenConstraint* const draft_constraint = drafts.enabled() ? &drafts : nullptr;
    const SpeculativeCounts counts_before =
        speculative ? speculative->counts() : SpeculativeCounts{};
    // The last speculative step while its tokens are being taken (the session has fed all of them
    // but the last), and how many were taken.
    const SpeculativeStep* step = nullptr;
    size_t taken = 0;
    auto decode_start = Clock::now();
    FinishReason reason = FinishReason::kLength;
    for (int i = 0; i < max_tokens; ++i) {
      std::span<const float> logits;
      int32_t token;
      if (step && taken < step->tokens.size()) {
        logits = step->logits[taken];
        token = step->tokens[taken++];
      } else {
        // (A step that returned no token left the row to force one from in the session.)
        step = nullptr;
        logits = session_.logits();
        std::optional<int32_t> forced = tool_choice.forced_token();
        if (!forced) forced = reply.forced_token(i);
        token = forced ? *forced : sampler->sample(tool_calls.mask(reply.mask(logits)), history);
      }
      tool_choice.observe(token);
      reply.observe(token);
      tool_calls.observe(token);
      if (i == 0) {
        stats_.ttft_ms = ms_since(start_);
        decode_start = Clock::now();
      }
      if (request_.logprobs) {
        output.add_logprob(compute_token_logprob(logits, token, request_.top_logprobs,
                                                 runtime_.tokenizer->vocab_size() - 1));
      }
      generated_.push_back(token);
      if (is_stop_token(token)) {
        reason = FinishReason::kStop;
        break;
      }
      history.push_back(token);
      const std::string text = detokenizer.push(token);
      const int64_t complete = detokenizer.holds_partial() ? 0 : int64_t(generated_.size());
      if (output.push(text, complete)) {
        reason = FinishReason::kStopSequence;
        break;
      }
      if (i + 1 == max_tokens) break;
      if (job_.cancelled()) {
        reason = FinishReason::kCancelled;
        break;
      }
      if (step && taken < step->tokens.size()) {
        // A draft the model kept: the session already holds it.
        hooks_.on_decode_step(view_, history, speculative->state_after(int(taken) + 1));
      } else if (speculative) {
        drafts.start(i + 1);
        step = &speculative->step(token, *sampler, history, max_tokens - i - 2, draft_constraint);
        taken = 0;
        hooks_.on_decode_step(view_, history, speculative->state_after(1));
      } else {
        session_.decode(token);
        hooks_.on_decode_step(view_, history, session_.state_source());
      }
    }
    // Whatever ended the loop, the session holds what plain decoding would have fed: the tokens
    // before the last one taken.
    if (step) speculative->keep(int(taken));
    if (speculative) record_speculation(counts_before, speculative->counts());
    // The detokenizer's flush may complete a stop string too.
    if (reason != FinishReason::kStopSequence) {
      output.push(detokenizer.finish(), int64_t(generated_.size()));
    }
    if (output.matched_stop()) {
      reason = FinishReason::kStopSequence;
      stop_sequence_ = *output.matched_stop();
    }
    output.finish();
    reply_ = output.reply();
    stats_.decode_ms = generated_.empty() ? 0 : ms_since(decode_start);
    stats_.completion_tokens = static_cast<int64_t>(generated_.size());
    if (reason == FinishReason::kStop && output.produced_tool_calls()) {
      reason = FinishReason::kToolCalls;
    }
    return reason;
  }

  // The session's speculative decoding for this request, or null: off, or a tool_choice that
  // forces tokens (its forced tokens are not drafts the rule could check); plain decoding then,
  // said once. A reply format and a tool-call grammar speculate: their masks hold the drafts
  // (DraftConstraint).
  SpeculativeDecoding* speculation(const ToolChoiceConstraint& tool_choice) {
    SpeculativeDecoding* speculative = session_.speculative();
    if (speculative && tool_choice.may_force()) {
      log_info("uid=" + std::to_string(job_.uid()) +
               " speculative decoding off for this request: its tool_choice forces tokens");
      return nullptr;
    }
    return speculative;
  }

  // The token that opens a tool call when the request offers tools (a reply format then
  // allows a tool call in place of its value).
  std::optional<int32_t> tool_call_token() const {
    if (request_.tools.empty() || request_.tool_choice == ToolChoiceMode::kNone)
      return std::nullopt;
    return runtime_.tokenizer->token_id("<tool_call>");
  }

  void record_speculation(const SpeculativeCounts& before, const SpeculativeCounts& after) {
    stats_.speculative.steps = after.steps - before.steps;
    stats_.speculative.drafted = after.drafted - before.drafted;
    stats_.speculative.accepted = after.accepted - before.accepted;
    stats_.speculative.tokens = after.tokens - before.tokens;
  }

  GenerationOutcome finish(FinishReason reason) {
    std::vector<int32_t> tokens = prompt_ids_;
    tokens.insert(tokens.end(), generated_.begin(), generated_.end());
    if (reason == FinishReason::kCancelled) {
      // What the client holds: the prompt (the part prefilled, when it left during prefill)
      // and the generated tokens whose text reached it, however far generation had got.
      const size_t kept =
          generated_.empty()
              ? std::min<size_t>(tokens.size(), session_.position())
              : prompt_ids_.size() + size_t(std::clamp<int64_t>(job_.delivered_tokens(), 0,
                                                                int64_t(generated_.size())));
      stats_.checkpoint =
          hooks_.on_interrupted(std::span<const int32_t>(tokens.data(), kept), session_);
    } else {
      hooks_.on_generation_end(tokens, session_.state_source(), next_turn_renderer());
    }
    stats_.run_ms = ms_since(start_);
    GenerationEvent event;
    event.kind = GenerationEvent::Kind::kDone;
    event.finish = reason;
    event.stop_sequence = stop_sequence_;
    event.stats = stats_;
    event.generated = generated_;
    job_.publish(std::move(event));
    return {reason, stats_};
  }

  // Renders, when the cache asks (in idle time), how the next turn will show this reply.
  CanonicalHistory next_turn_renderer() const {
    if (request_.route == Route::kCompletions || !reply_) return {};
    return [&runtime = runtime_, messages = request_.messages, tools = request_.tools,
            kwargs = request_.template_kwargs, reply = *reply_, images = request_.images] {
      CanonicalHistories out;
      std::vector<PromptImage> placed;
      out.ids =
          render_canonical_histories(runtime, messages, tools, kwargs, reply, images, &placed);
      if (!placed.empty() && runtime.encode_images) {
        out.images = [&runtime, placed = std::move(placed)](int64_t from_row) {
          return runtime.encode_images(placed, from_row).images;
        };
      }
      return out;
    };
  }

  GenerationJob& job_;
  const GenerationRequest& request_;
  InferenceSession& session_;
  const ModelRuntime& runtime_;
  CacheHooks& hooks_;
  const RunnerSettings& settings_;
  const std::vector<int32_t>& prompt_ids_;
  PromptView view_;
  Clock::time_point start_;
  GenerationStats stats_;
  std::vector<int32_t> generated_;
  std::string stop_sequence_;
  std::optional<ParsedOutput> reply_;  // chat routes: the whole parsed reply
};

}  // namespace

GenerationOutcome run_generation(GenerationJob& job, InferenceSession& session,
                                 const ModelRuntime& runtime, CacheHooks& hooks,
                                 const RunnerSettings& settings) {
  return Run(job, session, runtime, hooks, settings).execute();
}

const char* openai_finish_reason(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kToolCalls:
      return "tool_calls";
    default:
      return "stop";
  }
}

const char* finish_reason_name(FinishReason reason) {
  return reason == FinishReason::kCancelled ? "cancelled" : openai_finish_reason(reason);
}

const char* anthropic_stop_reason(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
      return "max_tokens";
    case FinishReason::kToolCalls:
      return "tool_use";
    case FinishReason::kStopSequence:
      return "stop_sequence";
    default:
      return "end_turn";
  }
}

}  // namespace qmlx::server
