// qmlx serve: the OpenAI + Anthropic HTTP server. Options are checked before any port opens;
// the port opens before the model loads (so /health answers 503 meanwhile); SIGINT/SIGTERM
// stop it cleanly with exit status 0.
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <future>
#include <optional>
#include <thread>

#include "base/logging.h"
#include "base/process.h"
#include "base/thread_pool.h"
#include "cache/config.h"
#include "cache/hash.h"
#include "cache/prefix_cache.h"
#include "cli/command.h"
#include "modelgen/demo_model.h"
#include "server/config/options.h"
#include "server/metrics/cache_metrics.h"
#include "server/routes/api_server.h"
#include "server/scheduling/prefix_cache_hooks.h"
#include "server/scheduling/runtime_loader.h"

namespace qmlx::cli {
namespace {

constexpr std::chrono::seconds kShutdownGrace(3);

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

std::string url(const std::string& host, int port) {
  return "http://" + host + ":" + std::to_string(port);
}

void log_ready(const server::ModelRuntime& runtime, const server::ApiServer& api,
               const server::ServerOptions& options) {
  std::string line =
      "ready: model=" + runtime.model_id + " arch=" + runtime.architecture + " " +
      runtime.description + " kv_cache_dtype=" + dtype_name(runtime.state_layout.kv_dtype) +
      " memory=" + std::to_string(current_rss_bytes() >> 20) + "MiB" +
      " parallel=" + std::to_string(api.scheduler_limits().parallel) +
      " batch_memory=" + std::to_string(api.scheduler_limits().memory_budget_bytes >> 20) +
      "MiB sequence_state=" + std::to_string(runtime.state_layout.kv_bytes_per_token()) +
      "B/token+" + std::to_string(runtime.state_layout.recurrent_bytes() >> 10) + "KiB" +
      " url=" + url(options.host, api.port());
  if (runtime.speculative_tokens > 0)
    line += " speculative=mtp:" + std::to_string(runtime.speculative_tokens);
  line += " max_step_ms=" + std::to_string(runtime.max_step_ms);
  if (runtime.prefill_rate) {
    // Measured at start: how long a cold prompt will take (attention makes deep tokens dearer).
    char rates[96];
    std::snprintf(rates, sizeof rates, " prefill \u2248 %.0f tok/s at 2k, %.0f at 32k",
                  runtime.prefill_rate(2048), runtime.prefill_rate(32768));
    line += rates;
  }
  if (api.metrics_port() != 0)
    line += " metrics=" + url(options.host, api.metrics_port()) + "/metrics";
  log_info(line);
}

// The "cache" section of the config file, with --disk-kv-restore (or the file's
// model.deltanet_state_aware) switching the disk tier on; nullopt when both tiers are off (the
// cold baseline: nothing is reused between requests).
std::optional<CacheConfig> serve_cache_config(const server::ServerOptions& options) {
  std::string source =
      options.cache_config_path.empty() ? "cache settings" : options.cache_config_path;
  ParsedCacheConfig parsed = parse_cache_config({{"cache", options.cache_config}}, source);
  for (const std::string& warning : parsed.warnings) log_warn(warning);
  // The qMLX flag switches the disk tier on, except against an explicit "disk_kv_cache": false
  // in the file: that is how a cold baseline is configured, and it must stay cold.
  if (options.disk_kv_restore || options.deltanet_state_aware) {
    if (options.cache_config.contains("disk_kv_cache") && !parsed.config.disk_kv_cache) {
      log_warn("--disk-kv-restore / deltanet_state_aware ignored: " + source +
               " sets \"disk_kv_cache\": false");
    } else {
      parsed.config.disk_kv_cache = true;
    }
  }
  if (!parsed.config.enabled()) {
    log_info("cache: off (memory_prefix_cache and disk_kv_cache are false)");
    return std::nullopt;
  }
  return parsed.config;
}

std::unique_ptr<PrefixCache> open_prefix_cache(const CacheConfig& config,
                                               const server::ModelRuntime& runtime) {
  Hash128 fingerprint = model_fingerprint(runtime.identity, runtime.state_layout);
  auto cache = std::make_unique<PrefixCache>(config, fingerprint, runtime.state_layout);
  CacheStats stats = cache->stats();
  std::string line = "cache: fingerprint " + fingerprint.hex();
  if (config.disk_kv_cache) {
    line += ", store " + cache->store_dir() + " (" + std::to_string(stats.disk_cache_snapshots) +
            " snapshots, " + std::to_string(stats.disk_cache_chunks) + " chunks, " +
            std::to_string(stats.disk_cache_bytes >> 20) + " MiB of " +
            std::to_string(uint64_t(config.disk_cache_max_gb * 1024)) + " MiB)";
  }
  if (config.memory_prefix_cache) {
    line += ", RAM tier " + std::to_string(config.memory_cache_max_mb) + " MiB";
  }
  log_info(line);
  return cache;
}

int serve(int argc, char** argv) {
  server::ParsedCommandLine parsed = server::parse_serve_command_line(argc, argv);
  if (!parsed.options) return parsed.exit_code;
  const server::ServerOptions& options = *parsed.options;
  set_log_format(options.log_format);
  for (const auto& warning : options.warnings) log_warn(warning);
  if (options.threads > 0) set_default_threads(options.threads);

  // Every thread started from here on inherits the mask; the signals are taken by sigwait.
  sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // The cache's values are checked before the port opens, like every other option.
  std::optional<CacheConfig> cache_config = serve_cache_config(options);

  server::MetricsRegistry registry;
  server::ApiServer api(options, registry);
  api.start();
  log_info("listening on " + url(options.host, api.port()) + " (loading the model)");

  // A stop signal while the model loads ends the process at once (nothing is open yet that
  // needs flushing); after that it stops the server cleanly.
  // The waiting thread is detached and may outlive serve() (a load failure returns while it
  // still waits), so what it uses is shared with it, not borrowed from this frame.
  struct StopSignal {
    sigset_t signals;
    std::promise<int> number;
    std::atomic<bool> loading{true};
  };
  auto stop = std::make_shared<StopSignal>();
  stop->signals = signals;
  std::future<int> stop_requested = stop->number.get_future();
  std::thread([stop] {
    int signal_number = 0;
    sigwait(&stop->signals, &signal_number);
    if (stop->loading) {
      log_info(std::string("received ") + strsignal(signal_number) +
               " while loading the model: exiting");
      std::_Exit(0);
    }
    stop->number.set_value(signal_number);
  }).detach();

  std::string model_dir = options.model_path.empty() ? ensure_demo_model() : options.model_path;
  std::shared_ptr<server::ModelRuntime> runtime;
  try {
    runtime = server::load_model_runtime(model_dir, options);
  } catch (const std::exception& e) {
    log_error(std::string("cannot load the model: ") + e.what());
    api.stop(std::chrono::milliseconds(0));
    return 1;
  }
  server::CacheHooks no_cache;
  std::unique_ptr<PrefixCache> cache;
  std::unique_ptr<server::PrefixCacheHooks> cache_hooks;
  if (cache_config) {
    cache = open_prefix_cache(*cache_config, *runtime);
    cache_hooks = std::make_unique<server::PrefixCacheHooks>(*cache, runtime->tokenizer);
    server::export_cache_metrics(registry, *cache);
  }
  api.set_ready(runtime, cache_hooks ? *cache_hooks : no_cache, cache.get());
  log_ready(*runtime, api, options);
  stop->loading = false;

  int signal_number = stop_requested.get();
  log_info(std::string("received ") + (signal_number == SIGINT ? "SIGINT" : "SIGTERM") +
           ": stopping");
  api.stop(kShutdownGrace);
  log_info("stopped");
  return 0;
}

}  // namespace

QMLX_COMMAND(serve, "serve", "Serve a model over the OpenAI and Anthropic HTTP APIs", serve);

}  // namespace qmlx::cli
