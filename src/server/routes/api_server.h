// ApiServer: the HTTP front end on one port (plus the optional metrics port). It owns the
// routes, auth, error shapes, body limits and the scheduler. It listens before the model is
// ready, so /health can answer 503 during a long load; set_ready() then enables the model
// routes.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cache/prefix_cache.h"
#include "server/config/options.h"
#include "server/metrics/metrics.h"
#include "server/metrics/server_metrics.h"
#include "server/scheduling/cache_hooks.h"
#include "server/scheduling/model_runtime.h"
#include "server/scheduling/scheduler.h"

namespace qmlx::http {
class Server;
}

namespace qmlx::server {

struct ApiServerSettings {
  // A streaming response sends a keep-alive comment (OpenAI) or ping (Anthropic) after this
  // long without data, so clients waiting minutes for a cold prefill do not time out.
  double keepalive_seconds = 5.0;
  RunnerSettings runner;
};

class ApiServer {
 public:
  ApiServer(ServerOptions options, MetricsRegistry& registry, ApiServerSettings settings = {});
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Binds the API port (and the metrics port) and serves in background threads. Throws
  // qmlx::Error when a port cannot be bound. Port 0 picks a free port (see port()).
  void start();
  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }

  // The model is loaded: model routes start answering. `hooks` (and `cache`, which serves the
  // admin routes; null without a cache) must outlive the server.
  void set_ready(std::shared_ptr<const ModelRuntime> runtime, CacheHooks& hooks,
                 PrefixCache* cache = nullptr);

  // The slots and the batch memory budget set_ready gave the scheduler (for the start-up line).
  SchedulerLimits scheduler_limits() const { return scheduler_limits_; }

  // Stops accepting, lets in-flight requests finish for up to `grace` then cuts them, flushes
  // the cache hooks, and returns when every thread has ended.
  void stop(std::chrono::milliseconds grace);

  // Implementation detail shared by the route files.
  struct State;

 private:
  std::unique_ptr<State> state_;
  std::unique_ptr<http::Server> http_;
  std::unique_ptr<http::Server> metrics_http_;
  int port_ = 0;
  int metrics_port_ = 0;
  SchedulerLimits scheduler_limits_;
};

}  // namespace qmlx::server
