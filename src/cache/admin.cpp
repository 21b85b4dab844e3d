#include "cache/admin.h"

#include <algorithm>

#include "base/error.h"
#include "cache/eviction.h"
#include "cache/shared_tier.h"

namespace qmlx {

nlohmann::json StoreSummary::to_json() const {
  return nlohmann::json{{"fingerprint", fingerprint.hex()},
                        {"dir", dir},
                        {"snapshots", snapshots},
                        {"chunks", chunks},
                        {"pinned", pinned},
                        {"bytes", bytes},
                        {"quarantine_bytes", quarantine_bytes},
                        {"leftovers_removed", leftovers_removed}};
}

CacheAdmin::CacheAdmin(const CacheConfig& config, Env* env) : config_(config), env_(env) {
  open_stores();
}

void CacheAdmin::open_stores() {
  stores_.clear();
  std::vector<std::string> names;
  if (!env_->is_dir(config_.disk_cache_dir)) return;
  Status s = env_->list_dir(config_.disk_cache_dir, &names);
  if (!s.ok()) throw Error("cache: cannot list " + config_.disk_cache_dir + ": " + s.ToString());
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    std::optional<Hash128> fingerprint = store_fingerprint_of(name);
    const std::string dir = join_path(config_.disk_cache_dir, name);
    if (!fingerprint || !env_->is_dir(dir)) continue;
    Store store;
    store.disk = std::make_unique<DiskStore>(env_, dir, config_.fsync);
    StoreScan scan;
    s = store.disk->open(&scan);
    if (!s.ok()) throw Error("cache: cannot open store " + dir + ": " + s.ToString());
    // Shapes come from the files: hybrid when any snapshot carries recurrent state.
    int chunk_tokens = config_.chunk_tokens;
    bool hybrid = false;
    for (const StoredSnapshot& snapshot : scan.snapshots) {
      chunk_tokens = int(snapshot.header.chunk_tokens);
      hybrid = hybrid || snapshot.header.recurrent_layers > 0;
    }
    store.index = std::make_unique<CacheIndex>(*fingerprint, chunk_tokens, hybrid);
    store.index->load(scan);
    for (const BlobInfo& blob : scan.quarantined) store.quarantine_bytes += blob.bytes;
    store.leftovers_removed = scan.leftovers_removed;
    stores_.push_back(std::move(store));
  }
}

std::vector<StoreSummary> CacheAdmin::stores() const {
  std::vector<StoreSummary> out;
  for (const Store& store : stores_) {
    StoreSummary s;
    s.fingerprint = store.index->fingerprint();
    s.dir = store.disk->dir();
    s.snapshots = store.index->snapshots().size();
    s.chunks = store.index->chunks().size();
    for (const auto& [id, entry] : store.index->snapshots()) s.pinned += entry.pinned;
    s.quarantine_bytes = store.quarantine_bytes;
    s.bytes = store.index->snapshot_bytes() + store.index->chunk_bytes() + s.quarantine_bytes;
    s.leftovers_removed = store.leftovers_removed;
    out.push_back(s);
  }
  return out;
}

std::vector<SnapshotListing> CacheAdmin::list() const {
  std::vector<SnapshotListing> out;
  for (const Store& store : stores_) {
    for (const auto& [id, entry] : store.index->snapshots()) {
      out.push_back(make_listing(store.index->fingerprint(), entry));
    }
  }
  std::sort(out.begin(), out.end(), [](const SnapshotListing& a, const SnapshotListing& b) {
    return a.last_used_ms > b.last_used_ms;
  });
  return out;
}

std::optional<SnapshotRef> CacheAdmin::find(const std::string& id_prefix,
                                            std::string* error) const {
  if (id_prefix.size() < 4) {
    *error = "snapshot id \"" + id_prefix + "\" is too short (give at least 4 hex digits)";
    return std::nullopt;
  }
  std::vector<SnapshotRef> matches;
  for (size_t i = 0; i < stores_.size(); ++i) {
    for (const auto& [id, entry] : stores_[i].index->snapshots()) {
      if (id.hex().rfind(id_prefix, 0) == 0) matches.push_back({i, id});
    }
  }
  if (matches.size() == 1) return matches[0];
  *error = matches.empty() ? "no snapshot with id " + id_prefix
                           : "snapshot id " + id_prefix + " is ambiguous (" +
                                 std::to_string(matches.size()) + " match)";
  return std::nullopt;
}

std::optional<SnapshotListing> CacheAdmin::inspect(const SnapshotRef& ref) const {
  const Store& store = stores_.at(ref.store);
  const SnapshotEntry* entry = store.index->snapshot(ref.id);
  if (entry == nullptr) return std::nullopt;
  return make_listing(store.index->fingerprint(), *entry);
}

VerifyReport CacheAdmin::verify(const SnapshotRef& ref) {
  Store& store = stores_.at(ref.store);
  VerifyReport report = verify_stored_snapshot(*store.disk, ref.id, store.index->fingerprint());
  if (report.ok || report.bad_file.empty()) return report;
  uint64_t bytes = 0;
  if (store.disk->blobs().size(report.bad_file, &bytes).ok() &&
      store.disk->blobs().quarantine(report.bad_file).ok()) {
    store.quarantine_bytes += bytes;
  }
  bool is_chunk = false;
  std::optional<Hash128> h = DiskStore::hash_of_name(report.bad_file, &is_chunk);
  if (h && is_chunk) store.index->remove_chunk(*h);
  if (h && !is_chunk) store.index->remove_snapshot(*h);
  return report;
}

std::vector<VerifyReport> CacheAdmin::verify_all() {
  std::vector<SnapshotRef> refs;
  for (size_t i = 0; i < stores_.size(); ++i) {
    for (const auto& [id, entry] : stores_[i].index->snapshots()) refs.push_back({i, id});
  }
  std::vector<VerifyReport> reports;
  for (const SnapshotRef& ref : refs) reports.push_back(verify(ref));
  return reports;
}

Status CacheAdmin::pin(const SnapshotRef& ref, bool pinned) {
  Store& store = stores_.at(ref.store);
  Status s = store.disk->set_pinned(ref.id, pinned);
  if (!s.ok()) return s;
  SnapshotEntry* entry = store.index->snapshot(ref.id);
  entry->pinned = pinned;
  // A pin reaches the shared tier too (as a server's does), or the command says it did not.
  if (!config_.shared.enabled || !config_.shared.write) return s;
  SharedTier tier(config_.shared, store.index->fingerprint());
  s = tier.pin(ref.id, entry->chunks, pinned);
  if (!s.ok()) {
    return Status::IOError(std::string(pinned ? "pinned" : "unpinned") +
                           " on this disk, but not in the shared tier: " + s.ToString());
  }
  return s;
}

Status CacheAdmin::remove(const SnapshotRef& ref) {
  Store& store = stores_.at(ref.store);
  store.index->remove_snapshot(ref.id);
  return store.disk->remove_snapshot(ref.id);
}

Status CacheAdmin::clear() {
  for (const Store& store : stores_) {
    Status s = env_->remove_tree(store.disk->dir());
    if (!s.ok()) return s;
  }
  stores_.clear();
  return Status::Ok();
}

uint64_t CacheAdmin::remove_unreferenced_chunks(Store& store) {
  uint64_t freed = 0;
  if (!store.index->hybrid()) return freed;
  std::vector<std::pair<Hash128, uint64_t>> orphans;
  for (const auto& [h, chunk] : store.index->chunks()) {
    if (store.index->chunk_refs(h) == 0) orphans.emplace_back(h, chunk.bytes);
  }
  for (const auto& [h, bytes] : orphans) {
    if (store.disk->remove_chunk(h).ok()) freed += bytes;
    store.index->remove_chunk(h);
  }
  return freed;
}

uint64_t CacheAdmin::total_bytes() const {
  uint64_t total = 0;
  for (const StoreSummary& s : stores()) total += s.bytes;
  return total;
}

uint64_t CacheAdmin::gc() {
  uint64_t freed = 0;
  for (Store& store : stores_) {
    store.disk->clear_quarantine(&freed);
    store.quarantine_bytes = 0;
    freed += remove_unreferenced_chunks(store);
  }
  const uint64_t total = total_bytes();
  if (stores_.empty() || total <= config_.disk_cap_bytes()) return freed;
  // The most recently used store is the primary; the others are foreign to it.
  auto last_used = [](const Store& s) {
    int64_t latest = 0;
    for (const auto& [id, e] : s.index->snapshots()) latest = std::max(latest, e.last_used_ms);
    return latest;
  };
  size_t primary = 0;
  for (size_t i = 1; i < stores_.size(); ++i) {
    if (last_used(stores_[i]) > last_used(stores_[primary])) primary = i;
  }
  EvictionInputs inputs{stores_[primary].index.get(), {}, {}, {}};
  const std::vector<StoreSummary> summaries = stores();
  for (size_t i = 0; i < stores_.size(); ++i) {
    if (i != primary) inputs.foreign_stores.push_back({summaries[i].dir, summaries[i].bytes});
  }
  const uint64_t low = uint64_t(double(config_.disk_cap_bytes()) * config_.low_water_fraction);
  std::vector<EvictionStep> steps =
      plan_eviction(inputs, config_.eviction_policy, total > low ? total - low : 0);
  Store& store = stores_[primary];
  for (const EvictionStep& step : steps) {
    Status s;
    switch (step.target) {
      case EvictionStep::Target::kQuarantined:
        break;
      case EvictionStep::Target::kForeignStore:
        s = env_->remove_tree(step.name);
        break;
      case EvictionStep::Target::kChunk:
        store.index->remove_chunk(step.id);
        s = store.disk->remove_chunk(step.id);
        break;
      case EvictionStep::Target::kSnapshot:
        store.index->remove_snapshot(step.id);
        s = store.disk->remove_snapshot(step.id);
        break;
    }
    if (s.ok()) freed += step.bytes;
  }
  open_stores();
  return freed;
}

}  // namespace qmlx
