// PrefixCache's admin API (the HTTP admin routes and `qmlx cache` against a running server):
// listing, inspection, verification, pins, removal, clear, gc and stats over the live tiers.
#include "cache/prefix_cache.h"

#include <algorithm>

#include "base/logging.h"
#include "cache/cache_tiers.h"
#include "cache/writer.h"

namespace qmlx {
namespace {

SnapshotListing listing_of(const CacheTiers& tiers, const SnapshotEntry& e) {
  SnapshotListing l = make_listing(tiers.fingerprint, e);
  l.in_memory = tiers.memory && tiers.memory->contains(DiskStore::snapshot_name(e.header.id));
  return l;
}

}  // namespace

std::vector<SnapshotListing> PrefixCache::list() const {
  std::vector<SnapshotListing> out;
  {
    std::lock_guard<std::mutex> lock(tiers_->mutex);
    for (const auto& [id, entry] : tiers_->index.snapshots()) {
      out.push_back(listing_of(*tiers_, entry));
    }
  }
  std::sort(out.begin(), out.end(), [](const SnapshotListing& a, const SnapshotListing& b) {
    return a.last_used_ms > b.last_used_ms;
  });
  return out;
}

std::optional<SnapshotListing> PrefixCache::inspect(const Hash128& id) const {
  std::lock_guard<std::mutex> lock(tiers_->mutex);
  const SnapshotEntry* entry = tiers_->index.snapshot(id);
  if (entry == nullptr) return std::nullopt;
  return listing_of(*tiers_, *entry);
}

VerifyReport PrefixCache::verify(const Hash128& id) {
  if (!tiers_->disk) {
    VerifyReport report;
    report.id = id;
    report.reason = RejectReason::kIo;
    report.detail = "verify needs the disk tier";
    return report;
  }
  VerifyReport report = verify_stored_snapshot(*tiers_->disk, id, fingerprint());
  if (!report.ok) {
    tiers_->metrics.count_reject(reject_reason_name(report.reason));
    if (!report.bad_file.empty()) tiers_->quarantine(report.bad_file);
  }
  return report;
}

std::vector<VerifyReport> PrefixCache::verify_all() {
  std::vector<VerifyReport> reports;
  for (const SnapshotListing& listing : list()) reports.push_back(verify(listing.id));
  return reports;
}

Status PrefixCache::pin(const Hash128& id, bool pinned) {
  if (tiers_->disk) {
    Status s = tiers_->disk->set_pinned(id, pinned);
    if (!s.ok()) return s;
  }
  std::vector<Hash128> chunks;
  {
    std::lock_guard<std::mutex> lock(tiers_->mutex);
    SnapshotEntry* entry = tiers_->index.snapshot(id);
    if (entry == nullptr) return Status::NotFound("snapshot " + id.hex());
    entry->pinned = pinned;
    chunks = entry->chunks;
  }
  if (tiers_->shared && tiers_->shared->writes()) {
    Status s = tiers_->shared->pin(id, chunks, pinned);
    if (!s.ok()) log_warn("cache: pin did not reach the shared tier: " + s.ToString());
  }
  return Status::Ok();
}

Status PrefixCache::remove(const Hash128& id) {
  {
    std::lock_guard<std::mutex> lock(tiers_->mutex);
    if (tiers_->index.snapshot(id) == nullptr) return Status::NotFound("snapshot " + id.hex());
    tiers_->index.remove_snapshot(id);
  }
  if (tiers_->memory) tiers_->memory->remove(DiskStore::snapshot_name(id));
  return tiers_->disk ? tiers_->disk->remove_snapshot(id) : Status::Ok();
}

Status PrefixCache::clear() {
  writer_->flush();
  {
    std::lock_guard<std::mutex> lock(tiers_->mutex);
    tiers_->index =
        CacheIndex(fingerprint(), config().chunk_tokens, tiers_->layout.has_recurrent_state());
    tiers_->quarantine_bytes = 0;
  }
  if (tiers_->memory) tiers_->memory->clear();
  if (!tiers_->disk) return Status::Ok();
  Status s = tiers_->env->remove_tree(tiers_->disk->dir());
  if (s.code() == Status::Code::kNotFound) s = Status::Ok();  // deleted already: as cleared
  StoreScan scan;
  if (s.ok()) s = tiers_->disk->open(&scan);
  return s;
}

void PrefixCache::gc() {
  writer_->flush();
  if (!tiers_->disk) return;
  uint64_t freed = 0;
  tiers_->disk->clear_quarantine(&freed);
  {
    std::lock_guard<std::mutex> lock(tiers_->mutex);
    tiers_->quarantine_bytes = 0;
  }
  tiers_->collect_orphans();
  tiers_->evict_if_needed(false);
}

CacheStats PrefixCache::stats() const {
  CacheStats stats = tiers_->metrics.snapshot();
  stats.checkpoint_queue_depth = writer_->depth();
  std::lock_guard<std::mutex> lock(tiers_->mutex);
  stats.disk_cache_bytes = tiers_->disk ? tiers_->disk_bytes_locked() : 0;
  stats.disk_cache_snapshots = tiers_->index.snapshots().size();
  stats.disk_cache_chunks = tiers_->index.chunks().size();
  stats.memory_cache_bytes = tiers_->memory ? tiers_->memory->bytes() : 0;
  if (tiers_->shared) stats.shared = tiers_->shared->store().stats();
  return stats;
}

}  // namespace qmlx
