#include "cache/checkpoint_commit.h"

#include <algorithm>

#include "base/elapsed.h"
#include "cache/shared_exchange.h"

namespace qmlx {
namespace {

// The bytes a write puts on disk at most: its snapshot and every chunk it carries.
uint64_t write_bytes(const PendingWrite& write) {
  uint64_t total = write.sealed ? write.sealed->size() : write.file.size();
  for (const PendingChunk& chunk : write.chunks) {
    total += chunk.sealed ? chunk.sealed->size() : chunk.file.size();
  }
  return total;
}

}  // namespace

bool CheckpointCommitter::worth_capturing(const Hash128& id, SnapshotKind kind) const {
  std::lock_guard<std::mutex> lock(tiers_.mutex);
  const SnapshotEntry* entry = tiers_.index.snapshot(id);
  return entry == nullptr || snapshot_kind_value(kind) > snapshot_kind_value(entry->header.kind);
}

// The next request may come before the writer has reached this write (a coding agent's next
// turn often does), so with the RAM tier the capture is restorable at once: sealed here, its
// files shared with the writer, indexed as not yet on disk. The writer then only persists it.
void CheckpointCommitter::publish_in_memory(PendingWrite& write) {
  seal_and_share(write);
  const int64_t now = tiers_.now_ms();
  for (const PendingChunk& chunk : write.chunks) {
    const Hash128 h = chunk.header.chain_hash;
    {
      std::lock_guard<std::mutex> lock(tiers_.mutex);
      if (tiers_.index.has_chunk(h)) continue;
      tiers_.index.add_chunk(h, ChunkEntry{chunk.sealed->size(), now, false});
    }
    tiers_.remember_in_memory(DiskStore::chunk_name(h), chunk.sealed);
  }
  const Hash128 id = write.header.id;
  {
    std::lock_guard<std::mutex> lock(tiers_.mutex);
    const SnapshotEntry* old = tiers_.index.snapshot(id);
    const bool pinned = old != nullptr && old->pinned;
    const bool on_disk = old != nullptr && old->on_disk;
    tiers_.index.add_snapshot(SnapshotEntry{write.header, write.chunk_list, write.sealed->size(),
                                            write.header.created_ms, pinned, on_disk});
  }
  tiers_.remember_in_memory(DiskStore::snapshot_name(id), write.sealed);
}

void CheckpointCommitter::commit(PendingWrite& write) {
  const auto start = SteadyClock::now();
  const Hash128 id = write.header.id;
  const std::string kind(snapshot_kind_name(write.header.kind));
  DiskStore* disk = tiers_.disk.get();
  if (write.chunks_only) {
    if (disk) tiers_.check_store_folder();
    std::vector<Hash128> written;
    if (!commit_chunks(write, &written) && disk) undo_chunks(written);
    tiers_.evict_if_needed(false);
    return;
  }
  if (write.published()) {
    if (!disk) {
      publish_to_shared(tiers_, write, write.sealed);
      tiers_.metrics.observe_write(kind, seconds_since(start));  // it lives in the RAM tier only
      return;
    }
    std::lock_guard<std::mutex> lock(tiers_.mutex);
    const SnapshotEntry* entry = tiers_.index.snapshot(id);
    if (entry != nullptr && entry->on_disk) return;  // a better kind already persisted it
  } else {
    if (!worth_capturing(id, write.header.kind)) return;
    seal_pending(write);
  }
  if (disk) tiers_.check_store_folder();
  std::vector<Hash128> written;
  if (!commit_chunks(write, &written)) {
    if (disk) undo_chunks(written);
    return;
  }
  SealedFile bytes = write.sealed
                         ? write.sealed
                         : std::make_shared<const std::vector<uint8_t>>(std::move(write.file));
  if (disk) {
    Status s = put_making_room(DiskStore::snapshot_name(id), *bytes, write);
    if (!s.ok()) {
      count_write_error(s);
      undo_chunks(written);
      return;
    }
    // A write that only fit after evicting for room does not end a no-space episode.
    if (!room_made_for_no_space_) tiers_.disk_health.ok();
    room_made_for_no_space_ = false;
  }
  {
    std::lock_guard<std::mutex> lock(tiers_.mutex);
    const SnapshotEntry* old = tiers_.index.snapshot(id);
    const bool pinned = old != nullptr && old->pinned;
    const int64_t used = old != nullptr ? old->last_used_ms : write.header.created_ms;
    SnapshotHeader header = write.header;
    // A better kind published in RAM after this write was queued keeps its kind.
    if (old != nullptr &&
        snapshot_kind_value(old->header.kind) > snapshot_kind_value(header.kind)) {
      header.kind = old->header.kind;
    }
    tiers_.index.add_snapshot(
        SnapshotEntry{header, write.chunk_list, bytes->size(), used, pinned, disk != nullptr});
  }
  if (tiers_.memory && !write.published()) {
    tiers_.remember_in_memory(DiskStore::snapshot_name(id), bytes);
  }
  publish_to_shared(tiers_, write, bytes);
  tiers_.metrics.observe_write(kind, seconds_since(start));
  tiers_.evict_if_needed(false);
}

// Makes every chunk the snapshot names durable before the snapshot itself: the chunks this
// write carries, and any that so far lived only in the RAM tier (their own write was dropped).
bool CheckpointCommitter::commit_chunks(PendingWrite& write, std::vector<Hash128>* written) {
  DiskStore* disk = tiers_.disk.get();
  for (const Hash128& h : write.chunk_list) {
    bool indexed = false;
    {
      std::lock_guard<std::mutex> lock(tiers_.mutex);
      const ChunkEntry* entry = tiers_.index.chunk(h);
      if (entry != nullptr && (entry->on_disk || !disk)) continue;
      indexed = entry != nullptr;
    }
    SealedFile bytes;
    for (PendingChunk& chunk : write.chunks) {
      if (chunk.header.chain_hash != h) continue;
      // Kept in the write: publish_to_shared() sends it to the shared tier after the commit.
      if (!chunk.sealed) {
        chunk.sealed = std::make_shared<const std::vector<uint8_t>>(std::move(chunk.file));
      }
      bytes = chunk.sealed;
    }
    if (!bytes && indexed && tiers_.memory) bytes = tiers_.memory->get(DiskStore::chunk_name(h));
    if (!bytes) {
      tiers_.metrics.count_dropped("missing_chunk");
      return false;
    }
    if (disk) {
      Status s = put_making_room(DiskStore::chunk_name(h), *bytes, write);
      if (!s.ok()) {
        count_write_error(s);
        return false;
      }
      written->push_back(h);
    }
    {
      std::lock_guard<std::mutex> lock(tiers_.mutex);
      const ChunkEntry* old = tiers_.index.chunk(h);
      const int64_t used = old != nullptr ? old->last_used_ms : tiers_.now_ms();
      tiers_.index.add_chunk(h, ChunkEntry{bytes->size(), used, disk != nullptr});
    }
    if (tiers_.memory && !write.published()) {
      tiers_.remember_in_memory(DiskStore::chunk_name(h), bytes);
    }
  }
  return true;
}

Status CheckpointCommitter::put_making_room(const std::string& name,
                                            const std::vector<uint8_t>& bytes,
                                            const PendingWrite& write) {
  Status s = tiers_.disk->blobs().put(name, bytes);
  if (s.code() != Status::Code::kNoSpace || room_made_for_no_space_) return s;
  tiers_.disk_health.fault(s, "checkpoint write");
  // The disk holds no more than the store has now: evict as if that were the cap (at least the
  // whole write). Once per episode: when something else fills the disk, evicting more would
  // only empty the cache.
  room_made_for_no_space_ = true;
  uint64_t goal = write_bytes(write);
  {
    std::lock_guard<std::mutex> lock(tiers_.mutex);
    goal = std::max(goal, uint64_t(double(tiers_.disk_bytes_locked()) *
                                   (1 - tiers_.config.low_water_fraction)));
  }
  if (tiers_.make_room(goal, write.chunk_list) == 0) return s;
  return tiers_.disk->blobs().put(name, bytes);
}

void CheckpointCommitter::undo_chunks(const std::vector<Hash128>& written) {
  for (const Hash128& h : written) {
    tiers_.disk->remove_chunk(h);  // a failure leaves an orphan that the next collection removes
    bool forget = false;
    {
      std::lock_guard<std::mutex> lock(tiers_.mutex);
      ChunkEntry* entry = tiers_.index.chunk(h);
      if (entry == nullptr) continue;
      if (tiers_.memory && tiers_.memory->contains(DiskStore::chunk_name(h))) {
        entry->on_disk = false;
      } else {
        tiers_.index.remove_chunk(h);
        forget = true;
      }
    }
    if (forget) tiers_.drop_snapshots_naming(h);
  }
}

void CheckpointCommitter::count_write_error(const Status& s) {
  tiers_.metrics.count_dropped(s.code() == Status::Code::kNoSpace ? "no_space" : "io");
  tiers_.disk_health.fault(s, "checkpoint write");
}

}  // namespace qmlx
