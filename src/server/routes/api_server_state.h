// Internal to the server: the state every route handler shares, and the route helpers the
// route files use (auth + error wrapping). Not for use outside src/server.
#pragma once

#include <functional>
#include <string>

#include "http/server.h"
#include "server/activity/activity_log.h"
#include "server/common/api_error.h"
#include "server/common/image_reading.h"
#include "server/responses/response_store.h"
#include "server/routes/api_server.h"
#include "server/scheduling/reply_grammars.h"

namespace qmlx::server {

struct ApiServer::State {
  State(ServerOptions o, MetricsRegistry& registry, ApiServerSettings s)
      : options(std::move(o)), settings(s), metrics(registry) {}

  ServerOptions options;
  ApiServerSettings settings;
  ServerMetrics metrics;
  std::atomic<uint64_t> next_uid{1};

  std::mutex mutex;
  std::shared_ptr<const ModelRuntime> runtime;  // null while the model loads
  std::unique_ptr<Scheduler> scheduler;
  PrefixCache* cache = nullptr;  // the admin routes' cache; null without one
  ResponseStore responses;       // /v1/responses: previous_response_id memory
  SchedulerLimits limits;        // the slots and memory budget set_ready gave the scheduler
  // Reply formats (JSON schemas, grammars) bound to the model's vocabulary; set with runtime.
  std::shared_ptr<ReplyGrammars> reply_grammars;
  // The status page's window onto recent requests and conversations.
  ActivityLog activity;
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // The model's chat template renders a system message after other messages (see
  // system_message_placement.h); probed once when the model is ready.
  bool template_takes_later_system = false;

  // The runtime, or ApiError(503) while loading.
  std::shared_ptr<const ModelRuntime> ready_runtime();
  Scheduler& ready_scheduler();
  // The largest prompt + max_tokens: --max-context, or the model's own length.
  int64_t context_limit(const ModelRuntime& runtime) const;
  // How this request's images are read: the model's preprocessing under the image flags.
  ImageReading image_reading(const ModelRuntime& runtime) const;
  // With --strict-model-id: 404 unless `model` is empty, the served model's id or an alias.
  // Without it a single-model server serves whatever name the client sends.
  void check_model(const std::string& model, const ModelRuntime& runtime) const;

  // Counts a request answered without the engine (or rejected) and writes its one log line;
  // returns its uid. Generation routes that reach the engine log their HIT/MISS line instead.
  uint64_t record_answered(const http::Request& req, const std::string& route, int status,
                           const std::string& error_message);
};

// The response header that tells the client its request's uid, the number in the log line.
inline constexpr char kRequestIdHeader[] = "X-Request-Id";
// The uid that the route wrapper gave this request (set in the response's headers).
uint64_t request_uid(const http::Response& res);

using State = ApiServer::State;

// Which requests of a route the wrapper logs (one line each, with a uid).
enum class RequestLog {
  kEveryRequest,
  kFailures,  // generation routes: a request that reaches the engine logs its HIT/MISS line
  kNone,      // /health: polled many times a second by scripts and load balancers; no uid
};

struct RouteSpec {
  std::string path;
  ApiStyle style = ApiStyle::kOpenAI;
  bool needs_auth = true;
  RequestLog log = RequestLog::kEveryRequest;
};

using RouteHandler = std::function<void(const http::Request&, http::Response&, State&)>;

// Registers `handler` for POST or GET on spec.path with auth, error shaping and metrics.
void add_route(http::Server& http, State& state, const std::string& method, const RouteSpec& spec,
               RouteHandler handler);
// The same for several methods on one path (GET, POST, DELETE); others answer 405.
void add_routes(http::Server& http, State& state, const RouteSpec& spec,
                const std::vector<std::pair<std::string, RouteHandler>>& methods);

// Sets an error response in the route's API shape.
void set_error(http::Response& res, ApiStyle style, int status, const std::string& message,
               const std::string& param = "");

void set_json(http::Response& res, const nlohmann::json& body);

// Route registration, one function per route file.
void add_generation_routes(http::Server& http, State& state);
void add_info_routes(http::Server& http, State& state);
void add_cache_admin_routes(http::Server& http, State& state);
void add_status_page_routes(http::Server& http, State& state);

// The request's headers as request_origin.h reads them.
HeaderLookup header_lookup(const http::Request& req);

}  // namespace qmlx::server
