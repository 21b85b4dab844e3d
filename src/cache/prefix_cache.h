// PrefixCache: the cache as the engine and server see it, for one loaded model (one
// fingerprint). It ties the tiers (RAM LRU, disk store, shared Redis Cluster), the index, the
// background writer, eviction, the restore guard and the metrics together:
//   restore(prompt, sink)   deepest verified resume point installed into a Session, or a miss
//                           with reasons (candidates tried in order, corrupt files quarantined)
//   capture(source, tokens, kind)   a checkpoint copied now and written in the background
//   list/inspect/verify/pin/remove/clear/gc/stats   the admin API (HTTP routes, `qmlx cache`)
// Thread-safe: requests may restore and capture concurrently with the writer.
// The parts behind it, one job each: cache_tiers.h (the tiers and the index kept in agreement,
// quarantine, eviction), restore_across_tiers.h (the read side), checkpoint_commit.h (the
// write side), shared_exchange.h (adoption from and publication to the shared tier),
// divergence_search.h (explain), prefix_cache_admin.cpp (the admin API).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/env.h"
#include "cache/config.h"
#include "cache/explain.h"
#include "cache/index.h"
#include "cache/metrics.h"
#include "cache/restore_guard.h"
#include "cache/restorer.h"
#include "cache/snapshot_listing.h"
#include "cache/verify.h"

namespace qmlx {

struct RejectedCandidate {
  ResumePoint point;
  RejectReason reason = RejectReason::kNone;
  std::string detail;
};

// The tier of a hit that kept the sink as it was (RestoreOptions::live).
inline constexpr char kSessionTier[] = "session";

// How a restore treats the sink it installs into.
struct RestoreOptions {
  // The sink already holds the prompt's first `live` tokens (a Session kept warm between
  // requests): resume points no deeper are not read, and when none deeper restores the sink is
  // kept as it is, a hit of tier "session". 0: the sink holds nothing usable.
  int64_t live = 0;
  // Idle work: no hit or miss is counted and no divergence is explained.
  bool quiet = false;
};

struct RestoreResult {
  bool hit = false;
  int64_t cached_tokens = 0;
  std::string tier;  // "ram", "disk", "shared" or "session" on a hit
  // "disabled", "no_candidate", "rejected", or "partial" (every candidate had files gone).
  std::string miss_reason;
  ResumePoint point;  // the one restored
  std::vector<RejectedCandidate> rejected;
  double lookup_seconds = 0;
  double read_seconds = 0;
  double verify_seconds = 0;
  double install_seconds = 0;
  uint64_t bytes_read = 0;
  std::optional<Divergence> divergence;
};

struct CacheTiers;
class CheckpointCommitter;
class SnapshotWriter;
class TierRestorer;

class PrefixCache {
 public:
  // Opens the store of `fingerprint` under config.disk_cache_dir (when disk_kv_cache), removes
  // leftovers of interrupted writes, indexes the snapshot headers and evicts down to the cap.
  // Throws qmlx::Error when the store folder cannot be used.
  PrefixCache(const CacheConfig& config, const Hash128& fingerprint, const StateLayout& layout,
              Env* env = Env::posix());
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  const CacheConfig& config() const;
  const Hash128& fingerprint() const;
  // <disk_cache_dir>/<fingerprint hex>, or "" without the disk tier.
  std::string store_dir() const;

  // Resume points for the prompt, deepest first (nothing read from disk).
  std::vector<ResumePoint> lookup(std::span<const int32_t> prompt) const;
  // Tries the resume points in order; the first that passes every check is installed into
  // sink. On a miss the sink is reset to position 0.
  RestoreResult restore(std::span<const int32_t> prompt, StateSink& sink,
                        const RestoreOptions& options = {});
  // One attempt at one resume point: guard, read, verify, install; on failure the corrupt file
  // is quarantined and the rejection counted.
  RestoreOutcome restore_point(const ResumePoint& point, std::span<const int32_t> prompt,
                               StateSink& sink);
  // What restoring `point` adds to memory (the guard's estimate).
  RestoreEstimate estimate(const ResumePoint& point) const;
  // The most bytes one snapshot adds beyond its shared chunks: recurrent state, a tail of under
  // one chunk of K/V rows, logits.
  uint64_t snapshot_bytes_bound() const;
  // Records what a request prefilled after its restore (qmlx_prefill_tokens_total).
  void count_prefill(int64_t tokens);

  // Checkpoints the source at its position (tokens[0, position) are its tokens). Returns false
  // when nothing was queued: cache disabled, position 0, already stored, or dropped.
  bool capture(const StateSource& source, std::span<const int32_t> tokens, SnapshotKind kind);
  // Waits until every captured write is on its tier (for shutdown and tests).
  void flush();

  // The divergence between the prompt and the nearest cached prefix when it shares at least
  // min_shared tokens more than `restored`, or agrees again after a few replaced tokens (see
  // find_divergence); reads at most a few token blobs.
  std::optional<Divergence> explain(std::span<const int32_t> prompt, int64_t restored,
                                    int64_t min_shared = 64);

  // Admin API.
  std::vector<SnapshotListing> list() const;
  std::optional<SnapshotListing> inspect(const Hash128& id) const;
  VerifyReport verify(const Hash128& id);
  std::vector<VerifyReport> verify_all();
  Status pin(const Hash128& id, bool pinned);
  Status remove(const Hash128& id);
  Status clear();
  // Evicts down to the low-water mark now if the store is over its cap.
  void gc();
  CacheStats stats() const;

  // For tests: replaces available_memory_bytes() in the guard.
  void set_available_memory_source(std::function<uint64_t()> source);
  // For tests: the clock (milliseconds) used for created / last-used times.
  void set_clock(std::function<int64_t()> now_ms);

 private:
  std::unique_ptr<CacheTiers> tiers_;
  std::unique_ptr<CheckpointCommitter> committer_;
  std::unique_ptr<SnapshotWriter> writer_;  // commits through committer_; stopped first
  std::unique_ptr<TierRestorer> restorer_;  // adopts through writer_
};

}  // namespace qmlx
