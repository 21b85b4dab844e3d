#include "tests/integration/turn_harness.h"

#include <unistd.h>

#include <filesystem>
#include <thread>

#include "base/logging.h"
#include "cache/hash.h"
#include "modelgen/model_writer.h"
#include "server/config/options.h"
#include "server/scheduling/runtime_loader.h"

namespace qmlx::testing {

namespace fs = std::filesystem;

namespace {

// A streamed request at temperature 0, as every turn of these tests is.
server::GenerationRequest greedy_request(server::Route route, int max_tokens) {
  server::GenerationRequest request;
  request.route = route;
  request.stream = true;
  request.max_tokens = max_tokens;
  request.sampling.temperature = 0;
  request.sampling.seed = 1;
  return request;
}

}  // namespace

std::string write_tiny_model(modelgen::Arch arch, const std::string& dir, uint64_t seed, int bits) {
  if (fs::exists(fs::path(dir) / "config.json")) return dir;
  modelgen::ModelOptions options;
  options.arch = arch;
  options.shape = modelgen::default_shape(arch);
  options.seed = seed;
  if (bits > 0) {
    options.layout = modelgen::Layout::kMLX;
    options.dtype = modelgen::TensorDType::kBF16;
    options.quantization = modelgen::QuantParams{bits, 32};
  }
  modelgen::write_random_model(options, dir);
  return dir;
}

void TinyModelCacheTest::SetUp() {
  set_log_level(LogLevel::kError);
  root_ =
      (fs::temp_directory_path() / (folder_prefix_ + "-" + std::to_string(::getpid()))).string();
  fs::remove_all(root_);
  const std::string dir = write_tiny_model(modelgen::Arch::kQwen35, root_ + "/model", model_seed_);
  runtime_ = server::load_model_runtime(dir, server::ServerOptions{});
  config_ = CacheConfig::defaults();
  config_.disk_cache_dir = root_ + "/store";
  config_.chunk_tokens = 16;
  config_.fsync = false;
}

void TinyModelCacheTest::TearDown() { fs::remove_all(root_); }

TurnHarness::TurnHarness(std::shared_ptr<const server::ModelRuntime> runtime,
                         std::optional<CacheConfig> cache_config)
    : runtime_(std::move(runtime)), config_(std::move(cache_config)) {
  session_ = runtime_->new_session();
  open_cache();
}

TurnHarness::~TurnHarness() {
  hooks_.reset();
  cache_.reset();
}

void TurnHarness::open_cache() {
  if (!config_) return;
  Hash128 fingerprint = model_fingerprint(runtime_->identity, runtime_->state_layout);
  cache_ = std::make_unique<PrefixCache>(*config_, fingerprint, runtime_->state_layout);
  hooks_ = std::make_unique<server::PrefixCacheHooks>(*cache_, runtime_->tokenizer);
}

void TurnHarness::restart() {
  hooks_.reset();
  cache_.reset();
  session_ = runtime_->new_session();
  open_cache();
}

void TurnHarness::idle(int preempt_after, const std::vector<int32_t>& waiting) {
  if (!hooks_) return;
  int checks = 0;
  hooks_->on_idle(*session_, [&](std::span<const int32_t> needed) {
    const bool arrived = preempt_after >= 0 && checks++ >= preempt_after;
    return arrived && !server::prompt_needs(waiting, needed);
  });
}

TurnResult TurnHarness::chat(const nlohmann::ordered_json& messages,
                             const nlohmann::ordered_json& tools, int max_tokens, int cancel_after,
                             int unread) {
  server::GenerationRequest request = greedy_request(server::Route::kChatCompletions, max_tokens);
  request.messages = messages;
  request.tools = tools;
  server::RenderedPrompt prompt =
      runtime_->render_chat(messages, tools, true, nlohmann::ordered_json::object());
  return run(std::move(request), std::move(prompt), cancel_after, unread);
}

TurnResult TurnHarness::complete(const std::vector<int32_t>& ids, int max_tokens, int cancel_after,
                                 int unread) {
  server::GenerationRequest request = greedy_request(server::Route::kCompletions, max_tokens);
  request.prompt_ids = ids;
  server::RenderedPrompt prompt;
  prompt.ids = ids;
  return run(std::move(request), std::move(prompt), cancel_after, unread);
}

TurnResult TurnHarness::run(server::GenerationRequest request, server::RenderedPrompt prompt,
                            int cancel_after, int unread) {
  TurnResult result;
  result.prompt = prompt.ids;
  auto job =
      std::make_shared<server::GenerationJob>(next_uid_++, std::move(request), std::move(prompt));
  server::CacheHooks& hooks = hooks_ ? static_cast<server::CacheHooks&>(*hooks_) : no_cache_;
  server::RunnerSettings settings;
  settings.prefill_chunk_tokens = 24;  // small, so chunking meets the checkpoint positions
  std::thread engine([&] { server::run_generation(*job, *session_, *runtime_, hooks, settings); });
  size_t streamed = 0;
  for (;;) {
    auto event = job->next(std::chrono::seconds(60));
    if (!event) {
      job->cancel();
      continue;
    }
    if (event->kind == server::GenerationEvent::Kind::kOutput) {
      if (cancel_after > 0 && streamed >= size_t(cancel_after)) {
        // Past the cut the client receives nothing: `unread` events lag, then it is noticed.
        if (--unread <= 0) job->cancel();
        continue;
      }
      result.reply.append(event->delta);
      // The client counts what it received, as a stream's writer does (mark_delivered); the
      // engine may be ahead when it notices the disconnect.
      job->mark_delivered(event->settled_tokens);
      result.delivered = job->delivered_tokens();
      streamed += std::max<size_t>(1, event->logprobs.size());
      if (cancel_after > 0 && streamed >= size_t(cancel_after) && unread <= 0) job->cancel();
    } else if (event->kind == server::GenerationEvent::Kind::kDone) {
      result.finish = event->finish;
      result.stats = event->stats;
      result.generated = event->generated;
      break;
    } else if (event->kind == server::GenerationEvent::Kind::kError) {
      engine.join();
      throw std::runtime_error("generation failed: " + event->message);
    }
  }
  engine.join();
  return result;
}

}  // namespace qmlx::testing
