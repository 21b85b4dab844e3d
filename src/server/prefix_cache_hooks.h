// PrefixCacheHooks: the CacheHooks that plug the prefix cache into the request path. It decides
// where checkpoints are taken (cache-design.md "Where snapshots are taken": user_start and
// message_boundary from the renderer's offsets, prefill_progress, prompt_end, interval,
// generation_end, interrupted, and canonical_history in idle time), restores the deepest
// verified resume point before prefill, and turns the cache's results into the log line's
// fields and the divergence line (decoded with the model's tokenizer). The server never sees
// a store file: everything goes through PrefixCache.
#pragma once

#include <memory>

#include "cache/prefix_cache.h"
#include "server/cache_hooks.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {

class PrefixCacheHooks : public CacheHooks {
 public:
  PrefixCacheHooks(PrefixCache& cache, std::shared_ptr<const Tokenizer> tokenizer);

  CacheLookupResult lookup_and_restore(const PromptView& prompt, StateSink& session) override;
  std::vector<int64_t> checkpoint_positions(const PromptView& prompt, int64_t from) override;
  void on_prefill_progress(const PromptView& prompt, const StateSource& session) override;
  void on_prompt_end(const PromptView& prompt, const StateSource& session) override;
  void on_decode_step(const PromptView& prompt, std::span<const int32_t> tokens,
                      const StateSource& session) override;
  void on_generation_end(std::span<const int32_t> tokens, const StateSource& session,
                         CanonicalHistory next_turn) override;
  void on_interrupted(std::span<const int32_t> tokens, const StateSource& session) override;
  void on_idle(InferenceSession& session, const std::function<bool()>& preempted) override;
  void flush() override;

  // Tokens per prefill step of the idle pre-fill: small, so a new request waits little.
  static constexpr int64_t kIdlePrefillChunk = 64;

 private:
  // Restores the deepest verified resume point of `ids` without counting a request hit or
  // miss (idle work); returns the position reached (0 when nothing was restored).
  int64_t restore_quietly(std::span<const int32_t> ids, InferenceSession& session);
  // Pre-fills one canonical history from its deepest resume point and snapshots it; false
  // when a request pre-empted it.
  bool prefill_history(const std::vector<int32_t>& ids, InferenceSession& session,
                       const std::function<bool()>& preempted);

  PrefixCache& cache_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  // Engine thread only: what the last request restored, and its reply's next-turn rendering.
  int64_t restored_ = 0;
  CanonicalHistory pending_history_;
};

}  // namespace qmlx::server
