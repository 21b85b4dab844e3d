// PrefixCache: the cache as the engine and server see it, for one loaded model (one
// fingerprint). It ties the tiers (RAM LRU, disk store, shared Redis Cluster), the index, the
// background writer, eviction, the restore guard and the metrics together:
//   restore(prompt, sink)   deepest verified resume point installed into a Session, or a miss
//                           with reasons (candidates tried in order, corrupt files quarantined)
//   capture(source, tokens, kind)   a checkpoint copied now and written in the background
//   list/inspect/verify/pin/remove/clear/gc/stats   the admin API (HTTP routes, `qmlx cache`)
// Thread-safe: requests may restore and capture concurrently with the writer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/env.h"
#include "cache/config.h"
#include "cache/disk_health.h"
#include "cache/disk_store.h"
#include "cache/eviction.h"
#include "cache/explain.h"
#include "cache/index.h"
#include "cache/memory_tier.h"
#include "cache/metrics.h"
#include "cache/restore_guard.h"
#include "cache/restorer.h"
#include "cache/shared_tier.h"
#include "cache/verify.h"
#include "cache/writer.h"

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

struct SnapshotListing {
  Hash128 fingerprint;
  Hash128 id;
  SnapshotKind kind = SnapshotKind::kInterval;
  int64_t tokens = 0;
  uint64_t bytes = 0;  // the snapshot file (its chunks are shared and listed in chunk_count)
  size_t chunk_count = 0;
  int64_t created_ms = 0;
  int64_t last_used_ms = 0;
  bool pinned = false;
  bool has_logits = false;
  bool on_disk = false;
  bool in_memory = false;

  nlohmann::json to_json() const;
};

// The listing of an indexed snapshot (in_memory left false).
SnapshotListing make_listing(const Hash128& fingerprint, const SnapshotEntry& entry);

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

  const CacheConfig& config() const { return config_; }
  const Hash128& fingerprint() const { return fingerprint_; }
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
  void count_prefill(int64_t tokens) { metrics_.count_prefill(tokens); }

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
  void open_store();
  void publish_in_memory(PendingWrite& write);
  void commit(PendingWrite& write);
  // Makes the write's chunks durable; `written` receives those this call put on disk.
  bool commit_chunks(PendingWrite& write, std::vector<Hash128>* written);
  void count_write_error(const Status& s);
  // Puts one file of `write`. On a full disk it evicts by the policy (never the write's own
  // chunks) to make room for the whole write and tries once more, once per no-space episode.
  Status put_making_room(const std::string& name, const std::vector<uint8_t>& bytes,
                         const PendingWrite& write);
  // Evicts at least `bytes` if the policy finds that much; returns what it freed.
  uint64_t make_room(uint64_t bytes, const std::vector<Hash128>& keep);
  // A write that failed removes the chunks it put on disk: no committed snapshot names them.
  void undo_chunks(const std::vector<Hash128>& written);
  // Chunks that no snapshot names (hybrid models: never restorable): removed.
  void collect_orphans();
  // The store folder was deleted or replaced while serving: what the index lists as on disk is
  // gone. It is forgotten (RAM copies stay restorable) so the next captures write it again.
  void check_store_folder();
  // A file the index lists as on disk was not found: it and what depends on it are forgotten.
  void forget_vanished(const std::string& name);
  // Whether the index lists the file `name` as on local disk.
  bool indexed_on_disk(const std::string& name);
  FetchedFile fetch(const std::string& name, bool allow_shared);
  // Hands what a restore read from the shared tier to the writer, to be kept on local disk.
  void adopt_from_shared(const ResumePoint& point,
                         const std::vector<std::pair<std::string, SharedBytes>>& files);
  // Publishes a committed checkpoint to the shared tier (on the writer thread).
  void publish_shared(const PendingWrite& write, const SealedFile& snapshot);
  void remember_in_memory(const std::string& name, SharedBytes bytes);
  void forget_memory_only(const std::vector<std::string>& names);
  // from_shared: the bad bytes came from the shared tier, which deletes them.
  void quarantine(const std::string& name, bool from_shared = false);
  void check_chunks(const std::vector<Hash128>& chunks);
  void drop_snapshots_naming(const Hash128& chunk);
  void touch(const ResumePoint& point, int64_t position);
  bool still_indexed(const ResumePoint& point) const;
  bool worth_capturing(const Hash128& id, SnapshotKind kind) const;
  uint64_t disk_bytes_locked() const;
  void evict_if_needed(bool force_to_low_water);
  // The policy's steps to free `bytes`, never touching `keep`. Caller holds mutex_.
  std::vector<EvictionStep> plan_eviction_locked(uint64_t bytes, const std::vector<Hash128>& keep);
  void apply_eviction(const std::vector<EvictionStep>& steps);
  SnapshotListing listing_of(const SnapshotEntry& entry) const;
  bool read_tokens(const Hash128& id, std::vector<int32_t>* tokens);

  CacheConfig config_;
  Hash128 fingerprint_;
  StateLayout layout_;
  Env* env_;
  std::unique_ptr<DiskStore> disk_;
  std::unique_ptr<MemoryTier> memory_;
  std::unique_ptr<SharedTier> shared_;
  mutable std::mutex mutex_;  // guards index_ and the byte counters below
  CacheIndex index_;
  uint64_t quarantine_bytes_ = 0;
  std::vector<BlobInfo> foreign_stores_;
  CacheMetrics metrics_;
  DiskHealth disk_health_{metrics_};
  // Writer thread only: a full disk already made room once since the last successful write.
  bool room_made_for_no_space_ = false;
  std::function<uint64_t()> available_memory_;
  std::function<int64_t()> now_ms_;
  std::unique_ptr<SnapshotWriter> writer_;  // last: stopped first
};

}  // namespace qmlx
