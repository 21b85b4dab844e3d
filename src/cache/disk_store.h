// DiskStore: one fingerprint's folder of the on-disk cache (<disk_cache_dir>/<F hex>/), in the
// layout of cache-design.md: chunks/ab/<chain hash>.kv, snapshots/<prefix hash>.snap, pins/,
// quarantine/. It knows names and file formats but no policy: the index, the writer and
// eviction decide what to store, keep and restore. Opening it reads only snapshot headers and
// chunk lists (never payloads) and removes what interrupted writes left behind.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
#include "cache/blob_store.h"
#include "cache/file_format.h"

namespace qmlx {

struct StoredSnapshot {
  SnapshotHeader header;
  std::vector<Hash128> chunks;
  uint64_t bytes = 0;
  bool pinned = false;
};

struct StoredChunk {
  Hash128 hash;
  uint64_t bytes = 0;
};

// What open() found.
struct StoreScan {
  std::vector<StoredSnapshot> snapshots;
  std::vector<StoredChunk> chunks;
  std::vector<BlobInfo> quarantined;
  int leftovers_removed = 0;
  int corrupt_quarantined = 0;  // snapshots whose header failed to decode
};

class DiskStore {
 public:
  DiskStore(Env* env, std::string dir, bool fsync);

  // Prepares the folder and scans it. Headers that fail to decode are quarantined.
  Status open(StoreScan* scan);
  const std::string& dir() const { return blobs_.root(); }
  BlobStore& blobs() { return blobs_; }

  static std::string chunk_name(const Hash128& chain_hash);
  static std::string snapshot_name(const Hash128& id);
  static std::string pin_name(const Hash128& id);
  // The hash in a chunk or snapshot name; *is_chunk tells which it was.
  static std::optional<Hash128> hash_of_name(const std::string& name, bool* is_chunk);
  static constexpr const char* kChunksFolder = "chunks";
  static constexpr const char* kSnapshotsFolder = "snapshots";
  static constexpr const char* kPinsFolder = "pins";

  Status put_chunk(const Hash128& chain_hash, std::span<const uint8_t> file);
  Status put_snapshot(const Hash128& id, std::span<const uint8_t> file);
  Status get_chunk(const Hash128& chain_hash, std::vector<uint8_t>* out);
  Status get_snapshot(const Hash128& id, std::vector<uint8_t>* out);
  // The snapshot's header and chunk list, read without its payload.
  Status read_snapshot_header(const Hash128& id, StoredSnapshot* out);
  // Token ids [0, header.position) from the snapshot's token blob (for divergence reports).
  Status read_snapshot_tokens(const SnapshotHeader& header, std::vector<int32_t>* out);
  Status remove_chunk(const Hash128& chain_hash);
  Status remove_snapshot(const Hash128& id);
  Status quarantine_chunk(const Hash128& chain_hash);
  Status quarantine_snapshot(const Hash128& id);
  Status set_pinned(const Hash128& id, bool pinned);
  bool is_pinned(const Hash128& id);
  // Removes everything in quarantine/; adds the bytes freed to *freed.
  Status clear_quarantine(uint64_t* freed);

 private:
  Status scan_snapshots(StoreScan* scan);
  Status scan_chunks(StoreScan* scan);

  Env* env_;
  EnvBlobStore blobs_;
};

// The fingerprint named by a store folder name, if it is one.
std::optional<Hash128> store_fingerprint_of(const std::string& folder_name);

}  // namespace qmlx
