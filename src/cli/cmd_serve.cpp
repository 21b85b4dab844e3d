// qmlx serve: the OpenAI + Anthropic HTTP server. Options are checked before any port opens;
// the port opens before the model loads (so /health answers 503 meanwhile); SIGINT/SIGTERM
// stop it cleanly with exit status 0.
#include <pthread.h>

#include <csignal>
#include <cstring>

#include "base/logging.h"
#include "base/process.h"
#include "base/thread_pool.h"
#include "cli/command.h"
#include "modelgen/demo_model.h"
#include "server/api_server.h"
#include "server/options.h"
#include "server/runtime_loader.h"

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
  std::string line = "ready: model=" + runtime.model_id + " arch=" + runtime.architecture + " " +
                     runtime.description + " memory=" + std::to_string(current_rss_bytes() >> 20) +
                     "MiB url=" + url(options.host, api.port());
  if (api.metrics_port() != 0)
    line += " metrics=" + url(options.host, api.metrics_port()) + "/metrics";
  log_info(line);
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

  server::MetricsRegistry registry;
  server::ApiServer api(options, registry);
  api.start();
  log_info("listening on " + url(options.host, api.port()) + " (loading the model)");

  std::string model_dir = options.model_path.empty() ? ensure_demo_model() : options.model_path;
  std::shared_ptr<server::ModelRuntime> runtime = server::load_model_runtime(model_dir, options);
  server::CacheHooks no_cache;
  api.set_ready(runtime, no_cache);
  log_ready(*runtime, api, options);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  log_info(std::string("received ") + (signal_number == SIGINT ? "SIGINT" : "SIGTERM") +
           ": stopping");
  api.stop(kShutdownGrace);
  log_info("stopped");
  return 0;
}

}  // namespace

QMLX_COMMAND(serve, "serve", "Serve a model over the OpenAI and Anthropic HTTP APIs", serve);

}  // namespace qmlx::cli
