#include "cache/shared_tier.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "base/error.h"
#include "cache/disk_store.h"

namespace qmlx {
namespace {

std::string env_value(const std::string& key, const std::string& variable) {
  if (variable.empty()) return "";
  const char* value = std::getenv(variable.c_str());
  if (value == nullptr || *value == 0) {
    throw Error("cache.shared." + key + " names the environment variable " + variable +
                ", which is not set");
  }
  return value;
}

// The index field's value: "<position> <kind> <has logits>".
std::string index_value(const SnapshotHeader& header) {
  return std::to_string(header.position) + " " + std::string(snapshot_kind_name(header.kind)) +
         " " + (header.has_logits ? "1" : "0");
}

}  // namespace

SharedTier::SharedTier(const SharedTierConfig& config, const Hash128& fingerprint)
    : config_(config) {
  SharedStoreOptions options;
  options.cluster.seeds = config.nodes;
  options.cluster.password = env_value("password_env", config.password_env);
  options.cluster.username = env_value("username_env", config.username_env);
  options.cluster.timeout_ms = int(config.timeout_ms);
  options.cluster.breaker_failures = int(config.breaker_failures);
  options.cluster.breaker_cooldown_ms = int(config.breaker_cooldown_ms);
  options.cluster.tls = {config.tls, config.tls_ca_file, config.tls_cert_file, config.tls_key_file,
                         config.tls_server_name};
  options.fingerprint = fingerprint;
  options.part_bytes = config.part_bytes();
  options.ttl_seconds = config.ttl_seconds;
  store_ = std::make_unique<SharedBlobStore>(options);
  // Certificates and keys that do not load fail the start, not every later call.
  if (!store_->setup_status().ok()) {
    throw Error("cache.shared: " + store_->setup_status().message());
  }
}

std::string SharedTier::index_name(const Hash128& base) { return "index/" + base.hex(); }

std::vector<ResumePoint> SharedTier::resume_points(std::span<const int32_t> prompt,
                                                   const Hash128& fingerprint, int chunk_tokens,
                                                   bool hybrid) {
  const std::vector<Hash128> chain = chain_hashes(fingerprint, prompt, chunk_tokens);
  const int64_t length = int64_t(prompt.size());
  std::vector<std::string> names;
  for (const Hash128& h : chain) names.push_back(index_name(h));
  std::vector<SharedIndexEntries> entries;
  std::vector<ResumePoint> points;
  if (!store_->index_read_many(names, &entries).ok()) return points;
  for (size_t j = 0; j < chain.size(); ++j) {
    for (const auto& [field, value] : entries[j]) {
      std::optional<Hash128> id = Hash128::from_hex(field);
      std::istringstream in(value);
      int64_t position = 0;
      std::string kind_name;
      int has_logits = 0;
      if (!id || !(in >> position >> kind_name >> has_logits)) continue;
      std::optional<SnapshotKind> kind = snapshot_kind_from_name(kind_name);
      const int64_t full = int64_t(j) * chunk_tokens;
      if (!kind || position < full || position >= full + chunk_tokens || position > length ||
          (position == length && !has_logits)) {
        continue;
      }
      const Hash128 expected =
          position == full ? chain[j] : chain_next(chain[j], prompt.subspan(full, position - full));
      if (expected != *id) continue;
      ResumePoint point = ResumePoint::snapshot(position, *id, *kind);
      point.from_shared = true;
      point.base = chain[j];
      points.push_back(point);
    }
  }
  if (!hybrid && chain.size() > 1) {
    std::vector<std::string> chunks;
    for (size_t j = 1; j < chain.size(); ++j) chunks.push_back(DiskStore::chunk_name(chain[j]));
    std::vector<bool> present;
    if (store_->exists_many(chunks, &present).ok()) {
      // Chunks carry no logits, so a boundary at the prompt's full length is not usable.
      size_t usable = 0;
      while (usable < present.size() && present[usable]) ++usable;
      for (size_t j = usable; j >= 1; --j) {
        if (int64_t(j) * chunk_tokens >= length) continue;
        ResumePoint point = ResumePoint::boundary(int64_t(j) * chunk_tokens, chain[j]);
        point.from_shared = true;
        points.push_back(point);
      }
    }
  }
  std::stable_sort(points.begin(), points.end(), [](const ResumePoint& a, const ResumePoint& b) {
    if (a.position != b.position) return a.position > b.position;
    return a.is_snapshot && !b.is_snapshot;
  });
  return points;
}

Status SharedTier::publish(const SnapshotHeader& header, const std::vector<Hash128>& chunk_list,
                           const SealedFile& snapshot, const ChunkSource& chunk_bytes) {
  std::vector<std::string> names;
  for (const Hash128& h : chunk_list) names.push_back(DiskStore::chunk_name(h));
  std::vector<bool> present;
  Status s = store_->exists_many(names, &present);
  if (!s.ok()) return s;
  uint64_t skipped = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    if (present[i]) {
      ++skipped;
      continue;
    }
    SealedFile bytes = chunk_bytes(chunk_list[i]);
    if (!bytes) return Status::NotFound(names[i] + ": no local copy to publish");
    s = store_->put(names[i], *bytes);
    if (!s.ok()) return s;
  }
  store_->count_chunks_skipped(skipped);
  s = store_->put(DiskStore::snapshot_name(header.id), *snapshot);
  if (!s.ok()) return s;
  return store_->index_add(index_name(header.base), header.id.hex(), index_value(header));
}

Status SharedTier::pin(const Hash128& id, const std::vector<Hash128>& chunks, bool pinned) {
  Status s = store_->set_persistent(DiskStore::snapshot_name(id), pinned);
  for (const Hash128& h : chunks) {
    if (!s.ok()) break;
    s = store_->set_persistent(DiskStore::chunk_name(h), pinned);
  }
  return s;
}

Status SharedTier::summarize(Summary* out) {
  *out = Summary{};
  std::vector<BlobInfo> snapshots, chunks;
  Status s = store_->list(DiskStore::kSnapshotsFolder, &snapshots);
  if (s.ok()) s = store_->list(DiskStore::kChunksFolder, &chunks);
  out->snapshots = snapshots.size();
  out->chunks = chunks.size();
  for (const BlobInfo& b : snapshots) out->bytes += b.bytes;
  for (const BlobInfo& b : chunks) out->bytes += b.bytes;
  return s;
}

void SharedTier::forget(const SnapshotHeader& header) { forget(header.base, header.id); }

void SharedTier::forget(const Hash128& base, const Hash128& id) {
  store_->index_remove(index_name(base), id.hex());  // best effort: a stale entry only costs a miss
}

}  // namespace qmlx
