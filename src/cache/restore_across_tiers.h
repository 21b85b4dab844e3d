// TierRestorer: internal to PrefixCache. The read side of the cache. A prompt's resume points
// come from the local index and the shared tier, merged deepest first, and are tried in that
// order through the restore guard and restore_point() (restorer.h), each file fetched from the
// first tier that has it (RAM, disk, shared). A candidate that fails leaves the tiers more
// honest than it found them: the corrupt file is quarantined (and deleted from the shared tier
// when it came from there) and a stale shared index entry is dropped, then the next candidate
// is tried. What a successful restore read from the shared tier is adopted to local disk
// (shared_exchange.h), so the next restore of that prefix is local.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "cache/cache_tiers.h"
#include "cache/prefix_cache.h"
#include "cache/restore_guard.h"
#include "cache/restorer.h"
#include "cache/writer.h"

namespace qmlx {

class TierRestorer {
 public:
  // Adopted files are handed to `writer`.
  TierRestorer(CacheTiers& tiers, SnapshotWriter& writer);
  TierRestorer(const TierRestorer&) = delete;
  TierRestorer& operator=(const TierRestorer&) = delete;

  // The local index's resume points and those of the shared tier that it lacks: deepest first;
  // at one position a snapshot before a chunk boundary, local before shared. count_lookup: the
  // shared tier counts the probe (idle work is not counted).
  std::vector<ResumePoint> resume_points(std::span<const int32_t> prompt, bool count_lookup);
  // Tries `points` in order until one installs into sink, accumulating the stage timings and
  // rejections into *result; with none, the sink's `live` tokens are a hit of tier "session".
  // Fills hit, point, cached_tokens and tier, or miss_reason with the sink reset to position 0.
  // *evicted: a local candidate was dropped from the index after the lookup.
  void restore_deepest(const std::vector<ResumePoint>& points, std::span<const int32_t> prompt,
                       StateSink& sink, int64_t live, RestoreResult* result, bool* evicted);
  // One attempt at one resume point: guard, read, verify, install; on failure the corrupt file
  // is quarantined and the rejection counted.
  RestoreOutcome restore_point(const ResumePoint& point, std::span<const int32_t> prompt,
                               StateSink& sink);
  // What restoring `point` adds to memory (the guard's estimate).
  RestoreEstimate estimate(const ResumePoint& point) const;

  // For tests: replaces available_memory_bytes() in the guard.
  void set_available_memory_source(std::function<uint64_t()> source) {
    available_memory_ = std::move(source);
  }

 private:
  CacheTiers& tiers_;
  SnapshotWriter& writer_;
  std::function<uint64_t()> available_memory_;
};

}  // namespace qmlx
