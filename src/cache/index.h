// CacheIndex: the in-RAM picture of what can be restored under one fingerprint: every chunk
// by chain hash, every snapshot by prefix hash with its header facts and chunk list. Lookup
// walks the prompt's chain hashes through it, so finding the deepest resume point costs one
// hash per chunk and never touches the disk. Not thread-safe; PrefixCache serializes access.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <unordered_map>
#include <vector>

#include "cache/disk_store.h"
#include "cache/file_format.h"
#include "cache/hash.h"

namespace qmlx {

struct SnapshotEntry {
  SnapshotHeader header;
  std::vector<Hash128> chunks;
  uint64_t bytes = 0;
  int64_t last_used_ms = 0;
  bool pinned = false;
  bool on_disk = false;
};

struct ChunkEntry {
  uint64_t bytes = 0;
  int64_t last_used_ms = 0;
  bool on_disk = false;
};

// A place where a prompt can resume: a snapshot, or (attention-only models) a chunk boundary.
struct ResumePoint {
  int64_t position = 0;
  bool is_snapshot = false;
  Hash128 id;  // the snapshot's id, or the chain hash of the last chunk
  SnapshotKind kind = SnapshotKind::kInterval;  // snapshots only
  // Found in the shared tier's index, not the local one; base: its chain hash below position.
  bool from_shared = false;
  Hash128 base;

  static ResumePoint snapshot(int64_t position, const Hash128& id, SnapshotKind kind) {
    ResumePoint p;
    p.position = position;
    p.is_snapshot = true;
    p.id = id;
    p.kind = kind;
    return p;
  }
  // A chunk boundary (id: the chain hash of the chunk ending there; empty: a live session).
  static ResumePoint boundary(int64_t position, const Hash128& id) {
    ResumePoint p;
    p.position = position;
    p.id = id;
    return p;
  }
};

class CacheIndex {
 public:
  CacheIndex(const Hash128& fingerprint, int chunk_tokens, bool has_recurrent_state)
      : fingerprint_(fingerprint), chunk_tokens_(chunk_tokens), hybrid_(has_recurrent_state) {}

  const Hash128& fingerprint() const { return fingerprint_; }
  int chunk_tokens() const { return chunk_tokens_; }
  // Hybrid models resume only at snapshots; attention-only models at any chunk boundary.
  bool hybrid() const { return hybrid_; }

  // Indexes everything a store scan found (as on disk, last used = created).
  void load(const StoreScan& scan);

  void add_chunk(const Hash128& h, const ChunkEntry& entry);
  void remove_chunk(const Hash128& h);
  bool has_chunk(const Hash128& h) const { return chunks_.count(h) != 0; }
  ChunkEntry* chunk(const Hash128& h);
  // How many indexed snapshots name the chunk.
  int chunk_refs(const Hash128& h) const;

  void add_snapshot(SnapshotEntry entry);
  void remove_snapshot(const Hash128& id);
  SnapshotEntry* snapshot(const Hash128& id);
  const SnapshotEntry* snapshot(const Hash128& id) const;

  // Resume points for the prompt, deepest first (a snapshot before a chunk boundary at the
  // same position). A point at the prompt's full length is offered only with stored logits,
  // and a snapshot only when every chunk it names is indexed.
  std::vector<ResumePoint> resume_points(std::span<const int32_t> prompt) const;
  // The number of the prompt's leading chunks present in the index.
  int64_t shared_chunks(std::span<const Hash128> prompt_chain) const;

  const std::unordered_map<Hash128, SnapshotEntry, Hash128Hasher>& snapshots() const {
    return snapshots_;
  }
  const std::unordered_map<Hash128, ChunkEntry, Hash128Hasher>& chunks() const { return chunks_; }
  uint64_t snapshot_bytes() const { return snapshot_bytes_; }
  uint64_t chunk_bytes() const { return chunk_bytes_; }

 private:
  bool chunks_present(const SnapshotEntry& entry) const;

  Hash128 fingerprint_;
  int chunk_tokens_;
  bool hybrid_;
  std::unordered_map<Hash128, ChunkEntry, Hash128Hasher> chunks_;
  std::unordered_map<Hash128, SnapshotEntry, Hash128Hasher> snapshots_;
  std::unordered_map<Hash128, int, Hash128Hasher> refs_;
  std::multimap<Hash128, Hash128> by_base_;  // base chain hash -> snapshot id
  uint64_t snapshot_bytes_ = 0;
  uint64_t chunk_bytes_ = 0;
};

}  // namespace qmlx
