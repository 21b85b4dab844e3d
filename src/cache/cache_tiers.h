// CacheTiers: internal to PrefixCache. The files of one fingerprint's cache and where they are
// (the RAM tier, the disk store, the shared tier), with the index that says what can be
// restored from them. The two are kept in agreement: a file that leaves the RAM tier, vanishes
// from the disk, is evicted or fails verification leaves the index too, with what depended on
// it (a snapshot that names a lost chunk), so a lookup never offers what cannot be read.
// This is the one state the parts of the cache share: the read side (restore_across_tiers.h),
// the write side (checkpoint_commit.h), the exchange with the shared tier (shared_exchange.h),
// divergence reports (divergence_search.h) and PrefixCache's admin methods.
// Thread-safety: the tiers, metrics and disk_health are thread-safe; `mutex` guards the index
// and the byte counts below it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/env.h"
#include "cache/config.h"
#include "cache/disk_health.h"
#include "cache/disk_store.h"
#include "cache/eviction.h"
#include "cache/index.h"
#include "cache/memory_tier.h"
#include "cache/metrics.h"
#include "cache/restorer.h"
#include "cache/shared_tier.h"
#include "engine/session_state.h"

namespace qmlx {

struct CacheTiers {
  // Opens the store of `fingerprint` under config.disk_cache_dir (when disk_kv_cache), removes
  // leftovers of interrupted writes, indexes the snapshot headers and evicts down to the cap;
  // connects the shared tier when configured. Throws qmlx::Error when the store folder cannot
  // be used.
  CacheTiers(const CacheConfig& config, const Hash128& fingerprint, const StateLayout& layout,
             Env* env);
  CacheTiers(const CacheTiers&) = delete;
  CacheTiers& operator=(const CacheTiers&) = delete;

  // Resume points for the prompt in the local index, deepest first (nothing read).
  std::vector<ResumePoint> resume_points(std::span<const int32_t> prompt) const;
  // The bytes of a store file: the RAM tier, then the disk, then (allow_shared) the shared
  // tier. A disk read is kept in the RAM tier; a shared one is not (unverified yet).
  FetchedFile fetch(const std::string& name, bool allow_shared);
  // Whether a local resume point is still indexed (a quarantine may have dropped it since the
  // lookup).
  bool still_indexed(const ResumePoint& point) const;
  // Marks a restored resume point (and a snapshot's chunks) as used now.
  void touch(const ResumePoint& point);

  // Keeps a file in the RAM tier; what the tier evicts for it and is not on disk is forgotten.
  void remember_in_memory(const std::string& name, SharedBytes bytes);
  void forget_memory_only(const std::vector<std::string>& names);
  // Whether the index lists the file `name` as on local disk.
  bool indexed_on_disk(const std::string& name);
  // A file the index lists as on disk was not found: it and what depends on it are forgotten.
  void forget_vanished(const std::string& name);
  // The store folder was deleted or replaced while serving: what the index lists as on disk is
  // gone. It is forgotten (RAM copies stay restorable) so the next captures write it again.
  void check_store_folder();
  // Moves a file that failed verification out of every tier and the index; from_shared: the bad
  // bytes came from the shared tier, which deletes them.
  void quarantine(const std::string& name, bool from_shared = false);
  void check_chunks(const std::vector<Hash128>& chunks);
  void drop_snapshots_naming(const Hash128& chunk);

  // Eviction (cache_tiers_eviction.cpp). The disk bytes the cap counts; caller holds mutex.
  uint64_t disk_bytes_locked() const;
  void evict_if_needed(bool force_to_low_water);
  // Evicts at least `bytes` if the policy finds that much; returns what it freed.
  uint64_t make_room(uint64_t bytes, const std::vector<Hash128>& keep);
  // Chunks that no snapshot names (hybrid models: never restorable): removed.
  void collect_orphans();

  const CacheConfig config;
  const Hash128 fingerprint;
  const StateLayout layout;
  Env* const env;
  std::unique_ptr<MemoryTier> memory;  // null without memory_prefix_cache
  std::unique_ptr<DiskStore> disk;     // null without disk_kv_cache
  std::unique_ptr<SharedTier> shared;  // null without the shared tier
  CacheMetrics metrics;
  DiskHealth disk_health{metrics};
  std::function<int64_t()> now_ms;  // the clock of created / last-used times

  mutable std::mutex mutex;  // guards the index and the byte counters below
  CacheIndex index;
  uint64_t quarantine_bytes = 0;
  std::vector<BlobInfo> foreign_stores;  // other fingerprints' store folders

 private:
  void open_store();
  // The policy's steps to free `bytes`, never touching `keep`. Caller holds mutex.
  std::vector<EvictionStep> plan_eviction_locked(uint64_t bytes, const std::vector<Hash128>& keep);
  void apply_eviction(const std::vector<EvictionStep>& steps);
};

}  // namespace qmlx
