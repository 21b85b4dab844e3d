// The status page: GET / serves one self-contained page (HTML, CSS and JavaScript embedded in
// the binary, ui/), which polls GET /admin/ui/status with the admin key and draws the server,
// the requests, the conversations and the cache. The shell carries no data and needs no key;
// everything it shows comes from the JSON route, under the admin routes' rules (auth, and
// closed on a non-loopback --host without --api-key). Pin, unpin and delete use the cache
// admin routes. --no-ui registers none of these.
//
// The page inserts client-sent values (user agents, session ids, prompt text) as text only,
// and every response here forbids inline script, framing and MIME sniffing.
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "base/error.h"
#include "server/routes/api_server_state.h"
#include "server/ui/status_page_assets.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;

// Scripts and styles only from this origin's own files (no inline code, so an injected tag
// runs nothing), data only from this origin, never inside a frame.
constexpr char kContentSecurityPolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

void set_page_headers(http::Response& res) {
  res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cache-Control", "no-store");
}

RouteHandler asset(std::string_view body, const char* content_type) {
  return [body, content_type](const http::Request&, http::Response& res, State&) {
    set_page_headers(res);
    res.set_content(std::string(body), content_type);
  };
}

// `since=<seq>` from the query: only newer requests and changed conversations are sent.
uint64_t since_of(const http::Request& req) {
  const std::string& q = req.query;
  for (size_t at = 0; at < q.size();) {
    size_t end = q.find('&', at);
    if (end == std::string::npos) end = q.size();
    if (q.compare(at, 6, "since=") == 0) {
      const std::string value = q.substr(at + 6, end - at - 6);
      char* stop = nullptr;
      const unsigned long long n = std::strtoull(value.c_str(), &stop, 10);
      if (value.empty() || *stop != '\0') throw ApiError(400, "since must be a number", "since");
      return n;
    }
    at = end + 1;
  }
  return 0;
}

json server_json(State& state, const std::shared_ptr<const ModelRuntime>& runtime,
                 const SchedulerLimits& limits) {
  const ServerOptions& o = state.options;
  const double uptime =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - state.started).count();
  json server = {{"uptime_seconds", std::llround(uptime)},
                 {"backend", runtime ? runtime->backend : std::string("cpu")},
                 {"kv_cache_dtype", dtype_name(o.kv_cache_dtype)},
                 {"show_text", o.ui_show_text},
                 {"ready", runtime != nullptr}};
  if (!runtime) return server;
  server.update(json{{"model", runtime->model_id},
                     {"architecture", runtime->architecture},
                     {"weights", runtime->description},
                     {"context_length", state.context_limit(*runtime)},
                     {"slots", limits.parallel},
                     {"memory_budget_bytes", limits.memory_budget_bytes},
                     {"max_step_ms", runtime->max_step_ms},
                     {"speculative_tokens", runtime->speculative_tokens}});
  return server;
}

json cache_json(PrefixCache& cache) {
  const CacheConfig& config = cache.config();
  json out = cache.stats().to_json();
  out["limits"] = {{"memory_bytes", config.memory_prefix_cache ? config.memory_cap_bytes() : 0},
                   {"disk_bytes", config.disk_kv_cache ? config.disk_cap_bytes() : 0},
                   {"shared", config.shared.enabled}};
  return out;
}

void status(const http::Request& req, http::Response& res, State& state) {
  const uint64_t since = since_of(req);
  std::shared_ptr<const ModelRuntime> runtime;
  Scheduler* scheduler = nullptr;
  PrefixCache* cache = nullptr;
  SchedulerLimits limits;
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    runtime = state.runtime;
    scheduler = runtime ? state.scheduler.get() : nullptr;
    cache = state.cache;
    limits = state.limits;
  }
  json body = {{"server", server_json(state, runtime, limits)},
               {"activity", state.activity.to_json(since, state.options.ui_show_text)},
               {"history",
                "kept in this server's memory only (the latest requests and conversations); "
                "lost on restart"}};
  if (scheduler) {
    const QueueStatus queue = scheduler->status();
    body["queue"] = {{"running", queue.running},
                     {"waiting", queue.waiting},
                     {"oldest_wait_ms", std::llround(queue.oldest_wait_ms)},
                     {"stalled", queue.stalled}};
  }
  body["cache"] = cache ? cache_json(*cache) : json(nullptr);
  set_page_headers(res);
  // Client-sent text may hold invalid UTF-8: replaced, never a failed page.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

}  // namespace

void add_status_page_routes(http::Server& http, State& state) {
  // The shell and its files carry no data: no key, and no log line per page load or poll.
  const auto page = [](const char* path) {
    return RouteSpec{path, ApiStyle::kOpenAI, false, RequestLog::kFailures};
  };
  add_route(http, state, "GET", page("/"), asset(status_page_html(), "text/html; charset=utf-8"));
  add_route(http, state, "GET", page("/ui/status.js"),
            asset(status_page_js(), "text/javascript; charset=utf-8"));
  add_route(http, state, "GET", page("/ui/status.css"),
            asset(status_page_css(), "text/css; charset=utf-8"));
  add_route(http, state, "GET",
            {"/admin/ui/status", ApiStyle::kOpenAI, true, RequestLog::kFailures}, status);
}

}  // namespace qmlx::server
