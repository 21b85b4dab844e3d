#include "cache/index.h"

#include <algorithm>

namespace qmlx {

void CacheIndex::load(const StoreScan& scan) {
  for (const StoredChunk& chunk : scan.chunks) {
    add_chunk(chunk.hash, ChunkEntry{chunk.bytes, 0, true});
  }
  for (const StoredSnapshot& stored : scan.snapshots) {
    if (stored.header.fingerprint != fingerprint_) continue;
    SnapshotEntry entry{stored.header, stored.chunks, stored.bytes, stored.header.created_ms,
                        stored.pinned, true};
    for (const Hash128& h : entry.chunks) {
      ChunkEntry* c = chunk(h);
      if (c != nullptr) c->last_used_ms = std::max(c->last_used_ms, entry.last_used_ms);
    }
    add_snapshot(std::move(entry));
  }
}

void CacheIndex::add_chunk(const Hash128& h, const ChunkEntry& entry) {
  remove_chunk(h);
  chunks_[h] = entry;
  chunk_bytes_ += entry.bytes;
}

void CacheIndex::remove_chunk(const Hash128& h) {
  auto it = chunks_.find(h);
  if (it == chunks_.end()) return;
  chunk_bytes_ -= it->second.bytes;
  chunks_.erase(it);
}

ChunkEntry* CacheIndex::chunk(const Hash128& h) {
  auto it = chunks_.find(h);
  return it == chunks_.end() ? nullptr : &it->second;
}

int CacheIndex::chunk_refs(const Hash128& h) const {
  auto it = refs_.find(h);
  return it == refs_.end() ? 0 : it->second;
}

void CacheIndex::add_snapshot(SnapshotEntry entry) {
  const Hash128 id = entry.header.id;
  remove_snapshot(id);
  for (const Hash128& h : entry.chunks) ++refs_[h];
  by_base_.emplace(entry.header.base, id);
  snapshot_bytes_ += entry.bytes;
  snapshots_.emplace(id, std::move(entry));
}

void CacheIndex::remove_snapshot(const Hash128& id) {
  auto it = snapshots_.find(id);
  if (it == snapshots_.end()) return;
  const SnapshotEntry& entry = it->second;
  for (const Hash128& h : entry.chunks) {
    if (--refs_[h] == 0) refs_.erase(h);
  }
  auto [first, last] = by_base_.equal_range(entry.header.base);
  for (auto b = first; b != last; ++b) {
    if (b->second == id) {
      by_base_.erase(b);
      break;
    }
  }
  snapshot_bytes_ -= entry.bytes;
  snapshots_.erase(it);
}

SnapshotEntry* CacheIndex::snapshot(const Hash128& id) {
  auto it = snapshots_.find(id);
  return it == snapshots_.end() ? nullptr : &it->second;
}

const SnapshotEntry* CacheIndex::snapshot(const Hash128& id) const {
  auto it = snapshots_.find(id);
  return it == snapshots_.end() ? nullptr : &it->second;
}

bool CacheIndex::chunks_present(const SnapshotEntry& entry) const {
  return std::all_of(entry.chunks.begin(), entry.chunks.end(),
                     [&](const Hash128& h) { return has_chunk(h); });
}

int64_t CacheIndex::shared_chunks(std::span<const Hash128> prompt_chain) const {
  int64_t shared = 0;
  while (shared + 1 < int64_t(prompt_chain.size()) && has_chunk(prompt_chain[shared + 1])) {
    ++shared;
  }
  return shared;
}

std::vector<ResumePoint> CacheIndex::resume_points(std::span<const int32_t> prompt) const {
  const std::vector<Hash128> chain = chain_hashes(fingerprint_, prompt, chunk_tokens_);
  const int64_t length = int64_t(prompt.size());
  std::vector<ResumePoint> points;
  for (int64_t j = int64_t(chain.size()) - 1; j >= 0; --j) {
    auto [first, last] = by_base_.equal_range(chain[j]);
    for (auto it = first; it != last; ++it) {
      const SnapshotEntry& entry = snapshots_.at(it->second);
      const int64_t position = entry.header.position;
      if (position > length || (position == length && !entry.header.has_logits)) continue;
      const int64_t full = j * chunk_tokens_;
      const Hash128 id =
          position == full ? chain[j] : chain_next(chain[j], prompt.subspan(full, position - full));
      if (id != entry.header.id || !chunks_present(entry)) continue;
      points.push_back(ResumePoint::snapshot(position, id, entry.header.kind));
    }
  }
  if (!hybrid_) {
    // Chunks carry no logits, so a boundary at the prompt's full length is not usable.
    const int64_t usable = shared_chunks(chain);
    for (int64_t j = usable; j >= 1; --j) {
      if (j * chunk_tokens_ < length)
        points.push_back(ResumePoint::boundary(j * chunk_tokens_, chain[j]));
    }
  }
  std::stable_sort(points.begin(), points.end(), [](const ResumePoint& a, const ResumePoint& b) {
    if (a.position != b.position) return a.position > b.position;
    return a.is_snapshot && !b.is_snapshot;
  });
  return points;
}

}  // namespace qmlx
