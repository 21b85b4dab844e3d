// The routes that do not generate: GET /health and /v1/models; POST /tokenize, /detokenize
// and /apply-template (shaped like llama.cpp's); POST /v1/messages/count_tokens (Anthropic).
#include <cmath>

#include "base/error.h"
#include "server/anthropic/anthropic_request.h"
#include "server/chat/chat_request.h"
#include "server/common/request_fields.h"
#include "server/prompt/system_message_placement.h"
#include "server/routes/api_server_state.h"
#include "server/scheduling/prompt_images.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;

// 200 once the model is loaded, with the queue: a server whose jobs stopped moving shows it
// here (oldest_wait_ms grows; stalled once the scheduler's watchdog has logged a job).
void health(const http::Request&, http::Response& res, State& state) {
  Scheduler* scheduler;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    scheduler = state.runtime ? state.scheduler.get() : nullptr;
  }
  if (!scheduler) {
    res.status = 503;
    set_json(res,
             {{"status", "loading"}, {"error", {{"code", 503}, {"message", "Loading model"}}}});
    return;
  }
  const QueueStatus queue = scheduler->status();
  set_json(res, {{"status", "ok"},
                 {"queue",
                  {{"running", queue.running},
                   {"waiting", queue.waiting},
                   {"oldest_wait_ms", std::llround(queue.oldest_wait_ms)},
                   {"stalled", queue.stalled}}}});
}

json model_entry(const std::string& id, int64_t context_length) {
  return {{"id", id},           {"object", "model"},
          {"type", "model"},    {"display_name", id},
          {"created", 0},       {"created_at", "1970-01-01T00:00:00Z"},
          {"owned_by", "qmlx"}, {"context_length", context_length}};
}

// The served model, then its --model-alias names (the same model under other names).
void models(const http::Request&, http::Response& res, State& state) {
  auto runtime = state.ready_runtime();
  const int64_t context = state.context_limit(*runtime);
  json data = json::array({model_entry(runtime->model_id, context)});
  for (const std::string& alias : state.options.model_aliases) {
    if (alias != runtime->model_id) data.push_back(model_entry(alias, context));
  }
  set_json(res, {{"object", "list"},
                 {"data", data},
                 {"has_more", false},
                 {"first_id", data.front()["id"]},
                 {"last_id", data.back()["id"]}});
}

void tokenize(const http::Request& req, http::Response& res, State& state) {
  auto runtime = state.ready_runtime();
  TokenizeRequest r = parse_tokenize_request(parse_body(req.body));
  std::vector<int32_t> ids = runtime->tokenizer->encode(r.content, r.parse_special);
  json tokens = json::array();
  for (int32_t id : ids) {
    if (r.with_pieces)
      tokens.push_back({{"id", id}, {"piece", runtime->tokenizer->token_bytes(id)}});
    else
      tokens.push_back(id);
  }
  set_json(res, {{"tokens", tokens}});
}

void detokenize(const http::Request& req, http::Response& res, State& state) {
  auto runtime = state.ready_runtime();
  std::vector<int32_t> ids =
      parse_detokenize_request(parse_body(req.body), runtime->tokenizer->vocab_size());
  set_json(res, {{"content", runtime->tokenizer->decode(ids)}});
}

void apply_template(const http::Request& req, http::Response& res, State& state) {
  auto runtime = state.ready_runtime();
  auto body = parse_body(req.body);
  GenerationRequest r =
      parse_chat_request(body, state.options.sampling, state.image_reading(*runtime));
  place_system_messages(r.messages, state.template_takes_later_system);
  bool add_generation_prompt = bool_field(body, "add_generation_prompt", true);
  RenderedPrompt prompt;
  try {
    prompt = runtime->render_chat(r.messages, r.tools, add_generation_prompt, r.template_kwargs);
    place_prompt_images(prompt, r.images, runtime->image_pad_id);
  } catch (const Error& e) {
    throw ApiError(400, std::string("cannot render the prompt: ") + e.what());
  }
  nlohmann::json out = {{"prompt", prompt.text},
                        {"tokens", prompt.ids},
                        {"last_message_end", prompt.last_message_end},
                        {"last_user_start", prompt.last_user_start},
                        {"edit_points", prompt.edit_points}};
  // Where each image's pads are (tokens holds them as image pad keys).
  for (const PromptImage& image : prompt.images) {
    out["images"].push_back({{"first_row", image.first_row}, {"pads", image.pads()}});
  }
  set_json(res, out);
}

void count_tokens(const http::Request& req, http::Response& res, State& state) {
  auto runtime = state.ready_runtime();
  auto body = parse_body(req.body);
  state.check_model(requested_model(body), *runtime);
  GenerationRequest r;
  parse_anthropic_conversation(body, r, state.image_reading(*runtime));
  place_system_messages(r.messages, state.template_takes_later_system);
  RenderedPrompt prompt;
  try {
    prompt = runtime->render_chat(r.messages, r.tools, true, r.template_kwargs);
    place_prompt_images(prompt, r.images, runtime->image_pad_id);
  } catch (const Error& e) {
    throw ApiError(400, std::string("cannot render the prompt: ") + e.what());
  }
  set_json(res, {{"input_tokens", prompt.ids.size()}});
}

}  // namespace

void add_info_routes(http::Server& http, State& state) {
  add_route(http, state, "GET", {"/health", ApiStyle::kOpenAI, false, RequestLog::kNone}, health);
  add_route(http, state, "GET", {"/v1/models", ApiStyle::kOpenAI}, models);
  add_route(http, state, "POST", {"/tokenize", ApiStyle::kOpenAI}, tokenize);
  add_route(http, state, "POST", {"/detokenize", ApiStyle::kOpenAI}, detokenize);
  add_route(http, state, "POST", {"/apply-template", ApiStyle::kOpenAI}, apply_template);
  add_route(http, state, "POST", {"/v1/messages/count_tokens", ApiStyle::kAnthropic}, count_tokens);
}

}  // namespace qmlx::server
