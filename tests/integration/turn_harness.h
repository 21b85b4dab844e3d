// TurnHarness: one model served the way `qmlx serve` serves it (runtime_loader, the runner,
// a Session kept between requests) but driven directly, turn by turn, with or without the
// prefix cache, so tests can compare warm answers with cold ones token for token, interrupt a
// reply after a given number of tokens, restart the cache from its store and run the idle
// pre-fill at chosen moments.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cache/prefix_cache.h"
#include "modelgen/model_options.h"
#include "server/scheduling/generation_runner.h"
#include "server/scheduling/model_runtime.h"
#include "server/scheduling/prefix_cache_hooks.h"

namespace qmlx::testing {

// Writes a tiny random model of `arch` into `dir` (once) and returns the folder: HF f32, or
// MLX affine with `bits` (the quantized decode and prefill kernels).
std::string write_tiny_model(modelgen::Arch arch, const std::string& dir, uint64_t seed,
                             int bits = 0);

struct TurnResult {
  std::vector<int32_t> prompt;     // the prompt's token ids
  std::vector<int32_t> generated;  // every generated token
  int64_t delivered = 0;           // generated tokens whose text the client received
  ParsedOutput reply;              // as the client receives it
  server::FinishReason finish = server::FinishReason::kStop;
  server::GenerationStats stats;
};

class TurnHarness {
 public:
  // With `cache_config` the prefix cache is on (store opened from its disk_cache_dir).
  TurnHarness(std::shared_ptr<const server::ModelRuntime> runtime,
              std::optional<CacheConfig> cache_config);
  ~TurnHarness();

  // One chat request at temperature 0. cancel_after > 0 disconnects the client once it received
  // that many tokens (the reply is then what was streamed so far); with `unread` > 0 that many
  // more output events are generated but never reach it (a writer that lags behind the engine)
  // before the disconnect is noticed.
  TurnResult chat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                  int max_tokens, int cancel_after = 0, int unread = 0);
  // One completions request on raw token ids.
  TurnResult complete(const std::vector<int32_t>& prompt, int max_tokens, int cancel_after = 0,
                      int unread = 0);

  // The engine went idle: runs the cache's idle work (canonical-history pre-fill). With
  // preempt_after >= 0 a request with prompt `waiting` "arrives" after that many preemption
  // checks (idle work it needs goes on, as the scheduler lets it).
  void idle(int preempt_after = -1, const std::vector<int32_t>& waiting = {});
  // Stops the cache (its writer finishes the queue, as on SIGTERM) and opens it again from
  // the store, as a restarted server would; the RAM tier starts empty.
  void restart();

  PrefixCache* cache() { return cache_.get(); }
  const server::ModelRuntime& runtime() const { return *runtime_; }

 private:
  TurnResult run(server::GenerationRequest request, server::RenderedPrompt prompt, int cancel_after,
                 int unread);
  void open_cache();

  std::shared_ptr<const server::ModelRuntime> runtime_;
  std::optional<CacheConfig> config_;
  std::unique_ptr<PrefixCache> cache_;
  std::unique_ptr<server::PrefixCacheHooks> hooks_;
  server::CacheHooks no_cache_;
  std::unique_ptr<server::InferenceSession> session_;
  uint64_t next_uid_ = 1;
};

// The setting of the tests that drive one conversation by hand: a tiny random Qwen3.5 model in
// a fresh temporary folder named after the test suite, its runtime, and a cache config whose
// store lives beside it (16-token chunks, no fsync).
class TinyModelCacheTest : public ::testing::Test {
 protected:
  TinyModelCacheTest(std::string folder_prefix, uint64_t model_seed)
      : folder_prefix_(std::move(folder_prefix)), model_seed_(model_seed) {}
  void SetUp() override;
  void TearDown() override;

  std::string root_;
  std::shared_ptr<server::ModelRuntime> runtime_;
  CacheConfig config_;

 private:
  std::string folder_prefix_;
  uint64_t model_seed_;
};

}  // namespace qmlx::testing
