// SharedTier: the cache's use of the shared store (SharedBlobStore over Redis Cluster). Files
// keep their DiskStore names, so a chunk or snapshot is the same bytes in every tier and is
// verified the same way whichever tier it came from. Beside the files it keeps a small index
// per base chain hash (`index/<base>`: snapshot id -> position, kind, logits), so a prompt's
// resume points in the shared tier are found with one pipelined HGETALL over the prompt's chain
// hashes (plus one EXISTS batch for attention-only models), never a listing.
//   resume_points(prompt)   what the shared tier may restore, deepest first (unverified)
//   publish(...)            a committed snapshot: its missing chunks, the snapshot, its index
//                           entry, in that order; chunks already present are not sent again
//   pin / forget            pins reach the tier (no TTL); a stale index entry is dropped
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cache/capture.h"
#include "cache/config.h"
#include "cache/index.h"
#include "cache/shared_blob_store.h"

namespace qmlx {

class SharedTier {
 public:
  // Throws qmlx::Error when an environment variable the config names is not set.
  SharedTier(const SharedTierConfig& config, const Hash128& fingerprint);

  bool reads() const { return config_.read; }
  bool writes() const { return config_.write; }
  SharedBlobStore& store() { return *store_; }

  // Snapshots indexed under the prompt's chain hashes that match the prompt (and, for
  // attention-only models, the chunk boundaries present), deepest first. Nothing is verified
  // yet; a point whose files are gone is a clean miss when restored.
  std::vector<ResumePoint> resume_points(std::span<const int32_t> prompt,
                                         const Hash128& fingerprint, int chunk_tokens, bool hybrid);

  // Bytes of a chunk the snapshot names (from the write, the RAM tier or the disk), or null.
  using ChunkSource = std::function<SealedFile(const Hash128&)>;
  Status publish(const SnapshotHeader& header, const std::vector<Hash128>& chunk_list,
                 const SealedFile& snapshot, const ChunkSource& chunk_bytes);
  // Pins (no TTL) or unpins a snapshot and the chunks it names.
  Status pin(const Hash128& id, const std::vector<Hash128>& chunks, bool pinned);
  // Drops the index entry of a snapshot that is gone or failed verification.
  void forget(const SnapshotHeader& header);
  void forget(const Hash128& base, const Hash128& id);

  static std::string index_name(const Hash128& base);

  // What the tier holds for this fingerprint (a SCAN of every master: for `qmlx cache stats`,
  // not for the request path).
  struct Summary {
    size_t snapshots = 0;
    size_t chunks = 0;
    uint64_t bytes = 0;
  };
  Status summarize(Summary* out);

 private:
  SharedTierConfig config_;
  std::unique_ptr<SharedBlobStore> store_;
};

}  // namespace qmlx
