// CheckpointCommitter: internal to PrefixCache. What becomes of a captured checkpoint
// (capture.h) in the tiers. With the RAM tier it is restorable at once: publish_in_memory()
// seals it on the request thread and indexes it as not yet on disk. On the writer thread
// commit() makes it durable: every chunk it names before the snapshot itself, room made by
// eviction when the disk is full, the chunks it put undone when the snapshot fails, the index
// updated, then the snapshot published to the shared tier and the store evicted to its cap.
// A commit never throws: a failed write is counted as dropped and the cache goes on.
#pragma once

#include <string>
#include <vector>

#include "cache/cache_tiers.h"
#include "cache/capture.h"

namespace qmlx {

class CheckpointCommitter {
 public:
  explicit CheckpointCommitter(CacheTiers& tiers) : tiers_(tiers) {}
  CheckpointCommitter(const CheckpointCommitter&) = delete;
  CheckpointCommitter& operator=(const CheckpointCommitter&) = delete;

  // Whether a snapshot `id` of this kind adds anything: none is indexed, or only a less
  // valuable kind.
  bool worth_capturing(const Hash128& id, SnapshotKind kind) const;
  // Seals the write and makes it restorable from the RAM tier before the writer reaches it.
  void publish_in_memory(PendingWrite& write);
  // Persists one write (SnapshotWriter's commit, on the writer thread).
  void commit(PendingWrite& write);

 private:
  // Makes the write's chunks durable; `written` receives those this call put on disk.
  bool commit_chunks(PendingWrite& write, std::vector<Hash128>* written);
  // Puts one file of `write`. On a full disk it evicts by the policy (never the write's own
  // chunks) to make room for the whole write and tries once more, once per no-space episode.
  Status put_making_room(const std::string& name, const std::vector<uint8_t>& bytes,
                         const PendingWrite& write);
  // A write that failed removes the chunks it put on disk: no committed snapshot names them.
  void undo_chunks(const std::vector<Hash128>& written);
  void count_write_error(const Status& s);

  CacheTiers& tiers_;
  // Writer thread only: a full disk already made room once since the last successful write.
  bool room_made_for_no_space_ = false;
};

}  // namespace qmlx
