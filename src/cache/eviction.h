// Eviction planning: which stored files to delete, in what order, to bring the disk cache
// from above its cap down to the low-water mark. Planning is a pure function of the index and
// the store's listing so each policy's order can be tested directly. `unmatchable_first`
// (cache-design.md "Eviction") first frees what can never be restored: quarantined files,
// other fingerprints' stores, chunks no snapshot names (hybrid models); then snapshots by kind
// value (interval and prefill_progress before message_boundary and canonical_history), least
// recently used first within a kind value, each followed by the chunks it leaves unreferenced.
// `lru` and `oldest` order snapshots by last use or creation alone. Pinned snapshots stay.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/blob_store.h"
#include "cache/config.h"
#include "cache/index.h"

namespace qmlx {

struct EvictionStep {
  enum class Target { kQuarantined, kForeignStore, kChunk, kSnapshot };
  Target target = Target::kChunk;
  std::string name;  // blob name (quarantined) or folder path (foreign store)
  Hash128 id;        // chunk chain hash or snapshot id
  uint64_t bytes = 0;
  std::string reason;  // the label of qmlx_evictions_total
};

struct EvictionInputs {
  const CacheIndex* index = nullptr;
  std::vector<BlobInfo> quarantined;
  std::vector<BlobInfo> foreign_stores;  // name = folder path, bytes = its total size
  // Chunks that must stay: those of the write that is making room for itself.
  std::vector<Hash128> keep_chunks;
};

// Steps that free at least bytes_to_free (or everything evictable when that is not enough).
std::vector<EvictionStep> plan_eviction(const EvictionInputs& inputs, EvictionPolicy policy,
                                        uint64_t bytes_to_free);

}  // namespace qmlx
