#include "server/api_server.h"

#include <algorithm>
#include <csignal>
#include <stdexcept>

#include "base/error.h"
#include "base/logging.h"
#include "server/api_server_state.h"
#include "server/auth.h"
#include "server/lingering_close.h"
#include "server/sse.h"
#include "server/system_message_placement.h"

namespace qmlx::server {
namespace {

constexpr size_t kHttpThreads = 64;

bool is_anthropic_path(const std::string& path) { return path.rfind("/v1/messages", 0) == 0; }

ApiStyle style_for(const std::string& path) {
  return is_anthropic_path(path) ? ApiStyle::kAnthropic : ApiStyle::kOpenAI;
}

std::string request_body_limit_message(const State& state) {
  return "request body exceeds the limit of " + std::to_string(state.options.max_body_mb) +
         " MB (--max-body-mb)";
}

// 413 before reading the body when Content-Length already says it is too big. The unread body
// makes the connection unusable, so the answer says it closes (see lingering_close.h).
httplib::Server::HandlerResponse check_body_size(State& state, const httplib::Request& req,
                                                 httplib::Response& res) {
  size_t limit = size_t(state.options.max_body_mb) << 20;
  auto length = req.get_header_value("Content-Length");
  if (!length.empty() && std::strtoull(length.c_str(), nullptr, 10) > limit) {
    set_error(res, style_for(req.path), 413, request_body_limit_message(state));
    res.set_header("Connection", "close");
    state.record_answered(req, req.path, 413, request_body_limit_message(state));
    return httplib::Server::HandlerResponse::Handled;
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

// `curl -d` and Python's urllib label any body application/x-www-form-urlencoded, and httplib
// caps such bodies at 8 KB (CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH, compiled into
// Debian's library): every real conversation would get a 413. Every POST route here takes JSON,
// so the label is corrected before httplib reads the body. The Request is httplib's own
// non-const local, handed to the pre-routing handler as const.
void treat_form_bodies_as_json(const httplib::Request& req) {
  auto& headers = const_cast<httplib::Headers&>(req.headers);
  auto it = headers.find("Content-Type");
  if (it != headers.end() && it->second.rfind("application/x-www-form-urlencoded", 0) == 0) {
    it->second = "application/json";
  }
}

// Fills httplib's own bodiless error responses (404 no route, 413 chunked body too big...).
// Answers Handled for any whole body: on the paths that skip routing (the answer to
// `Expect: 100-continue`) that is what makes httplib send a Content-Length, without which the
// client cannot tell where the response ends.
httplib::Server::HandlerResponse fill_error_body(State& state, const httplib::Request& req,
                                                 httplib::Response& res) {
  if (res.is_chunked_content_provider_) return httplib::Server::HandlerResponse::Unhandled;
  if (!res.body.empty()) return httplib::Server::HandlerResponse::Handled;
  std::string message = res.status == 404   ? "no route for " + req.method + " " + req.path
                        : res.status == 413 ? request_body_limit_message(state)
                                            : "request failed";
  set_error(res, style_for(req.path), res.status, message);
  state.record_answered(req, res.status == 404 ? "unknown" : req.path, res.status, message);
  return httplib::Server::HandlerResponse::Handled;
}

void add_method_not_allowed(httplib::Server& http, State& state, const std::string& path,
                            const std::string& allowed) {
  auto reject = [&state, path, allowed](const httplib::Request& req, httplib::Response& res) {
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
void log_answered(uint64_t uid, const httplib::Request& req, int status,
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

std::unique_ptr<httplib::Server> new_http_server() {
  auto http = std::make_unique<httplib::Server>();
  http->new_task_queue = [] { return new httplib::ThreadPool(kHttpThreads); };
  http->set_keep_alive_max_count(1000);
  // Idle keep-alive connections hold a worker; a short timeout keeps shutdown quick.
  http->set_keep_alive_timeout(2);
  http->set_read_timeout(600, 0);
  http->set_write_timeout(600, 0);
  return http;
}

int bind(httplib::Server& http, const std::string& host, int port, const char* what) {
  if (port == 0) {
    int bound = http.bind_to_any_port(host);
    if (bound < 0) throw Error(std::string("cannot bind the ") + what + " on " + host);
    return bound;
  }
  if (!http.bind_to_port(host, port)) {
    throw Error(std::string("cannot bind the ") + what + " to " + host + ":" +
                std::to_string(port) + " (in use?)");
  }
  return port;
}

}  // namespace

void set_json(httplib::Response& res, const nlohmann::json& body) {
  res.set_content(dump_json(body), "application/json");
}

void set_error(httplib::Response& res, ApiStyle style, int status, const std::string& message,
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

void State::check_model(const std::string& model, const ModelRuntime& rt) const {
  if (model.empty() || !options.strict_model_id || model == rt.model_id) return;
  const auto& aliases = options.model_aliases;
  if (std::find(aliases.begin(), aliases.end(), model) != aliases.end()) return;
  throw ApiError(404,
                 "model '" + model + "' not found; this server serves '" + rt.model_id +
                     "' (--strict-model-id)",
                 "model");
}

uint64_t State::record_answered(const httplib::Request& req, const std::string& route, int status,
                                const std::string& error_message) {
  uint64_t uid = next_uid.fetch_add(1);
  metrics.record_request(route, status);
  log_answered(uid, req, status, error_message);
  return uid;
}

uint64_t request_uid(const httplib::Response& res) {
  return std::strtoull(res.get_header_value(kRequestIdHeader).c_str(), nullptr, 10);
}

namespace {

httplib::Server::Handler wrap_route(State& state, const RouteSpec& spec, RouteHandler handler) {
  return [&state, spec, handler](const httplib::Request& req, httplib::Response& res) {
    state.metrics.add_in_flight(1);
    // The uid is taken now so that a generation's HIT/MISS line and its response agree.
    const bool logged = spec.log != RequestLog::kNone;
    const uint64_t uid = logged ? state.next_uid.fetch_add(1) : 0;
    if (logged) res.set_header(kRequestIdHeader, std::to_string(uid));
    std::string error_message;
    try {
      if (spec.needs_auth) {
        AuthHeaders headers{req.get_header_value("Authorization"),
                            req.get_header_value("x-api-key")};
        if (auto denied =
                check_auth(headers, spec.style == ApiStyle::kAnthropic, state.options.api_key)) {
          throw ApiError(401, *denied);
        }
      }
      handler(req, res, state);
    } catch (const ApiError& e) {
      set_error(res, spec.style, e.status(), e.what(), e.param());
      error_message = e.what();
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
    if (spec.log == RequestLog::kEveryRequest ||
        (spec.log == RequestLog::kFailures && status >= 400)) {
      log_answered(uid, req, status, error_message);
    }
  };
}

}  // namespace

void add_routes(httplib::Server& http, State& state, const RouteSpec& spec,
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

void add_route(httplib::Server& http, State& state, const std::string& method,
               const RouteSpec& spec, RouteHandler handler) {
  add_routes(http, state, spec, {{method, std::move(handler)}});
}

ApiServer::ApiServer(ServerOptions options, MetricsRegistry& registry, ApiServerSettings settings)
    : state_(std::make_unique<State>(std::move(options), registry, settings)),
      http_(new_http_server()) {
  State& state = *state_;
  http_->set_payload_max_length(size_t(state.options.max_body_mb) << 20);
  http_->set_pre_routing_handler([&state](const httplib::Request& req, httplib::Response& res) {
    treat_form_bodies_as_json(req);
    return check_body_size(state, req, res);
  });
  // Clients that ask first (Expect: 100-continue, as curl does for big bodies) get the 413
  // instead of the go-ahead, so they never send the body.
  http_->set_expect_100_continue_handler(
      [&state](const httplib::Request& req, httplib::Response& res) {
        return check_body_size(state, req, res) == httplib::Server::HandlerResponse::Handled ? 413
                                                                                             : 100;
      });
  http_->set_error_handler(httplib::Server::HandlerWithResponse(
      [&state](const httplib::Request& req, httplib::Response& res) {
        return fill_error_body(state, req, res);
      }));
  // httplib calls the logger on the connection's thread right after the response is written:
  // the one place a connection whose body was refused can be closed without losing the answer.
  http_->set_logger([](const httplib::Request& req, const httplib::Response&) {
    if (request_body_left_unread(req)) close_connection_after_response(req);
  });
  add_info_routes(*http_, state);
  add_generation_routes(*http_, state);
  add_cache_admin_routes(*http_, state);
  if (state.options.metrics_port != 0) {
    metrics_http_ = new_http_server();
    MetricsRegistry& reg = registry;
    metrics_http_->Get("/metrics", [&reg](const httplib::Request&, httplib::Response& res) {
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
  if (metrics_http_) {
    metrics_port_ = bind(*metrics_http_, options.host,
                         options.metrics_port < 0 ? 0 : options.metrics_port, "metrics port");
    metrics_thread_ = std::thread([this] { metrics_http_->listen_after_bind(); });
  }
  http_thread_ = std::thread([this] { http_->listen_after_bind(); });
}

void ApiServer::set_ready(std::shared_ptr<const ModelRuntime> runtime, CacheHooks& hooks,
                          PrefixCache* cache) {
  auto scheduler = std::make_unique<Scheduler>(*runtime, hooks, &state_->metrics,
                                               state_->options.max_queue, state_->settings.runner);
  const bool later_system = template_takes_later_system(*runtime);
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->template_takes_later_system = later_system;
  state_->runtime = std::move(runtime);
  state_->scheduler = std::move(scheduler);
  state_->cache = cache;
}

void ApiServer::stop(std::chrono::milliseconds grace) {
  if (http_thread_.joinable()) http_->stop();
  Scheduler* scheduler = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    scheduler = state_->scheduler.get();
  }
  if (scheduler) scheduler->stop(grace);
  if (http_thread_.joinable()) http_thread_.join();
  if (metrics_http_ && metrics_thread_.joinable()) {
    metrics_http_->stop();
    metrics_thread_.join();
  }
}

}  // namespace qmlx::server
