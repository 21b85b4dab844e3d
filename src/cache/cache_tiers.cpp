#include "cache/cache_tiers.h"

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "base/error.h"
#include "base/logging.h"

namespace qmlx {
namespace {

int64_t system_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

CacheTiers::CacheTiers(const CacheConfig& config, const Hash128& fingerprint,
                       const StateLayout& layout, Env* env)
    : config(config),
      fingerprint(fingerprint),
      layout(layout),
      env(env),
      now_ms(system_now_ms),
      index(fingerprint, config.chunk_tokens, layout.has_recurrent_state()) {
  if (config.memory_prefix_cache) memory = std::make_unique<MemoryTier>(config.memory_cap_bytes());
  if (config.disk_kv_cache) open_store();
  if (config.shared.enabled) shared = std::make_unique<SharedTier>(config.shared, fingerprint);
}

void CacheTiers::open_store() {
  disk = std::make_unique<DiskStore>(env, join_path(config.disk_cache_dir, fingerprint.hex()),
                                     config.fsync);
  StoreScan scan;
  Status s = disk->open(&scan);
  if (!s.ok()) throw Error("cache: cannot open store " + disk->dir() + ": " + s.ToString());
  metrics.count_leftovers(uint64_t(scan.leftovers_removed));
  // Snapshots that cannot match this model (another chunk size or shape) are dead weight.
  std::erase_if(scan.snapshots, [&](const StoredSnapshot& stored) {
    if (stored.header.fingerprint == fingerprint &&
        snapshot_matches_layout(stored.header, layout, config.chunk_tokens)) {
      return false;
    }
    if (disk->quarantine_snapshot(stored.header.id).ok()) {
      scan.quarantined.push_back({DiskStore::snapshot_name(stored.header.id), stored.bytes});
    }
    return true;
  });
  index.load(scan);
  for (const BlobInfo& blob : scan.quarantined) quarantine_bytes += blob.bytes;
  std::vector<std::string> names;
  if (env->list_dir(config.disk_cache_dir, &names).ok()) {
    for (const std::string& name : names) {
      const std::string path = join_path(config.disk_cache_dir, name);
      if (name == fingerprint.hex() || !store_fingerprint_of(name) || !env->is_dir(path)) {
        continue;
      }
      BlobInfo store{path, 0};
      if (env->tree_size(path, &store.bytes).ok()) foreign_stores.push_back(store);
    }
  }
  collect_orphans();  // chunks of snapshots a crash (or another server's crash) never wrote
  evict_if_needed(false);
}

std::vector<ResumePoint> CacheTiers::resume_points(std::span<const int32_t> prompt) const {
  std::lock_guard<std::mutex> lock(mutex);
  return index.resume_points(prompt);
}

FetchedFile CacheTiers::fetch(const std::string& name, bool allow_shared) {
  FetchedFile file;
  if (memory && (file.bytes = memory->get(name))) {
    file.from_memory = true;
    return file;
  }
  file.status = Status::NotFound(name + ": not in the memory tier");
  if (disk) {
    // Asked before the read and again after it: a file the writer lands, or eviction removes,
    // while this read runs is no fault (a restore races the writer that adopts what the
    // previous restore read from the shared tier).
    const bool indexed_before = indexed_on_disk(name);
    auto bytes = std::make_shared<std::vector<uint8_t>>();
    file.status = disk->blobs().get(name, bytes.get());
    if (file.status.ok()) {
      file.bytes = bytes;
      if (memory) remember_in_memory(name, file.bytes);
      return file;
    }
    // A file the index had on disk is gone (the folder was deleted or replaced while serving):
    // forget it and count the fault. A file that was never here (a resume point found in the
    // shared tier) is no fault.
    if (file.status.code() == Status::Code::kNotFound) {
      if (indexed_before && indexed_on_disk(name)) {
        forget_vanished(name);
        disk_health.fault(file.status, "read");
      }
    } else if (file.status.code() != Status::Code::kCorruption) {
      disk_health.fault(file.status, "read");
    }
  }
  if (!allow_shared) return file;
  // Not kept in the RAM tier yet: these bytes are unverified until the restore succeeds.
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  file.status = shared->store().get(name, bytes.get());
  if (file.status.ok()) file.bytes = bytes;
  file.from_shared = true;
  return file;
}

bool CacheTiers::still_indexed(const ResumePoint& point) const {
  std::lock_guard<std::mutex> lock(mutex);
  return point.is_snapshot ? index.snapshot(point.id) != nullptr : index.has_chunk(point.id);
}

void CacheTiers::touch(const ResumePoint& point) {
  std::lock_guard<std::mutex> lock(mutex);
  const int64_t now = now_ms();
  if (point.is_snapshot) {
    SnapshotEntry* entry = index.snapshot(point.id);
    if (entry == nullptr) return;
    entry->last_used_ms = now;
    for (const Hash128& h : entry->chunks) {
      if (ChunkEntry* chunk = index.chunk(h)) chunk->last_used_ms = now;
    }
  } else if (ChunkEntry* chunk = index.chunk(point.id)) {
    chunk->last_used_ms = now;
  }
}

void CacheTiers::remember_in_memory(const std::string& name, SharedBytes bytes) {
  forget_memory_only(memory->put(name, std::move(bytes)));
}

// Files that left the RAM tier and are not (yet) on disk can no longer be restored.
void CacheTiers::forget_memory_only(const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(mutex);
  for (const std::string& name : names) {
    bool is_chunk = false;
    std::optional<Hash128> h = DiskStore::hash_of_name(name, &is_chunk);
    if (!h) continue;
    if (is_chunk) {
      const ChunkEntry* entry = index.chunk(*h);
      if (entry == nullptr || entry->on_disk) continue;
      index.remove_chunk(*h);
    } else {
      const SnapshotEntry* entry = index.snapshot(*h);
      if (entry == nullptr || entry->on_disk) continue;
      index.remove_snapshot(*h);
    }
    metrics.count_eviction("memory_lru");
  }
}

bool CacheTiers::indexed_on_disk(const std::string& name) {
  bool is_chunk = false;
  std::optional<Hash128> h = DiskStore::hash_of_name(name, &is_chunk);
  if (!h) return false;
  std::lock_guard<std::mutex> lock(mutex);
  if (is_chunk) {
    const ChunkEntry* chunk = index.chunk(*h);
    return chunk != nullptr && chunk->on_disk;
  }
  const SnapshotEntry* entry = index.snapshot(*h);
  return entry != nullptr && entry->on_disk;
}

void CacheTiers::forget_vanished(const std::string& name) {
  bool is_chunk = false;
  std::optional<Hash128> h = DiskStore::hash_of_name(name, &is_chunk);
  if (!h) return;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (is_chunk) {
      index.remove_chunk(*h);
    } else {
      index.remove_snapshot(*h);
    }
  }
  if (is_chunk) drop_snapshots_naming(*h);
}

void CacheTiers::check_store_folder() {
  if (env->is_dir(disk->dir())) return;
  // What is in the way says which fault it is: nothing (deleted), or a file in the place of the
  // store folder or of a folder above it (ENOTDIR).
  uint64_t size = 0;
  Status found = env->file_size(disk->dir(), &size);
  disk_health.fault(
      found.ok() ? Status::IOError(disk->dir() + ": not a folder").with_errno(ENOTDIR) : found,
      "store folder");
  auto in_memory = [&](const std::string& name) { return memory && memory->contains(name); };
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<Hash128> gone;
  for (const auto& [h, entry] : index.chunks()) {
    if (entry.on_disk) gone.push_back(h);
  }
  for (const Hash128& h : gone) {
    if (in_memory(DiskStore::chunk_name(h))) {
      index.chunk(h)->on_disk = false;
    } else {
      index.remove_chunk(h);
    }
  }
  std::vector<std::pair<Hash128, bool>> snapshots;  // id, kept in RAM
  for (const auto& [id, entry] : index.snapshots()) {
    const bool chunks_left = std::all_of(entry.chunks.begin(), entry.chunks.end(),
                                         [&](const Hash128& h) { return index.has_chunk(h); });
    const bool keep = chunks_left && in_memory(DiskStore::snapshot_name(id));
    if (entry.on_disk || !keep) snapshots.emplace_back(id, keep);
  }
  for (const auto& [id, keep] : snapshots) {
    if (!keep) {
      index.remove_snapshot(id);
      continue;
    }
    SnapshotEntry* entry = index.snapshot(id);
    entry->on_disk = false;
    entry->pinned = false;  // the pin was a file in the folder that is gone
  }
  quarantine_bytes = 0;
}

void CacheTiers::quarantine(const std::string& name, bool from_shared) {
  if (memory) memory->remove(name);
  if (from_shared) shared->store().quarantine(name);  // deleted there and counted
  bool is_chunk = false;
  std::optional<Hash128> h = DiskStore::hash_of_name(name, &is_chunk);
  uint64_t bytes = 0;
  const bool moved =
      disk && disk->blobs().size(name, &bytes).ok() && disk->blobs().quarantine(name).ok();
  std::vector<Hash128> named_chunks;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (h && is_chunk) index.remove_chunk(*h);
    if (h && !is_chunk) {
      if (const SnapshotEntry* entry = index.snapshot(*h)) named_chunks = entry->chunks;
      index.remove_snapshot(*h);
    }
    if (moved) quarantine_bytes += bytes;
  }
  metrics.count_quarantined();
  log_warn("cache: quarantined " + name);
  if (!h) return;
  if (is_chunk) {
    drop_snapshots_naming(*h);
  } else {
    check_chunks(named_chunks);
  }
}

// The damage that corrupted a snapshot may have reached its chunks too, and a chunk that stays
// indexed is never captured again: check them now rather than on the next restore.
void CacheTiers::check_chunks(const std::vector<Hash128>& chunks) {
  for (const Hash128& h : chunks) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!index.has_chunk(h)) continue;
    }
    const std::string name = DiskStore::chunk_name(h);
    FetchedFile file = fetch(name, false);
    if (!file.status.ok()) continue;  // an I/O error says nothing about the bytes
    ChunkHeader header;
    Status s = verify_chunk(*file.bytes, h, &header);
    if (!s.ok() || header.fingerprint != fingerprint) quarantine(name);
  }
}

// Snapshots that name a quarantined chunk can no longer be restored: delete them so they are
// neither candidates nor dead weight. The chunk comes back with the next capture of its tokens.
void CacheTiers::drop_snapshots_naming(const Hash128& chunk) {
  std::vector<std::pair<Hash128, bool>> dropped;  // id, on disk
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& [id, entry] : index.snapshots()) {
      if (std::find(entry.chunks.begin(), entry.chunks.end(), chunk) != entry.chunks.end()) {
        dropped.emplace_back(id, entry.on_disk);
      }
    }
    for (const auto& [id, on_disk] : dropped) index.remove_snapshot(id);
  }
  for (const auto& [id, on_disk] : dropped) {
    if (memory) memory->remove(DiskStore::snapshot_name(id));
    if (on_disk) disk->remove_snapshot(id);
    metrics.count_eviction("missing_chunk");
  }
}

}  // namespace qmlx
