#include "cache/prefix_cache.h"

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "base/error.h"
#include "base/logging.h"
#include "base/process.h"
#include "base/thread_pool.h"

namespace qmlx {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t system_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Divergence reports read at most this many token blobs.
constexpr size_t kExplainCandidates = 4;

// Why the run the prompt shares with a snapshot past what was restored gave nothing deeper: a
// resume point in it failed a check, vanished while the lookup ran, or none exists there (a
// hybrid model resumes only where a snapshot was taken).
std::string unrestored_reason(const RestoreResult& result, bool evicted) {
  for (const RejectedCandidate& rejected : result.rejected) {
    if (rejected.point.position > result.cached_tokens) {
      return std::string("rejected:") + reject_reason_name(rejected.reason);
    }
  }
  return evicted ? "evicted" : "no_resume_point";
}

// The bytes a write puts on disk at most: its snapshot and every chunk it carries.
uint64_t write_bytes(const PendingWrite& write) {
  uint64_t total = write.sealed ? write.sealed->size() : write.file.size();
  for (const PendingChunk& chunk : write.chunks) {
    total += chunk.sealed ? chunk.sealed->size() : chunk.file.size();
  }
  return total;
}

}  // namespace

nlohmann::json SnapshotListing::to_json() const {
  return nlohmann::json{{"fingerprint", fingerprint.hex()},
                        {"id", id.hex()},
                        {"kind", snapshot_kind_name(kind)},
                        {"tokens", tokens},
                        {"bytes", bytes},
                        {"chunks", chunk_count},
                        {"created_ms", created_ms},
                        {"last_used_ms", last_used_ms},
                        {"pinned", pinned},
                        {"has_logits", has_logits},
                        {"on_disk", on_disk},
                        {"in_memory", in_memory}};
}

PrefixCache::PrefixCache(const CacheConfig& config, const Hash128& fingerprint,
                         const StateLayout& layout, Env* env)
    : config_(config),
      fingerprint_(fingerprint),
      layout_(layout),
      env_(env),
      index_(fingerprint, config.chunk_tokens, layout.has_recurrent_state()),
      available_memory_(available_memory_bytes),
      now_ms_(system_now_ms) {
  if (config_.memory_prefix_cache) {
    memory_ = std::make_unique<MemoryTier>(config_.memory_cap_bytes());
  }
  if (config_.disk_kv_cache) open_store();
  if (config_.shared.enabled) shared_ = std::make_unique<SharedTier>(config_.shared, fingerprint_);
  writer_ = std::make_unique<SnapshotWriter>(
      size_t(config_.writer_queue_capacity), [this](PendingWrite& w) { commit(w); },
      [this](const PendingWrite&) { metrics_.count_dropped("queue_full"); });
}

PrefixCache::~PrefixCache() { writer_.reset(); }

std::string PrefixCache::store_dir() const { return disk_ ? disk_->dir() : ""; }

void PrefixCache::open_store() {
  disk_ = std::make_unique<DiskStore>(env_, join_path(config_.disk_cache_dir, fingerprint_.hex()),
                                      config_.fsync);
  StoreScan scan;
  Status s = disk_->open(&scan);
  if (!s.ok()) throw Error("cache: cannot open store " + disk_->dir() + ": " + s.ToString());
  metrics_.count_leftovers(uint64_t(scan.leftovers_removed));
  // Snapshots that cannot match this model (another chunk size or shape) are dead weight.
  std::erase_if(scan.snapshots, [&](const StoredSnapshot& stored) {
    if (stored.header.fingerprint == fingerprint_ &&
        snapshot_matches_layout(stored.header, layout_, config_.chunk_tokens)) {
      return false;
    }
    if (disk_->quarantine_snapshot(stored.header.id).ok()) {
      scan.quarantined.push_back({DiskStore::snapshot_name(stored.header.id), stored.bytes});
    }
    return true;
  });
  index_.load(scan);
  for (const BlobInfo& blob : scan.quarantined) quarantine_bytes_ += blob.bytes;
  std::vector<std::string> names;
  if (env_->list_dir(config_.disk_cache_dir, &names).ok()) {
    for (const std::string& name : names) {
      const std::string path = join_path(config_.disk_cache_dir, name);
      if (name == fingerprint_.hex() || !store_fingerprint_of(name) || !env_->is_dir(path)) {
        continue;
      }
      BlobInfo store{path, 0};
      if (env_->tree_size(path, &store.bytes).ok()) foreign_stores_.push_back(store);
    }
  }
  collect_orphans();  // chunks of snapshots a crash (or another server's crash) never wrote
  evict_if_needed(false);
}

std::vector<ResumePoint> PrefixCache::lookup(std::span<const int32_t> prompt) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return index_.resume_points(prompt);
}

RestoreEstimate PrefixCache::estimate(const ResumePoint& point) const {
  return estimate_restore(layout_, config_.chunk_tokens, point.position, point.is_snapshot,
                          default_pool().size());
}

uint64_t PrefixCache::snapshot_bytes_bound() const {
  return layout_.recurrent_bytes() + uint64_t(config_.chunk_tokens) * layout_.kv_bytes_per_token() +
         uint64_t(layout_.vocab_size) * sizeof(float);
}

RestoreOutcome PrefixCache::restore_point(const ResumePoint& point, std::span<const int32_t> prompt,
                                          StateSink& sink) {
  if (config_.restore_guard_enabled) {
    GuardDecision guard =
        check_restore_guard(estimate(point), available_memory_(), config_.guard_margin_bytes());
    if (!guard.allowed) {
      metrics_.count_reject(reject_reason_name(RejectReason::kGuard));
      RestoreOutcome outcome;
      outcome.reason = RejectReason::kGuard;
      outcome.detail = "restore needs " + std::to_string(guard.needed) + " bytes, " +
                       std::to_string(guard.available) + " available above the margin";
      return outcome;
    }
  }
  RestoreRequest request{point,
                         prompt,
                         fingerprint_,
                         config_.chunk_tokens,
                         config_.token_blob_checksum,
                         default_pool().size()};
  const bool allow_shared = shared_ && shared_->reads();
  std::mutex shared_mutex;  // chunks are fetched in parallel
  std::vector<std::pair<std::string, SharedBytes>> from_shared;
  RestoreOutcome outcome = qmlx::restore_point(
      request,
      [&](const std::string& name) {
        FetchedFile file = fetch(name, allow_shared);
        if (file.from_shared && file.status.ok()) {
          std::lock_guard<std::mutex> lock(shared_mutex);
          from_shared.emplace_back(name, file.bytes);
        }
        return file;
      },
      sink);
  if (!outcome.ok) {
    metrics_.count_reject(reject_reason_name(outcome.reason));
    log_warn("cache: rejected resume point at " + std::to_string(point.position) + " (" +
             reject_reason_name(outcome.reason) + "): " + outcome.detail);
    const bool bad_from_shared =
        std::any_of(from_shared.begin(), from_shared.end(),
                    [&](const auto& file) { return file.first == outcome.bad_file; });
    if (!outcome.bad_file.empty()) quarantine(outcome.bad_file, bad_from_shared);
    // A shared snapshot that is gone or bad leaves its index entry stale: drop it.
    if (point.from_shared && point.is_snapshot &&
        (outcome.reason == RejectReason::kPartial ||
         outcome.bad_file == DiskStore::snapshot_name(point.id))) {
      shared_->forget(point.base, point.id);
    }
  } else if (!from_shared.empty()) {
    adopt_from_shared(point, from_shared);
  }
  return outcome;
}

RestoreResult PrefixCache::restore(std::span<const int32_t> prompt, StateSink& sink,
                                   const RestoreOptions& options) {
  RestoreResult result;
  if (!config_.enabled()) {
    result.miss_reason = "disabled";
    if (!options.quiet) metrics_.count_miss(result.miss_reason);
    return result;
  }
  int64_t live = std::clamp<int64_t>(options.live, 0, int64_t(prompt.size()));
  const auto start = Clock::now();
  std::vector<ResumePoint> points = lookup(prompt);
  if (shared_ && shared_->reads()) {
    if (!options.quiet) shared_->store().count_lookup();  // idle work is not counted
    for (const ResumePoint& remote : shared_->resume_points(
             prompt, fingerprint_, config_.chunk_tokens, layout_.has_recurrent_state())) {
      const bool local = std::any_of(points.begin(), points.end(), [&](const ResumePoint& p) {
        return p.id == remote.id && p.is_snapshot == remote.is_snapshot;
      });
      if (!local) points.push_back(remote);
    }
    // Deepest first; at one position a snapshot before a chunk boundary, local before shared.
    std::stable_sort(points.begin(), points.end(), [](const ResumePoint& a, const ResumePoint& b) {
      if (a.position != b.position) return a.position > b.position;
      if (a.is_snapshot != b.is_snapshot) return a.is_snapshot;
      return !a.from_shared && b.from_shared;
    });
  }
  result.lookup_seconds = seconds_since(start);
  bool evicted = false;
  for (const ResumePoint& point : points) {
    if (point.position <= live) break;  // the sink already holds as much: nothing to read
    if (!point.from_shared && !still_indexed(point)) {  // dropped with a chunk quarantined now
      evicted = true;
      continue;
    }
    RestoreOutcome outcome = restore_point(point, prompt, sink);
    result.read_seconds += outcome.read_seconds;
    result.verify_seconds += outcome.verify_seconds;
    result.install_seconds += outcome.install_seconds;
    result.bytes_read += outcome.bytes_read;
    if (!outcome.ok) {
      result.rejected.push_back({point, outcome.reason, outcome.detail});
      if (outcome.sink_cleared) live = 0;
      continue;
    }
    result.hit = true;
    result.point = point;
    result.cached_tokens = point.position;
    result.tier = outcome.any_from_shared ? "shared" : outcome.all_from_memory ? "ram" : "disk";
    break;
  }
  if (!result.hit && live > 0) {
    result.hit = true;
    result.point = ResumePoint::boundary(live, Hash128{});
    result.cached_tokens = live;
    result.tier = kSessionTier;
  }
  if (result.hit && result.tier != kSessionTier) touch(result.point, result.point.position);
  if (!result.hit) {
    sink.reset(0);
    const bool all_partial =
        !result.rejected.empty() &&
        std::all_of(result.rejected.begin(), result.rejected.end(),
                    [](const RejectedCandidate& r) { return r.reason == RejectReason::kPartial; });
    result.miss_reason = points.empty() ? "no_candidate" : all_partial ? "partial" : "rejected";
  }
  if (options.quiet) return result;
  if (result.hit) {
    metrics_.count_hit(result.cached_tokens, result.tier);
    if (result.tier == "shared") shared_->store().count_hit();
    if (result.tier != kSessionTier) {
      metrics_.observe_restore(seconds_since(start), result.bytes_read);
    }
  } else {
    metrics_.count_miss(result.miss_reason);
  }
  result.divergence = explain(prompt, result.cached_tokens);
  if (result.divergence) {
    result.divergence->unrestored = unrestored_reason(result, evicted);
    metrics_.count_divergence();
  }
  return result;
}

bool PrefixCache::still_indexed(const ResumePoint& point) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return point.is_snapshot ? index_.snapshot(point.id) != nullptr : index_.has_chunk(point.id);
}

void PrefixCache::touch(const ResumePoint& point, int64_t position) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t now = now_ms_();
  if (point.is_snapshot) {
    SnapshotEntry* entry = index_.snapshot(point.id);
    if (entry == nullptr) return;
    entry->last_used_ms = now;
    for (const Hash128& h : entry->chunks) {
      if (ChunkEntry* chunk = index_.chunk(h)) chunk->last_used_ms = now;
    }
  } else if (ChunkEntry* chunk = index_.chunk(point.id)) {
    chunk->last_used_ms = now;
  }
}

FetchedFile PrefixCache::fetch(const std::string& name, bool allow_shared) {
  FetchedFile file;
  if (memory_ && (file.bytes = memory_->get(name))) {
    file.from_memory = true;
    return file;
  }
  file.status = Status::NotFound(name + ": not in the memory tier");
  if (disk_) {
    auto bytes = std::make_shared<std::vector<uint8_t>>();
    file.status = disk_->blobs().get(name, bytes.get());
    if (file.status.ok()) {
      file.bytes = bytes;
      if (memory_) remember_in_memory(name, file.bytes);
      return file;
    }
    // A file the index had on disk is gone (the folder was deleted or replaced while serving):
    // forget it and count the fault. A file that was never here (a resume point found in the
    // shared tier) is no fault.
    if (file.status.code() == Status::Code::kNotFound) {
      if (indexed_on_disk(name)) {
        forget_vanished(name);
        disk_health_.fault(file.status, "read");
      }
    } else if (file.status.code() != Status::Code::kCorruption) {
      disk_health_.fault(file.status, "read");
    }
  }
  if (!allow_shared) return file;
  // Not kept in the RAM tier yet: these bytes are unverified until the restore succeeds.
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  file.status = shared_->store().get(name, bytes.get());
  if (file.status.ok()) file.bytes = bytes;
  file.from_shared = true;
  return file;
}

void PrefixCache::adopt_from_shared(const ResumePoint& point,
                                    const std::vector<std::pair<std::string, SharedBytes>>& files) {
  PendingWrite write;
  write.from_shared = true;
  if (!point.is_snapshot) {  // an attention-only chunk boundary: its chunks are the state
    write.chunks_only = true;
    for (const auto& [name, bytes] : files) {
      PendingChunk chunk;
      if (!decode_chunk_header(*bytes, bytes->size(), &chunk.header).ok()) return;
      chunk.sealed = bytes;
      write.chunk_list.push_back(chunk.header.chain_hash);
      write.chunks.push_back(std::move(chunk));
    }
    writer_->submit(std::move(write));
    return;
  }
  const std::string snapshot = DiskStore::snapshot_name(point.id);
  for (const auto& [name, bytes] : files) {
    if (name == snapshot) {
      write.sealed = bytes;
      continue;
    }
    PendingChunk chunk;
    if (!decode_chunk_header(*bytes, bytes->size(), &chunk.header).ok()) return;
    chunk.sealed = bytes;
    write.chunks.push_back(std::move(chunk));
  }
  if (!write.sealed) {  // the snapshot was local, only chunks came from the shared tier
    std::lock_guard<std::mutex> lock(mutex_);
    const SnapshotEntry* entry = index_.snapshot(point.id);
    if (entry == nullptr) return;
    write.header = entry->header;
    write.chunk_list = entry->chunks;
    write.sealed = memory_ ? memory_->get(snapshot) : nullptr;
    if (!write.sealed) return;
  } else {
    const std::vector<uint8_t>& file = *write.sealed;
    if (!decode_snapshot_header(file, file.size(), &write.header).ok()) return;
    const SectionRef& list = write.header.sections[kChunkList];
    write.chunk_list =
        decode_chunk_list(std::span<const uint8_t>(file).subspan(list.offset, list.size));
  }
  writer_->submit(std::move(write));
}

void PrefixCache::publish_shared(const PendingWrite& write, const SealedFile& snapshot) {
  if (!shared_ || !shared_->writes() || write.from_shared) return;
  auto chunk_bytes = [&](const Hash128& h) -> SealedFile {
    for (const PendingChunk& chunk : write.chunks) {
      if (chunk.header.chain_hash == h && chunk.sealed) return chunk.sealed;
    }
    if (memory_) {
      if (SharedBytes bytes = memory_->get(DiskStore::chunk_name(h))) return bytes;
    }
    auto bytes = std::make_shared<std::vector<uint8_t>>();
    if (disk_ && disk_->get_chunk(h, bytes.get()).ok()) return bytes;
    return nullptr;
  };
  Status s = shared_->publish(write.header, write.chunk_list, snapshot, chunk_bytes);
  if (!s.ok()) {
    metrics_.count_dropped("shared");
    log_warn("cache: checkpoint not published to the shared tier: " + s.ToString());
  }
}

bool PrefixCache::indexed_on_disk(const std::string& name) {
  bool is_chunk = false;
  std::optional<Hash128> h = DiskStore::hash_of_name(name, &is_chunk);
  if (!h) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (is_chunk) {
    const ChunkEntry* chunk = index_.chunk(*h);
    return chunk != nullptr && chunk->on_disk;
  }
  const SnapshotEntry* entry = index_.snapshot(*h);
  return entry != nullptr && entry->on_disk;
}

void PrefixCache::forget_vanished(const std::string& name) {
  bool is_chunk = false;
  std::optional<Hash128> h = DiskStore::hash_of_name(name, &is_chunk);
  if (!h) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (is_chunk) {
      index_.remove_chunk(*h);
    } else {
      index_.remove_snapshot(*h);
    }
  }
  if (is_chunk) drop_snapshots_naming(*h);
}

void PrefixCache::check_store_folder() {
  if (env_->is_dir(disk_->dir())) return;
  // What is in the way says which fault it is: nothing (deleted), or a file in the place of the
  // store folder or of a folder above it (ENOTDIR).
  uint64_t size = 0;
  Status found = env_->file_size(disk_->dir(), &size);
  disk_health_.fault(
      found.ok() ? Status::IOError(disk_->dir() + ": not a folder").with_errno(ENOTDIR) : found,
      "store folder");
  auto in_memory = [&](const std::string& name) { return memory_ && memory_->contains(name); };
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Hash128> gone;
  for (const auto& [h, entry] : index_.chunks()) {
    if (entry.on_disk) gone.push_back(h);
  }
  for (const Hash128& h : gone) {
    if (in_memory(DiskStore::chunk_name(h))) {
      index_.chunk(h)->on_disk = false;
    } else {
      index_.remove_chunk(h);
    }
  }
  std::vector<std::pair<Hash128, bool>> snapshots;  // id, kept in RAM
  for (const auto& [id, entry] : index_.snapshots()) {
    const bool chunks_left = std::all_of(entry.chunks.begin(), entry.chunks.end(),
                                         [&](const Hash128& h) { return index_.has_chunk(h); });
    const bool keep = chunks_left && in_memory(DiskStore::snapshot_name(id));
    if (entry.on_disk || !keep) snapshots.emplace_back(id, keep);
  }
  for (const auto& [id, keep] : snapshots) {
    if (!keep) {
      index_.remove_snapshot(id);
      continue;
    }
    SnapshotEntry* entry = index_.snapshot(id);
    entry->on_disk = false;
    entry->pinned = false;  // the pin was a file in the folder that is gone
  }
  quarantine_bytes_ = 0;
}

void PrefixCache::remember_in_memory(const std::string& name, SharedBytes bytes) {
  forget_memory_only(memory_->put(name, std::move(bytes)));
}

// Files that left the RAM tier and are not (yet) on disk can no longer be restored.
void PrefixCache::forget_memory_only(const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::string& name : names) {
    bool is_chunk = false;
    std::optional<Hash128> h = DiskStore::hash_of_name(name, &is_chunk);
    if (!h) continue;
    if (is_chunk) {
      const ChunkEntry* entry = index_.chunk(*h);
      if (entry == nullptr || entry->on_disk) continue;
      index_.remove_chunk(*h);
    } else {
      const SnapshotEntry* entry = index_.snapshot(*h);
      if (entry == nullptr || entry->on_disk) continue;
      index_.remove_snapshot(*h);
    }
    metrics_.count_eviction("memory_lru");
  }
}

void PrefixCache::quarantine(const std::string& name, bool from_shared) {
  if (memory_) memory_->remove(name);
  if (from_shared) shared_->store().quarantine(name);  // deleted there and counted
  bool is_chunk = false;
  std::optional<Hash128> h = DiskStore::hash_of_name(name, &is_chunk);
  uint64_t bytes = 0;
  const bool moved =
      disk_ && disk_->blobs().size(name, &bytes).ok() && disk_->blobs().quarantine(name).ok();
  std::vector<Hash128> named_chunks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (h && is_chunk) index_.remove_chunk(*h);
    if (h && !is_chunk) {
      if (const SnapshotEntry* entry = index_.snapshot(*h)) named_chunks = entry->chunks;
      index_.remove_snapshot(*h);
    }
    if (moved) quarantine_bytes_ += bytes;
  }
  metrics_.count_quarantined();
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
void PrefixCache::check_chunks(const std::vector<Hash128>& chunks) {
  for (const Hash128& h : chunks) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!index_.has_chunk(h)) continue;
    }
    const std::string name = DiskStore::chunk_name(h);
    FetchedFile file = fetch(name, false);
    if (!file.status.ok()) continue;  // an I/O error says nothing about the bytes
    ChunkHeader header;
    Status s = verify_chunk(*file.bytes, h, &header);
    if (!s.ok() || header.fingerprint != fingerprint_) quarantine(name);
  }
}

// Snapshots that name a quarantined chunk can no longer be restored: delete them so they are
// neither candidates nor dead weight. The chunk comes back with the next capture of its tokens.
void PrefixCache::drop_snapshots_naming(const Hash128& chunk) {
  std::vector<std::pair<Hash128, bool>> dropped;  // id, on disk
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, entry] : index_.snapshots()) {
      if (std::find(entry.chunks.begin(), entry.chunks.end(), chunk) != entry.chunks.end()) {
        dropped.emplace_back(id, entry.on_disk);
      }
    }
    for (const auto& [id, on_disk] : dropped) index_.remove_snapshot(id);
  }
  for (const auto& [id, on_disk] : dropped) {
    if (memory_) memory_->remove(DiskStore::snapshot_name(id));
    if (on_disk) disk_->remove_snapshot(id);
    metrics_.count_eviction("missing_chunk");
  }
}

bool PrefixCache::worth_capturing(const Hash128& id, SnapshotKind kind) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const SnapshotEntry* entry = index_.snapshot(id);
  return entry == nullptr || snapshot_kind_value(kind) > snapshot_kind_value(entry->header.kind);
}

bool PrefixCache::capture(const StateSource& source, std::span<const int32_t> tokens,
                          SnapshotKind kind) {
  const int64_t position = source.position();
  if (!config_.enabled() || position <= 0 || int64_t(tokens.size()) < position) return false;
  tokens = tokens.first(size_t(position));
  if (!worth_capturing(prefix_hash(fingerprint_, tokens, config_.chunk_tokens), kind)) {
    return false;
  }
  CaptureOptions options{fingerprint_, config_.chunk_tokens, kind, now_ms_()};
  PendingWrite write = capture_state(source, tokens, options, [this](const Hash128& h) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (index_.has_chunk(h)) return false;
    }
    return !writer_->carries_chunk(h);
  });
  if (memory_) publish_in_memory(write);
  return writer_->submit(std::move(write));
}

// The next request may come before the writer has reached this write (a coding agent's next
// turn often does), so with the RAM tier the capture is restorable at once: sealed here, its
// files shared with the writer, indexed as not yet on disk. The writer then only persists it.
void PrefixCache::publish_in_memory(PendingWrite& write) {
  seal_and_share(write);
  const int64_t now = now_ms_();
  for (const PendingChunk& chunk : write.chunks) {
    const Hash128 h = chunk.header.chain_hash;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (index_.has_chunk(h)) continue;
      index_.add_chunk(h, ChunkEntry{chunk.sealed->size(), now, false});
    }
    remember_in_memory(DiskStore::chunk_name(h), chunk.sealed);
  }
  const Hash128 id = write.header.id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const SnapshotEntry* old = index_.snapshot(id);
    const bool pinned = old != nullptr && old->pinned;
    const bool on_disk = old != nullptr && old->on_disk;
    index_.add_snapshot(SnapshotEntry{write.header, write.chunk_list, write.sealed->size(),
                                      write.header.created_ms, pinned, on_disk});
  }
  remember_in_memory(DiskStore::snapshot_name(id), write.sealed);
}

void PrefixCache::flush() { writer_->flush(); }

void PrefixCache::count_write_error(const Status& s) {
  metrics_.count_dropped(s.code() == Status::Code::kNoSpace ? "no_space" : "io");
  disk_health_.fault(s, "checkpoint write");
}

uint64_t PrefixCache::make_room(uint64_t bytes, const std::vector<Hash128>& keep) {
  std::vector<EvictionStep> steps;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    steps = plan_eviction_locked(bytes, keep);
  }
  apply_eviction(steps);
  uint64_t freed = 0;
  for (const EvictionStep& step : steps) freed += step.bytes;
  return freed;
}

Status PrefixCache::put_making_room(const std::string& name, const std::vector<uint8_t>& bytes,
                                    const PendingWrite& write) {
  Status s = disk_->blobs().put(name, bytes);
  if (s.code() != Status::Code::kNoSpace || room_made_for_no_space_) return s;
  disk_health_.fault(s, "checkpoint write");
  // The disk holds no more than the store has now: evict as if that were the cap (at least the
  // whole write). Once per episode: when something else fills the disk, evicting more would
  // only empty the cache.
  room_made_for_no_space_ = true;
  uint64_t goal = write_bytes(write);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    goal = std::max(goal, uint64_t(double(disk_bytes_locked()) * (1 - config_.low_water_fraction)));
  }
  if (make_room(goal, write.chunk_list) == 0) return s;
  return disk_->blobs().put(name, bytes);
}

void PrefixCache::undo_chunks(const std::vector<Hash128>& written) {
  for (const Hash128& h : written) {
    disk_->remove_chunk(h);  // a failure leaves an orphan that the next collection removes
    bool forget = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ChunkEntry* entry = index_.chunk(h);
      if (entry == nullptr) continue;
      if (memory_ && memory_->contains(DiskStore::chunk_name(h))) {
        entry->on_disk = false;
      } else {
        index_.remove_chunk(h);
        forget = true;
      }
    }
    if (forget) drop_snapshots_naming(h);
  }
}

// Makes every chunk the snapshot names durable before the snapshot itself: the chunks this
// write carries, and any that so far lived only in the RAM tier (their own write was dropped).
bool PrefixCache::commit_chunks(PendingWrite& write, std::vector<Hash128>* written) {
  for (const Hash128& h : write.chunk_list) {
    bool indexed = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const ChunkEntry* entry = index_.chunk(h);
      if (entry != nullptr && (entry->on_disk || !disk_)) continue;
      indexed = entry != nullptr;
    }
    SealedFile bytes;
    for (PendingChunk& chunk : write.chunks) {
      if (chunk.header.chain_hash != h) continue;
      // Kept in the write: publish_shared() sends it to the shared tier after the commit.
      if (!chunk.sealed) {
        chunk.sealed = std::make_shared<const std::vector<uint8_t>>(std::move(chunk.file));
      }
      bytes = chunk.sealed;
    }
    if (!bytes && indexed && memory_) bytes = memory_->get(DiskStore::chunk_name(h));
    if (!bytes) {
      metrics_.count_dropped("missing_chunk");
      return false;
    }
    if (disk_) {
      Status s = put_making_room(DiskStore::chunk_name(h), *bytes, write);
      if (!s.ok()) {
        count_write_error(s);
        return false;
      }
      written->push_back(h);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const ChunkEntry* old = index_.chunk(h);
      const int64_t used = old != nullptr ? old->last_used_ms : now_ms_();
      index_.add_chunk(h, ChunkEntry{bytes->size(), used, disk_ != nullptr});
    }
    if (memory_ && !write.published()) remember_in_memory(DiskStore::chunk_name(h), bytes);
  }
  return true;
}

void PrefixCache::commit(PendingWrite& write) {
  const auto start = Clock::now();
  const Hash128 id = write.header.id;
  const std::string kind(snapshot_kind_name(write.header.kind));
  if (write.chunks_only) {
    if (disk_) check_store_folder();
    std::vector<Hash128> written;
    if (!commit_chunks(write, &written) && disk_) undo_chunks(written);
    evict_if_needed(false);
    return;
  }
  if (write.published()) {
    if (!disk_) {
      publish_shared(write, write.sealed);
      metrics_.observe_write(kind, seconds_since(start));  // it lives in the RAM tier only
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    const SnapshotEntry* entry = index_.snapshot(id);
    if (entry != nullptr && entry->on_disk) return;  // a better kind already persisted it
  } else {
    if (!worth_capturing(id, write.header.kind)) return;
    seal_pending(write);
  }
  if (disk_) check_store_folder();
  std::vector<Hash128> written;
  if (!commit_chunks(write, &written)) {
    if (disk_) undo_chunks(written);
    return;
  }
  SealedFile bytes = write.sealed
                         ? write.sealed
                         : std::make_shared<const std::vector<uint8_t>>(std::move(write.file));
  if (disk_) {
    Status s = put_making_room(DiskStore::snapshot_name(id), *bytes, write);
    if (!s.ok()) {
      count_write_error(s);
      undo_chunks(written);
      return;
    }
    // A write that only fit after evicting for room does not end a no-space episode.
    if (!room_made_for_no_space_) disk_health_.ok();
    room_made_for_no_space_ = false;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const SnapshotEntry* old = index_.snapshot(id);
    const bool pinned = old != nullptr && old->pinned;
    const int64_t used = old != nullptr ? old->last_used_ms : write.header.created_ms;
    SnapshotHeader header = write.header;
    // A better kind published in RAM after this write was queued keeps its kind.
    if (old != nullptr &&
        snapshot_kind_value(old->header.kind) > snapshot_kind_value(header.kind)) {
      header.kind = old->header.kind;
    }
    index_.add_snapshot(
        SnapshotEntry{header, write.chunk_list, bytes->size(), used, pinned, disk_ != nullptr});
  }
  if (memory_ && !write.published()) remember_in_memory(DiskStore::snapshot_name(id), bytes);
  publish_shared(write, bytes);
  metrics_.observe_write(kind, seconds_since(start));
  evict_if_needed(false);
}

uint64_t PrefixCache::disk_bytes_locked() const {
  uint64_t total = index_.snapshot_bytes() + index_.chunk_bytes() + quarantine_bytes_;
  for (const BlobInfo& store : foreign_stores_) total += store.bytes;
  return total;
}

void PrefixCache::evict_if_needed(bool force_to_low_water) {
  if (!disk_) return;
  std::vector<EvictionStep> steps;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t total = disk_bytes_locked();
    const uint64_t cap = config_.disk_cap_bytes();
    const uint64_t low = uint64_t(double(cap) * config_.low_water_fraction);
    if ((!force_to_low_water && total <= cap) || total <= low) return;
    steps = plan_eviction_locked(total - low, {});
  }
  apply_eviction(steps);
}

std::vector<EvictionStep> PrefixCache::plan_eviction_locked(uint64_t bytes,
                                                            const std::vector<Hash128>& keep) {
  EvictionInputs inputs{&index_, {}, foreign_stores_, keep};
  if (quarantine_bytes_ > 0) {
    disk_->blobs().list(EnvBlobStore::kQuarantineFolder, &inputs.quarantined);
  }
  return plan_eviction(inputs, config_.eviction_policy, bytes);
}

void PrefixCache::apply_eviction(const std::vector<EvictionStep>& steps) {
  for (const EvictionStep& step : steps) {
    Status s;
    std::string name;
    bool on_disk = true;  // a capture published in RAM may not have reached the disk yet
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (step.target == EvictionStep::Target::kChunk) {
        if (const ChunkEntry* c = index_.chunk(step.id)) on_disk = c->on_disk;
      } else if (step.target == EvictionStep::Target::kSnapshot) {
        if (const SnapshotEntry* e = index_.snapshot(step.id)) on_disk = e->on_disk;
      }
      switch (step.target) {
        case EvictionStep::Target::kQuarantined:
          quarantine_bytes_ -= std::min(quarantine_bytes_, step.bytes);
          break;
        case EvictionStep::Target::kForeignStore:
          std::erase_if(foreign_stores_, [&](const BlobInfo& b) { return b.name == step.name; });
          break;
        case EvictionStep::Target::kChunk:
          index_.remove_chunk(step.id);
          name = DiskStore::chunk_name(step.id);
          break;
        case EvictionStep::Target::kSnapshot:
          index_.remove_snapshot(step.id);
          name = DiskStore::snapshot_name(step.id);
          break;
      }
    }
    if (memory_ && !name.empty()) memory_->remove(name);
    switch (step.target) {
      case EvictionStep::Target::kQuarantined:
        s = disk_->blobs().remove(step.name);
        break;
      case EvictionStep::Target::kForeignStore:
        s = env_->remove_tree(step.name);
        break;
      case EvictionStep::Target::kChunk:
        if (on_disk) s = disk_->remove_chunk(step.id);
        break;
      case EvictionStep::Target::kSnapshot:
        if (on_disk) s = disk_->remove_snapshot(step.id);
        break;
    }
    // A file already gone is evicted all the same; other failures are disk faults.
    if (!s.ok() && s.code() != Status::Code::kNotFound) disk_health_.fault(s, "eviction");
    metrics_.count_eviction(step.reason);
  }
}

bool PrefixCache::read_tokens(const Hash128& id, std::vector<int32_t>* tokens) {
  SnapshotHeader header;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const SnapshotEntry* entry = index_.snapshot(id);
    if (entry == nullptr) return false;
    header = entry->header;
  }
  const SectionRef& section = header.sections[kTokens];
  SharedBytes file = memory_ ? memory_->get(DiskStore::snapshot_name(id)) : nullptr;
  if (file && file->size() >= section.offset + section.size) {
    tokens->resize(section.size / 4);
    std::memcpy(tokens->data(), file->data() + section.offset, section.size);
    return true;
  }
  return disk_ && disk_->read_snapshot_tokens(header, tokens).ok();
}

std::optional<Divergence> PrefixCache::explain(std::span<const int32_t> prompt, int64_t restored,
                                               int64_t min_shared) {
  const std::vector<Hash128> chain = chain_hashes(fingerprint_, prompt, config_.chunk_tokens);
  // (leading chunks shared, last used, id): the snapshots that can share the most.
  std::vector<std::tuple<size_t, int64_t, Hash128>> nearest;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, entry] : index_.snapshots()) {
      size_t shared = 0;
      while (shared < entry.chunks.size() && shared + 1 < chain.size() &&
             entry.chunks[shared] == chain[shared + 1]) {
        ++shared;
      }
      int64_t bound = shared == entry.chunks.size() ? entry.header.position
                                                    : int64_t(shared + 1) * config_.chunk_tokens;
      bound = std::min<int64_t>(bound, int64_t(prompt.size()));
      // A split inside the restored prefix is impossible; past it, a replaced token may hide a
      // long shared run (find_divergence decides), so any snapshot reaching past it qualifies.
      if (bound > restored) nearest.emplace_back(shared, entry.last_used_ms, id);
    }
  }
  std::sort(nearest.rbegin(), nearest.rend());
  if (nearest.size() > kExplainCandidates) nearest.resize(kExplainCandidates);
  std::optional<Divergence> best;
  for (const auto& [shared, used, id] : nearest) {
    std::vector<int32_t> tokens;
    if (!read_tokens(id, &tokens)) continue;
    auto d = find_divergence(prompt, tokens, restored, min_shared);
    if (!d || (best && best->position >= d->position)) continue;
    best = std::move(d);
    best->snapshot_id = id;
    std::lock_guard<std::mutex> lock(mutex_);
    if (const SnapshotEntry* entry = index_.snapshot(id)) best->snapshot_kind = entry->header.kind;
  }
  return best;
}

SnapshotListing make_listing(const Hash128& fingerprint, const SnapshotEntry& e) {
  SnapshotListing l;
  l.fingerprint = fingerprint;
  l.id = e.header.id;
  l.kind = e.header.kind;
  l.tokens = e.header.position;
  l.bytes = e.bytes;
  l.chunk_count = e.chunks.size();
  l.created_ms = e.header.created_ms;
  l.last_used_ms = e.last_used_ms;
  l.pinned = e.pinned;
  l.has_logits = e.header.has_logits;
  l.on_disk = e.on_disk;
  return l;
}

SnapshotListing PrefixCache::listing_of(const SnapshotEntry& e) const {
  SnapshotListing l = make_listing(fingerprint_, e);
  l.in_memory = memory_ && memory_->contains(DiskStore::snapshot_name(e.header.id));
  return l;
}

std::vector<SnapshotListing> PrefixCache::list() const {
  std::vector<SnapshotListing> out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, entry] : index_.snapshots()) out.push_back(listing_of(entry));
  }
  std::sort(out.begin(), out.end(), [](const SnapshotListing& a, const SnapshotListing& b) {
    return a.last_used_ms > b.last_used_ms;
  });
  return out;
}

std::optional<SnapshotListing> PrefixCache::inspect(const Hash128& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const SnapshotEntry* entry = index_.snapshot(id);
  if (entry == nullptr) return std::nullopt;
  return listing_of(*entry);
}

VerifyReport PrefixCache::verify(const Hash128& id) {
  if (!disk_) {
    VerifyReport report;
    report.id = id;
    report.reason = RejectReason::kIo;
    report.detail = "verify needs the disk tier";
    return report;
  }
  VerifyReport report = verify_stored_snapshot(*disk_, id, fingerprint_);
  if (!report.ok) {
    metrics_.count_reject(reject_reason_name(report.reason));
    if (!report.bad_file.empty()) quarantine(report.bad_file);
  }
  return report;
}

std::vector<VerifyReport> PrefixCache::verify_all() {
  std::vector<VerifyReport> reports;
  for (const SnapshotListing& listing : list()) reports.push_back(verify(listing.id));
  return reports;
}

Status PrefixCache::pin(const Hash128& id, bool pinned) {
  if (disk_) {
    Status s = disk_->set_pinned(id, pinned);
    if (!s.ok()) return s;
  }
  std::vector<Hash128> chunks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    SnapshotEntry* entry = index_.snapshot(id);
    if (entry == nullptr) return Status::NotFound("snapshot " + id.hex());
    entry->pinned = pinned;
    chunks = entry->chunks;
  }
  if (shared_ && shared_->writes()) {
    Status s = shared_->pin(id, chunks, pinned);
    if (!s.ok()) log_warn("cache: pin did not reach the shared tier: " + s.ToString());
  }
  return Status::Ok();
}

Status PrefixCache::remove(const Hash128& id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (index_.snapshot(id) == nullptr) return Status::NotFound("snapshot " + id.hex());
    index_.remove_snapshot(id);
  }
  if (memory_) memory_->remove(DiskStore::snapshot_name(id));
  return disk_ ? disk_->remove_snapshot(id) : Status::Ok();
}

Status PrefixCache::clear() {
  writer_->flush();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    index_ = CacheIndex(fingerprint_, config_.chunk_tokens, layout_.has_recurrent_state());
    quarantine_bytes_ = 0;
  }
  if (memory_) memory_->clear();
  if (!disk_) return Status::Ok();
  Status s = env_->remove_tree(disk_->dir());
  if (s.code() == Status::Code::kNotFound) s = Status::Ok();  // deleted already: as cleared
  StoreScan scan;
  if (s.ok()) s = disk_->open(&scan);
  return s;
}

void PrefixCache::gc() {
  writer_->flush();
  if (!disk_) return;
  uint64_t freed = 0;
  disk_->clear_quarantine(&freed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quarantine_bytes_ = 0;
  }
  collect_orphans();
  evict_if_needed(false);
}

void PrefixCache::collect_orphans() {
  std::vector<EvictionStep> orphans;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!index_.hybrid()) return;
    for (const auto& [h, chunk] : index_.chunks()) {
      if (index_.chunk_refs(h) == 0) {
        orphans.push_back({EvictionStep::Target::kChunk, {}, h, chunk.bytes, "unreferenced_chunk"});
      }
    }
  }
  apply_eviction(orphans);
}

CacheStats PrefixCache::stats() const {
  CacheStats stats = metrics_.snapshot();
  stats.checkpoint_queue_depth = writer_->depth();
  std::lock_guard<std::mutex> lock(mutex_);
  stats.disk_cache_bytes = disk_ ? disk_bytes_locked() : 0;
  stats.disk_cache_snapshots = index_.snapshots().size();
  stats.disk_cache_chunks = index_.chunks().size();
  stats.memory_cache_bytes = memory_ ? memory_->bytes() : 0;
  if (shared_) stats.shared = shared_->store().stats();
  return stats;
}

void PrefixCache::set_available_memory_source(std::function<uint64_t()> source) {
  available_memory_ = std::move(source);
}

void PrefixCache::set_clock(std::function<int64_t()> now_ms) { now_ms_ = std::move(now_ms); }

}  // namespace qmlx
