// PrefixCacheHooks: the CacheHooks that plug the prefix cache into the request path. It decides
// where checkpoints are taken (cache-design.md "Where snapshots are taken": user_start and
// message_boundary from the renderer's offsets, prefill_progress, prompt_end, interval,
// generation_end, interrupted, and canonical_history in idle time), restores the deepest
// verified resume point before prefill, and turns the cache's results into the log line's
// fields and the divergence line (decoded with the model's tokenizer). The server never sees
// a store file: everything goes through PrefixCache.
// It also remembers, for each sequence (each slot's Session), which tokens that Session holds (the
// last request's prompt and reply, or the idle pre-fill however far it got), so that a request
// whose prompt begins with them continues from the live Session (tier "session") instead of reading
// a snapshot, and an idle pre-fill that the waiting request needs is finished rather than thrown
// away. With
// --parallel N the slots call it concurrently: the cache is thread-safe and each sequence's
// bookkeeping is its own, so no call waits for another slot's.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "cache/prefix_cache.h"
#include "server/cache_hooks.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {

class PrefixCacheHooks : public CacheHooks {
 public:
  PrefixCacheHooks(PrefixCache& cache, std::shared_ptr<const Tokenizer> tokenizer);

  CacheLookupResult lookup_and_restore(const PromptView& prompt,
                                       InferenceSession& session) override;
  std::vector<int64_t> checkpoint_positions(const PromptView& prompt, int64_t from) override;
  void on_prefill_progress(const PromptView& prompt, const StateSource& session) override;
  void on_prompt_end(const PromptView& prompt, const StateSource& session) override;
  void on_decode_step(const PromptView& prompt, std::span<const int32_t> tokens,
                      const StateSource& session) override;
  void on_generation_end(std::span<const int32_t> tokens, const StateSource& session,
                         CanonicalHistory next_turn) override;
  // Checkpoints exactly what reached the client (rewinding a session that ran ahead of it).
  void on_interrupted(std::span<const int32_t> tokens, InferenceSession& session) override;
  void on_idle(InferenceSession& session, const IdlePreemption& preempted) override;
  void flush() override;

  // Tokens per prefill step of the idle pre-fill: small, so a new request waits little.
  static constexpr int64_t kIdlePrefillChunk = 64;
  // An edit point closer than this to the message's start, its end or a deeper edit point is
  // not worth a snapshot.
  static constexpr int64_t kMinEditPointGap = 32;

 private:
  // What the hooks remember about one sequence (one slot's session) from one call to the next:
  // what its request restored, its reply's next-turn rendering, the tokens of its prompt up to
  // the last message (a request that does not begin with them cannot need that rendering), the
  // tokens the session holds (empty: unknown) and the edit points its prefill stops at.
  struct Sequence {
    int64_t restored = 0;
    CanonicalHistory pending_history;
    std::vector<int32_t> pending_head;
    int64_t head_tokens = 0;
    int64_t prompt_tokens = 0;  // the current request's prompt length
    std::vector<int32_t> live;
    std::optional<std::vector<int64_t>> edit_stops;  // computed at the first prefill stop
  };
  // The sequence whose session's state is `session`, created on first use. Each is used only by
  // the slot thread that runs that session; mutex_ guards the map, never a call into the cache.
  Sequence& sequence(const StateSource& session);

  // The prompt's edit points past `from` that get an `edit_point` snapshot (ascending): the
  // deepest ones, spaced apart, within edit_point_checkpoints and edit_point_max_mb.
  std::vector<int64_t> chosen_edit_points(const PromptView& prompt, int64_t from) const;
  // How many leading tokens of `ids` the session holds: all of seq.live when it begins `ids`
  // (and the session is where seq.live says), else 0.
  static int64_t live_prefix(const Sequence& seq, std::span<const int32_t> ids,
                             const InferenceSession& session);
  // Pre-fills one canonical history from the live session or its deepest resume point and
  // snapshots it, unless a request that does not need it pre-empts it.
  void prefill_history(Sequence& seq, const std::vector<int32_t>& ids, InferenceSession& session,
                       const IdlePreemption& preempted);

  PrefixCache& cache_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::mutex mutex_;
  std::unordered_map<const StateSource*, Sequence> sequences_;
};

}  // namespace qmlx::server
