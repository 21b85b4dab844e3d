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
// bookkeeping is its own, so no call waits for another slot's, with one deliberate exception: a
// request whose prompt shares a long prefix, not cached yet, with a prompt another slot is
// prefilling (a burst of sub-agents with one system prompt and tools) asks that prefill for a
// checkpoint where the two prompts part and waits for it, then restores it, so the shared
// prefix is prefilled once.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "cache/prefix_cache.h"
#include "server/scheduling/cache_hooks.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {

class PrefixCacheHooks : public CacheHooks {
 public:
  PrefixCacheHooks(PrefixCache& cache, std::shared_ptr<const Tokenizer> tokenizer);

  CacheLookupResult lookup_and_restore(const PromptView& prompt,
                                       InferenceSession& session) override;
  std::vector<int64_t> checkpoint_positions(const PromptView& prompt, int64_t from) override;
  int64_t chunk_end(const StateSource& session, int64_t from, int64_t end) override;
  void on_prefill_progress(const PromptView& prompt, const StateSource& session) override;
  void on_prompt_end(const PromptView& prompt, const StateSource& session) override;
  void on_decode_step(const PromptView& prompt, std::span<const int32_t> tokens,
                      const StateSource& session) override;
  void on_generation_end(std::span<const int32_t> tokens, const StateSource& session,
                         CanonicalHistory next_turn) override;
  // Checkpoints exactly what reached the client (rewinding a session that ran ahead of it).
  std::string on_interrupted(std::span<const int32_t> tokens, InferenceSession& session) override;
  void on_idle(InferenceSession& session, const IdlePreemption& preempted) override;
  void flush() override;

  // Tokens per prefill step of the idle pre-fill: small, so a new request waits little.
  static constexpr int64_t kIdlePrefillChunk = 64;
  // An edit point closer than this to the message's start, its end or a deeper edit point is
  // not worth a snapshot.
  static constexpr int64_t kMinEditPointGap = 32;
  // A request waits for another's prefill only to save at least this many tokens of its own.
  static constexpr int64_t kMinSharedPrefixTokens = 256;
  // A wait gives up when the prefill it waits for advances by nothing for this long (a stuck
  // or failed request that never said it ended).
  static constexpr double kSharedWaitStallSeconds = 60;

  // For tests: how many requests wait for another's checkpoint now.
  int shared_prefix_waiters() const;

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

  // The checkpoint of a prefill pause, if its position is one (`requested`: another request
  // asked for it).
  void capture_progress(const PromptView& prompt, const StateSource& session, bool requested);
  // The prompt's edit points past `from` that get an `edit_point` snapshot (ascending): the
  // deepest ones, spaced apart, within edit_point_checkpoints and edit_point_max_mb.
  std::vector<int64_t> chosen_edit_points(const PromptView& prompt, int64_t from) const;
  // How many leading tokens of `ids` the session holds: all of seq.live when it begins `ids`
  // (and the session is where seq.live says), else 0.
  static int64_t live_prefix(const Sequence& seq, std::span<const int32_t> ids,
                             const InferenceSession& session);
  // Pre-fills one canonical history from the live session or its deepest resume point and
  // snapshots it, unless a request that does not need it pre-empts it.
  using CanonicalImages = std::function<std::vector<SequenceImage>(int64_t from_row)>;
  void prefill_history(Sequence& seq, const std::vector<int32_t>& ids,
                       const CanonicalImages& images, InferenceSession& session,
                       const IdlePreemption& preempted);

  // A prompt being prefilled now, for requests that share its prefix: the tokens fed or being
  // fed (`position`, then the chunk in flight up to `chunk_end`), `settled`: the position whose
  // checkpoint, if one was taken, is restorable, and the checkpoints they asked it for
  // (ascending). `serial` tells one request of a slot from the next.
  struct RunningPrefill {
    std::vector<int32_t> ids;
    int64_t position = 0;
    int64_t chunk_end = 0;
    int64_t settled = 0;
    std::vector<int64_t> requested;
    uint64_t serial = 0;
  };
  // Before a request restores: when another prefill shares more of its prompt than the cache
  // or the live session (`have` tokens) and has not passed the point where they part, asks it
  // for a checkpoint there and waits until it is taken (or that prefill ends, stalls, or this
  // client leaves). Then registers this request's prefill. Returns the milliseconds waited.
  double await_shared_prefix(const PromptView& prompt, const StateSource& session, int64_t have);
  // The request's prefill is `position` tokens in: whether a waiting request asked for a
  // checkpoint there. Then settle_running once it is taken, which wakes the waiting requests.
  bool advance_running(const StateSource& session, int64_t position);
  void settle_running(const StateSource& session, int64_t position);
  // The request's prefill ended (done, interrupted or failed).
  void end_running(const StateSource& session);

  PrefixCache& cache_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::mutex mutex_;
  std::unordered_map<const StateSource*, Sequence> sequences_;
  // Guarded by running_mutex_ (never held while calling into the cache or the model).
  mutable std::mutex running_mutex_;
  std::condition_variable running_changed_;
  std::unordered_map<const StateSource*, RunningPrefill> running_;
  uint64_t next_serial_ = 1;
  int waiters_ = 0;
};

}  // namespace qmlx::server
