#include "server/routes/api_server.h"

#include <algorithm>
#include <csignal>
#include <stdexcept>

#include "base/error.h"
#include "base/logging.h"
#include "server/prompt/system_message_placement.h"
#include "server/routes/api_server_state.h"
#include "server/routes/auth.h"
#include "server/routes/sse.h"
#include "server/scheduling/batch_memory.h"

namespace qmlx::server {
namespace {

constexpr size_t kHttpThreads = 64;

bool is_anthropic_path(const std::string& path) { return path.rfind("/v1/messages", 0) == 0; }

ApiStyle style_for(const std::string& path) {
  return is_anthropic_path(path) ? ApiStyle::kAnthropic : ApiStyle::kOpenAI;
}

void add_method_not_allowed(http::Server& http, State& state, const std::string& path,
                            const std::string& allowed) {
  auto reject = [&state, path, allowed](const http::Request& req, http::Response& res) {
    res.set_header("Allow", allowed);
    std::string message =
        "method " + req.method + " not allowed on " + path + " (use " + allowed + ")";
    set_error(res, style_for(path), 405, message);
    state.record_answered(req, path, 405, message);
  };
  // `allowed` is one method or a list ("GET, DELETE").
  auto allows = [&allowed](const char* method) {
    return allowed.find(method) != std::string::npos;
  };
  if (!allows("GET")) http.Get(path, reject);
  if (!allows("POST")) http.Post(path, reject);
  http.Put(path, reject);
  if (!allows("DELETE")) http.Delete(path, reject);
  http.Patch(path, reject);
}

// Failures are warnings (a client's mistake) or errors (ours), so they stand out in the log.
void log_answered(uint64_t uid, const http::Request& req, int status,
                  const std::string& error_message) {
  std::string line = answered_request_log_line(uid, req.method, req.path, status, error_message);
  if (status >= 500) {
    log_error(line);
  } else if (status >= 400) {
    log_warn(line);
  } else {
    log_info(line);
  }
}

// Heads and bodies are read by the transport's event loop, so slow or idle clients hold no
// thread; 64 workers run handlers (a generation waits in the scheduler, not here).
std::unique_ptr<http::Server> new_http_server(const ServerOptions& options, size_t workers) {
  http::ServerSettings settings;
  settings.read.max_body_bytes = size_t(options.max_body_mb) << 20;
  settings.worker_threads = workers;
  return std::make_unique<http::Server>(settings);
}

int bind(http::Server& http, const std::string& host, int port, const char* what) {
  try {
    return http.bind(host, port);
  } catch (const Error& e) {
    throw Error(std::string("cannot bind the ") + what + ": " + e.what());
  }
}

// The body of an answer the transport gave without a route (404, 408, 413, 431, ...), in the
// API shape of the path, with the request's one log line.
void fill_transport_error(State& state, const http::Request& req, http::Response& res,
                          const std::string& reason) {
  std::string message = res.status == 413 ? reason + " (--max-body-mb)" : reason;
  set_error(res, style_for(req.path), res.status, message);
  // The path is the client's, possibly arbitrary: the metrics label stays bounded.
  const uint64_t uid = state.record_answered(req, "unknown", res.status, message);
  res.set_header(kRequestIdHeader, std::to_string(uid));
}

}  // namespace

void set_json(http::Response& res, const nlohmann::json& body) {
  res.set_content(dump_json(body), "application/json");
}

void set_error(http::Response& res, ApiStyle style, int status, const std::string& message,
               const std::string& param) {
  res.status = status;
  res.set_content(error_body(style, status, message, param), "application/json");
}

std::shared_ptr<const ModelRuntime> State::ready_runtime() {
  std::lock_guard<std::mutex> lock(mutex);
  if (!runtime) throw ApiError(503, "the model is still loading");
  return runtime;
}

Scheduler& State::ready_scheduler() {
  std::lock_guard<std::mutex> lock(mutex);
  if (!scheduler) throw ApiError(503, "the model is still loading");
  return *scheduler;
}

int64_t State::context_limit(const ModelRuntime& rt) const {
  if (options.max_context > 0) return options.max_context;
  return rt.context_length > 0 ? rt.context_length : 32768;
}

ImageReading State::image_reading(const ModelRuntime& rt) const {
  return server::image_reading(rt.vision_unavailable, rt.vision_preprocess,
                               options.max_image_pixels, options.max_images_per_request,
                               options.image_max_tokens);
}

void State::check_model(const std::string& model, const ModelRuntime& rt) const {
  if (model.empty() || !options.strict_model_id || model == rt.model_id) return;
  const auto& aliases = options.model_aliases;
  if (std::find(aliases.begin(), aliases.end(), model) != aliases.end()) return;
  throw ApiError(404,
                 "model '" + model + "' not found; this server serves '" + rt.model_id +
                     "' (--strict-model-id)",
                 "model");
}

uint64_t State::record_answered(const http::Request& req, const std::string& route, int status,
                                const std::string& error_message) {
  uint64_t uid = next_uid.fetch_add(1);
  metrics.record_request(route, status);
  log_answered(uid, req, status, error_message);
  return uid;
}

HeaderLookup header_lookup(const http::Request& req) {
  return [&req](const char* name) { return req.get_header_value(name); };
}

uint64_t request_uid(const http::Response& res) {
  return std::strtoull(res.get_header_value(kRequestIdHeader).c_str(), nullptr, 10);
}

namespace {

http::Server::Handler wrap_route(State& state, const RouteSpec& spec, RouteHandler handler) {
  return [&state, spec, handler](const http::Request& req, http::Response& res) {
    state.metrics.add_in_flight(1);
    // The uid is taken now so that a generation's HIT/MISS line and its response agree.
    const bool logged = spec.log != RequestLog::kNone;
    const uint64_t uid = logged ? state.next_uid.fetch_add(1) : 0;
    if (logged) res.set_header(kRequestIdHeader, std::to_string(uid));
    std::string error_message;
    bool logged_by_job = false;
    try {
      if (spec.needs_auth) {
        AuthHeaders headers{req.get_header_value("Authorization"),
                            req.get_header_value("x-api-key")};
        if (auto denied =
                check_auth(headers, spec.style == ApiStyle::kAnthropic, state.options.api_key)) {
          throw ApiError(401, *denied);
        }
      }
      if (spec.path.rfind("/admin/", 0) == 0 &&
          admin_routes_closed(state.options.host, state.options.api_key)) {
        throw ApiError(403, "the admin routes are closed: this server listens on " +
                                state.options.host + " without --api-key (set one to use them)");
      }
      handler(req, res, state);
    } catch (const ApiError& e) {
      set_error(res, spec.style, e.status(), e.what(), e.param());
      error_message = e.what();
      logged_by_job = e.logged_by_job();
      // Overload (429) and loading (503) are worth retrying: say when.
      if (e.status() == 429) res.set_header("Retry-After", "1");
      if (e.status() == 503) res.set_header("Retry-After", "5");
    } catch (const Error& e) {
      set_error(res, spec.style, 400, e.what());
      error_message = e.what();
    } catch (const std::exception& e) {
      error_message = std::string("internal error: ") + e.what();
      set_error(res, spec.style, 500, error_message);
    }
    state.metrics.add_in_flight(-1);
    const int status = res.status == -1 ? 200 : res.status;
    state.metrics.record_request(spec.path, status);
    if (!logged_by_job && (spec.log == RequestLog::kEveryRequest ||
                           (spec.log == RequestLog::kFailures && status >= 400))) {
      log_answered(uid, req, status, error_message);
    }
    // A generation request refused before the engine: the page's timeline shows it too.
    if (!logged_by_job && spec.log == RequestLog::kFailures && status >= 400 &&
        spec.path.rfind("/v1/", 0) == 0) {
      state.activity.record_rejected(uid, spec.path, header_origin(header_lookup(req)), status,
                                     error_message);
    }
  };
}

}  // namespace

void add_routes(http::Server& http, State& state, const RouteSpec& spec,
                const std::vector<std::pair<std::string, RouteHandler>>& methods) {
  std::string allowed;
  for (const auto& [method, handler] : methods) {
    auto wrapped = wrap_route(state, spec, handler);
    if (method == "GET") {
      http.Get(spec.path, wrapped);
    } else if (method == "POST") {
      http.Post(spec.path, wrapped);
    } else if (method == "DELETE") {
      http.Delete(spec.path, wrapped);
    } else {
      throw std::logic_error("add_routes: unsupported method " + method);
    }
    allowed += (allowed.empty() ? "" : ", ") + method;
  }
  add_method_not_allowed(http, state, spec.path, allowed);
}

void add_route(http::Server& http, State& state, const std::string& method, const RouteSpec& spec,
               RouteHandler handler) {
  add_routes(http, state, spec, {{method, std::move(handler)}});
}

ApiServer::ApiServer(ServerOptions options, MetricsRegistry& registry, ApiServerSettings settings)
    : state_(std::make_unique<State>(std::move(options), registry, settings)),
      http_(new_http_server(state_->options, kHttpThreads)) {
  State& state = *state_;
  http_->set_error_handler(
      [&state](const http::Request& req, http::Response& res, const std::string& reason) {
        fill_transport_error(state, req, res, reason);
      });
  // The transport's own counts: slow or hostile clients show here, not in request metrics.
  http::Server& http = *http_;
  registry.gauge("qmlx_http_connections", "Open connections on the API port").set_function([&http] {
    return double(http.stats().open_connections);
  });
  Counter& evicted = registry.counter(
      "qmlx_http_connections_evicted_total",
      "Connections closed to make room for a newer one from the same address (or any, when "
      "the total limit is reached)");
  Counter& timed_out = registry.counter(
      "qmlx_http_request_timeouts_total",
      "Requests refused with 408: a head that did not arrive in time or a body that stalled");
  registry.on_scrape([&http, &evicted, &timed_out] {
    http::Server::Stats stats = http.stats();
    evicted.set_total(double(stats.evicted_connections));
    timed_out.set_total(double(stats.timed_out_connections));
  });
  add_info_routes(*http_, state);
  add_generation_routes(*http_, state);
  add_cache_admin_routes(*http_, state);
  if (state.options.ui_enabled) add_status_page_routes(*http_, state);
  if (state.options.metrics_port != 0) {
    metrics_http_ = new_http_server(state.options, 4);
    MetricsRegistry& reg = registry;
    metrics_http_->Get("/metrics", [&reg](const http::Request&, http::Response& res) {
      res.set_content(reg.expose(), "text/plain; version=0.0.4; charset=utf-8");
    });
  }
}

ApiServer::~ApiServer() { stop(std::chrono::milliseconds(0)); }

void ApiServer::start() {
  // A client that disconnects makes send() raise SIGPIPE; the failed write is handled instead.
  std::signal(SIGPIPE, SIG_IGN);
  const ServerOptions& options = state_->options;
  port_ = bind(*http_, options.host, options.port, "API port");
  if (admin_routes_closed(options.host, options.api_key)) {
    log_warn("--host " + options.host +
             " without --api-key: anyone who can reach this port can use the model with any "
             "key; the /admin routes stay closed until --api-key is set");
  }
  if (metrics_http_) {
    metrics_port_ = bind(*metrics_http_, options.host,
                         options.metrics_port < 0 ? 0 : options.metrics_port, "metrics port");
    metrics_http_->start();
  }
  http_->start();
}

void ApiServer::set_ready(std::shared_ptr<const ModelRuntime> runtime, CacheHooks& hooks,
                          PrefixCache* cache) {
  const ServerOptions& options = state_->options;
  SchedulerLimits limits;
  limits.parallel = options.parallel;
  const int64_t context = state_->context_limit(*runtime);
  const BatchMemoryBudget budget = batch_memory_budget(
      options.max_batch_memory_mb, options.parallel, context,
      sequence_state_bytes(runtime->state_layout, context, runtime->speculative_tokens),
      runtime->device_state_memory);
  limits.memory_budget_bytes = budget.bytes;
  limits.memory_budget_source = budget.source;
  log_info("batch memory budget: " + std::to_string(budget.bytes >> 20) +
           " MiB of sequence state (" + budget.source + ")");
  scheduler_limits_ = limits;
  auto scheduler = std::make_unique<Scheduler>(*runtime, hooks, &state_->metrics, options.max_queue,
                                               state_->settings.runner, limits, &state_->activity);
  const bool later_system = template_takes_later_system(*runtime);
  auto grammars =
      std::make_shared<ReplyGrammars>(runtime->tokenizer, runtime->stop_token_ids,
                                      [metrics = &state_->metrics](const std::string& keyword) {
                                        metrics->record_dropped_keyword(keyword);
                                      });
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->template_takes_later_system = later_system;
  state_->runtime = std::move(runtime);
  state_->scheduler = std::move(scheduler);
  state_->cache = cache;
  state_->limits = limits;
  state_->reply_grammars = std::move(grammars);
}

void ApiServer::stop(std::chrono::milliseconds grace) {
  http_->stop_accepting();
  Scheduler* scheduler = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    scheduler = state_->scheduler.get();
  }
  if (scheduler) scheduler->stop(grace);
  // Streams end once the scheduler has finished or cut their jobs; what is left is cut.
  http_->shutdown(grace);
  if (metrics_http_) metrics_http_->shutdown(std::chrono::milliseconds(0));
}

}  // namespace qmlx::server
