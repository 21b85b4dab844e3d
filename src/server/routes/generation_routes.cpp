// The generation routes: POST /v1/chat/completions, /v1/completions, /v1/messages and
// /v1/responses. Each parses into a GenerationRequest, renders and tokenizes the prompt, checks
// the context limit, queues a job on the scheduler, then answers with one JSON body or an SSE
// stream.
#include <chrono>
#include <functional>

#include "base/error.h"
#include "server/anthropic/anthropic_format.h"
#include "server/anthropic/anthropic_request.h"
#include "server/chat/chat_request.h"
#include "server/chat/openai_format.h"
#include "server/common/request_fields.h"
#include "server/prompt/prompt_normalizer.h"
#include "server/prompt/system_message_placement.h"
#include "server/responses/responses_format.h"
#include "server/responses/responses_request.h"
#include "server/routes/api_server_state.h"
#include "server/routes/sse.h"
#include "server/scheduling/prompt_images.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kPollInterval(50);

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

nlohmann::ordered_json tools_for_template(const GenerationRequest& r) {
  using ordered = nlohmann::ordered_json;
  if (r.tool_choice == ToolChoiceMode::kNone) return ordered::array();
  if (r.tool_choice != ToolChoiceMode::kNamed) return r.tools;
  for (const auto& tool : r.tools) {
    const ordered& fn = tool.contains("function") ? tool["function"] : tool;
    if (fn.value("name", "") == r.tool_choice_name) return ordered::array({tool});
  }
  throw ApiError(400, "tool_choice names '" + r.tool_choice_name + "', which is not in tools",
                 "tool_choice");
}

RenderedPrompt render_prompt(const GenerationRequest& r, const ModelRuntime& runtime) {
  RenderedPrompt prompt;
  try {
    if (r.route != Route::kCompletions) {
      prompt = runtime.render_chat(r.messages, tools_for_template(r), true, r.template_kwargs);
      place_prompt_images(prompt, r.images, runtime.image_pad_id);
    } else if (r.prompt_text) {
      prompt.text = *r.prompt_text;
      prompt.ids = runtime.tokenizer->encode(*r.prompt_text, true);
    } else {
      for (size_t i = 0; i < r.prompt_ids.size(); ++i) {
        if (r.prompt_ids[i] >= runtime.tokenizer->vocab_size()) {
          throw ApiError(400, "prompt[" + std::to_string(i) + "] is not a token id of this model",
                         "prompt");
        }
      }
      prompt.ids = r.prompt_ids;
      prompt.text = runtime.tokenizer->decode(prompt.ids);
    }
  } catch (const Error& e) {
    throw ApiError(400, std::string("cannot render the prompt: ") + e.what());
  }
  if (prompt.ids.empty()) throw ApiError(400, "the prompt is empty", "prompt");
  return prompt;
}

// Caps max_tokens at what the context has left (the whole rest when absent) and refuses a
// prompt that leaves no room. A client's max_tokens is a ceiling, not a demand: Claude Code
// asks for 128,000 on every turn, which would fail every request of a long conversation; the
// reply stops with finish reason "length" / "max_tokens" where the context ends instead.
void apply_context_limit(GenerationRequest& r, int64_t prompt_tokens, int64_t limit) {
  if (prompt_tokens >= limit) {
    throw ApiError(400,
                   "the prompt has " + std::to_string(prompt_tokens) +
                       " tokens, which leaves no room under the context limit of " +
                       std::to_string(limit) + " tokens",
                   "messages");
  }
  const int64_t room = limit - prompt_tokens;
  r.max_tokens = static_cast<int>(std::min<int64_t>(r.max_tokens.value_or(room), room));
}

std::string response_id(Route route, uint64_t uid) {
  const char* prefix = route == Route::kMessages      ? "msg_qmlx"
                       : route == Route::kCompletions ? "cmpl-qmlx"
                       : route == Route::kResponses   ? "resp_qmlx"
                                                      : "chatcmpl-qmlx";
  return prefix + std::to_string(uid);
}

// Everything a response needs besides the job's events.
struct ResponseContext {
  std::shared_ptr<GenerationJob> job;
  std::shared_ptr<const ModelRuntime> runtime;
  ResponseMeta meta;
  double keepalive_seconds = 5;
  ResponseStore* responses = nullptr;  // where a finished Responses reply is remembered
};

// Keeps a finished Responses reply for a later previous_response_id (unless store is false).
void remember_response(const ResponseContext& ctx, const nlohmann::json& output) {
  const ResponsesRequest& request = *ctx.job->request().responses;
  if (request.store) ctx.responses->put(ctx.meta.id, request.conversation, output);
}

[[noreturn]] void throw_job_failure(const GenerationEvent& event) {
  if (event.kind == GenerationEvent::Kind::kError) {
    throw ApiError::of_logged_job(event.status, event.message);
  }
  throw ApiError::of_logged_job(503, "the request was cut short: the server is shutting down");
}

// How often a non-streaming request checks that its client is still connected.
constexpr auto kDisconnectPoll = std::chrono::milliseconds(250);

json whole_response(const ResponseContext& ctx, const http::Request& req) {
  ParsedOutput output;
  std::vector<TokenLogprob> logprobs;
  GenerationEvent done;
  auto next_check = std::chrono::steady_clock::now() + kDisconnectPoll;
  for (;;) {
    auto event = ctx.job->next(kDisconnectPoll);
    if (std::chrono::steady_clock::now() >= next_check) {
      // Nobody will read the answer: stop the generation, which frees the engine for the
      // next request (a long prefill would otherwise run to its end).
      if (req.is_connection_closed()) {
        ctx.job->cancel();
        throw ApiError::of_logged_job(
            499, "the client closed the connection before the answer was ready");
      }
      next_check = std::chrono::steady_clock::now() + kDisconnectPoll;
    }
    if (!event) continue;
    if (event->kind == GenerationEvent::Kind::kOutput) {
      output.append(event->delta);
      logprobs.insert(logprobs.end(), event->logprobs.begin(), event->logprobs.end());
    } else if (event->kind == GenerationEvent::Kind::kDone ||
               event->kind == GenerationEvent::Kind::kError) {
      if (event->kind == GenerationEvent::Kind::kError ||
          event->finish == FinishReason::kCancelled) {
        throw_job_failure(*event);
      }
      done = std::move(*event);
      break;
    }
  }
  const GenerationRequest& r = ctx.job->request();
  const Tokenizer& tokenizer = *ctx.runtime->tokenizer;
  if (r.route == Route::kMessages) return anthropic_message(ctx.meta, output, done);
  if (r.route == Route::kResponses) {
    json response = responses_object(ctx.meta, r.responses, tokenizer, output, done);
    remember_response(ctx, response["output"]);
    return response;
  }
  if (r.route == Route::kChatCompletions) {
    return chat_completion(ctx.meta, output,
                           r.logprobs ? chat_logprobs(logprobs, tokenizer) : json(nullptr), done);
  }
  std::string prefix = r.echo ? ctx.job->prompt().text : "";
  json lp = r.logprobs ? completion_logprobs(logprobs, tokenizer, prefix.size()) : json(nullptr);
  return text_completion(ctx.meta, prefix + output.content, lp, done);
}

// Writes one streamed response. Returns false (and cancels the job) once the client is gone.
class StreamSession {
 public:
  StreamSession(const ResponseContext& ctx, http::DataSink& sink)
      : ctx_(ctx),
        request_(ctx.job->request()),
        sink_(sink),
        anthropic_(ctx.meta),
        responses_(ctx.meta, request_.responses, *ctx.runtime->tokenizer),
        text_offset_(request_.echo ? ctx.job->prompt().text.size() : 0) {}

  bool run() {
    if (!write(opening())) return false;
    for (;;) {
      auto event = ctx_.job->next(kPollInterval);
      if (!event) {
        if (seconds_since_write() >= ctx_.keepalive_seconds && !write(keepalive())) return false;
        continue;
      }
      if (event->kind == GenerationEvent::Kind::kDone ||
          event->kind == GenerationEvent::Kind::kError) {
        write(closing(*event));
        sink_.done();
        return true;
      }
      if (!write(render(*event))) return false;
      ctx_.job->mark_delivered(event->settled_tokens);
    }
  }

 private:
  bool write(const std::string& text) {
    if (text.empty()) return true;
    if (!sink_.write(text.data(), text.size())) {
      ctx_.job->cancel();
      return false;
    }
    last_write_ = Clock::now();
    return true;
  }

  double seconds_since_write() const {
    return std::chrono::duration<double>(Clock::now() - last_write_).count();
  }

  std::string opening() {
    switch (request_.route) {
      case Route::kMessages:
        return anthropic_.start(static_cast<int64_t>(ctx_.job->prompt().ids.size()));
      case Route::kChatCompletions:
        return sse_data(chat_chunk(ctx_.meta, {{"role", "assistant"}, {"content", ""}}));
      case Route::kCompletions:
        return request_.echo ? sse_data(text_chunk(ctx_.meta, ctx_.job->prompt().text)) : "";
      case Route::kResponses:
        return responses_.start();
    }
    return "";
  }

  std::string keepalive() {
    if (request_.route == Route::kResponses) return responses_.keepalive();
    return request_.route == Route::kMessages ? anthropic_.ping() : sse_comment("keep-alive");
  }

  const char* openai_object() const {
    return request_.route == Route::kCompletions ? "text_completion" : "chat.completion.chunk";
  }

  std::string render(const GenerationEvent& event) {
    if (event.kind == GenerationEvent::Kind::kProgress) {
      if (request_.route == Route::kResponses) return "";  // no such Responses event
      if (request_.route == Route::kMessages) return anthropic_.progress(event.progress);
      return sse_data(progress_chunk(ctx_.meta, openai_object(), event.progress));
    }
    const Tokenizer& tokenizer = *ctx_.runtime->tokenizer;
    switch (request_.route) {
      case Route::kMessages:
        return anthropic_.delta(event.delta);
      case Route::kChatCompletions: {
        json lp = request_.logprobs ? chat_logprobs(event.logprobs, tokenizer) : json(nullptr);
        return sse_data(chat_chunk(ctx_.meta, chat_delta(event.delta), lp));
      }
      case Route::kCompletions: {
        json lp = request_.logprobs ? completion_logprobs(event.logprobs, tokenizer, text_offset_)
                                    : json(nullptr);
        text_offset_ += event.delta.content.size();
        return sse_data(text_chunk(ctx_.meta, event.delta.content, lp));
      }
      case Route::kResponses:
        return responses_.delta(event.delta);
    }
    return "";
  }

  std::string closing(const GenerationEvent& event) {
    if (event.kind == GenerationEvent::Kind::kError)
      return stream_error(event.status, event.message);
    if (event.finish == FinishReason::kCancelled) {
      return stream_error(503, "the request was cut short: the server is shutting down");
    }
    if (request_.route == Route::kMessages) return anthropic_.finish(event);
    if (request_.route == Route::kResponses) {
      std::string out = responses_.finish(event);
      remember_response(ctx_, responses_.output());
      return out;
    }
    std::string out;
    const char* reason = openai_finish_reason(event.finish);
    json last = request_.route == Route::kCompletions
                    ? text_chunk(ctx_.meta, "", nullptr, reason)
                    : chat_chunk(ctx_.meta, json::object(), nullptr, reason);
    last["timings"] = timings_json(event.stats);
    out += sse_data(last);
    if (request_.include_usage)
      out += sse_data(usage_chunk(ctx_.meta, openai_object(), event.stats));
    return out + sse_done();
  }

  std::string stream_error(int status, const std::string& message) {
    if (request_.route == Route::kResponses) return responses_.fail(status, message);
    ApiStyle style = request_.style();
    json body = json::parse(error_body(style, status, message));
    if (style == ApiStyle::kAnthropic) return sse_event("error", body);
    return sse_data(body) + sse_done();
  }

  const ResponseContext& ctx_;
  const GenerationRequest& request_;
  http::DataSink& sink_;
  AnthropicEventStream anthropic_;
  ResponsesEventStream responses_;
  size_t text_offset_;
  Clock::time_point last_write_ = Clock::now();
};

void stream_response(http::Response& res, State& state, ResponseContext ctx) {
  state.metrics.add_in_flight(1);
  auto shared = std::make_shared<ResponseContext>(std::move(ctx));
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [shared](size_t, http::DataSink& sink) { return StreamSession(*shared, sink).run(); },
      [shared, &state](bool) {
        shared->job->cancel();  // no-op when finished; stops generation if the stream broke
        state.metrics.add_in_flight(-1);
      });
}

using Parser = std::function<GenerationRequest(const nlohmann::ordered_json&,
                                               const SamplingDefaults&, const ImageReading&)>;

void handle_generation(const http::Request& req, http::Response& res, State& state, Parser parse) {
  std::shared_ptr<const ModelRuntime> runtime = state.ready_runtime();
  nlohmann::ordered_json body = parse_body(req.body);
  // The model is checked first, so a request for another model is told that, not a schema error.
  state.check_model(requested_model(body), *runtime);
  GenerationRequest r = parse(body, state.options.sampling, state.image_reading(*runtime));
  // The rules see the messages as the client sent them; placement then fits them to the template.
  normalize_and_record(r, state.options.prompt_normalization, state.metrics);
  place_system_messages(r.messages, state.template_takes_later_system);
  RenderedPrompt prompt = render_prompt(r, *runtime);
  // A runtime that reads images but has no encoder (a test's fake model) says so.
  if (!prompt.images.empty() && !runtime->encode_images) {
    throw ApiError(400, "this server reads images but has no vision encoder", "messages");
  }
  apply_context_limit(r, static_cast<int64_t>(prompt.ids.size()), state.context_limit(*runtime));
  const uint64_t uid = request_uid(res);
  ResponseContext ctx;
  ctx.meta = {response_id(r.route, uid), runtime->model_id, unix_seconds(), r.omit_reasoning_text};
  ctx.runtime = runtime;
  ctx.keepalive_seconds = state.settings.keepalive_seconds;
  ctx.responses = &state.responses;
  bool stream = r.stream;
  RequestOrigin origin = request_origin(header_lookup(req), r);
  // A schema or grammar is compiled now: what is wrong with it is this request's 400.
  std::shared_ptr<ReplyGrammars> grammars;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    grammars = state.reply_grammars;
  }
  auto reply_grammar = grammars ? grammars->bind(r.reply_format, uid) : nullptr;
  auto tool_call_grammar = grammars
                               ? grammars->bind_tool_calls(r, runtime->tool_call_format,
                                                           state.options.tool_call_grammar, uid)
                               : nullptr;
  ctx.job = std::make_shared<GenerationJob>(uid, std::move(r), std::move(prompt), std::move(origin),
                                            std::move(reply_grammar), std::move(tool_call_grammar));
  state.ready_scheduler().submit(ctx.job);
  if (stream) {
    stream_response(res, state, std::move(ctx));
  } else {
    set_json(res, whole_response(ctx, req));
  }
}

}  // namespace

void add_generation_routes(http::Server& http, State& state) {
  // A generation that reaches the engine logs its HIT/MISS line; only rejections log here.
  add_route(http, state, "POST",
            {"/v1/chat/completions", ApiStyle::kOpenAI, true, RequestLog::kFailures},
            [](const auto& req, auto& res, State& s) {
              handle_generation(req, res, s, [](const auto& body, const auto& d, const auto& i) {
                return parse_chat_request(body, d, i);
              });
            });
  add_route(http, state, "POST",
            {"/v1/completions", ApiStyle::kOpenAI, true, RequestLog::kFailures},
            [](const auto& req, auto& res, State& s) {
              handle_generation(req, res, s, [](const auto& body, const auto& d, const auto&) {
                return parse_completion_request(body, d);
              });
            });
  add_route(http, state, "POST",
            {"/v1/messages", ApiStyle::kAnthropic, true, RequestLog::kFailures},
            [](const auto& req, auto& res, State& s) {
              handle_generation(req, res, s, [](const auto& body, const auto& d, const auto& i) {
                return parse_messages_request(body, d, i);
              });
            });
  add_route(http, state, "POST", {"/v1/responses", ApiStyle::kOpenAI, true, RequestLog::kFailures},
            [](const auto& req, auto& res, State& s) {
              handle_generation(
                  req, res, s, [&s](const auto& body, const auto& defaults, const auto& images) {
                    return parse_responses_request(body, defaults, s.responses, images);
                  });
            });
}

}  // namespace qmlx::server
