// SnapshotListing: one snapshot as the admin API shows it (`GET /admin/cache/snapshots`,
// `qmlx cache list`), the same whether a running PrefixCache or the model-less CacheAdmin
// lists it: its id, kind, length, size, times, pin, and the tiers that hold it.
#pragma once

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "cache/hash.h"
#include "cache/index.h"
#include "cache/snapshot_kind.h"

namespace qmlx {

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

}  // namespace qmlx
