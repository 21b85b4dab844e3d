#include "cache/divergence_search.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>

namespace qmlx {
namespace {

// Divergence reports read at most this many token blobs.
constexpr size_t kExplainCandidates = 4;

// The token blob of an indexed snapshot, from the RAM tier or the disk.
bool read_tokens(CacheTiers& tiers, const Hash128& id, std::vector<int32_t>* tokens) {
  SnapshotHeader header;
  {
    std::lock_guard<std::mutex> lock(tiers.mutex);
    const SnapshotEntry* entry = tiers.index.snapshot(id);
    if (entry == nullptr) return false;
    header = entry->header;
  }
  const SectionRef& section = header.sections[kTokens];
  SharedBytes file = tiers.memory ? tiers.memory->get(DiskStore::snapshot_name(id)) : nullptr;
  if (file && file->size() >= section.offset + section.size) {
    tokens->resize(section.size / 4);
    std::memcpy(tokens->data(), file->data() + section.offset, section.size);
    return true;
  }
  return tiers.disk && tiers.disk->read_snapshot_tokens(header, tokens).ok();
}

}  // namespace

std::optional<Divergence> find_nearest_divergence(CacheTiers& tiers,
                                                  std::span<const int32_t> prompt, int64_t restored,
                                                  int64_t min_shared) {
  const int chunk_tokens = tiers.config.chunk_tokens;
  const std::vector<Hash128> chain = chain_hashes(tiers.fingerprint, prompt, chunk_tokens);
  // (leading chunks shared, last used, id): the snapshots that can share the most.
  std::vector<std::tuple<size_t, int64_t, Hash128>> nearest;
  {
    std::lock_guard<std::mutex> lock(tiers.mutex);
    for (const auto& [id, entry] : tiers.index.snapshots()) {
      size_t shared = 0;
      while (shared < entry.chunks.size() && shared + 1 < chain.size() &&
             entry.chunks[shared] == chain[shared + 1]) {
        ++shared;
      }
      int64_t bound = shared == entry.chunks.size() ? entry.header.position
                                                    : int64_t(shared + 1) * chunk_tokens;
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
    if (!read_tokens(tiers, id, &tokens)) continue;
    auto d = find_divergence(prompt, tokens, restored, min_shared);
    if (!d || (best && best->position >= d->position)) continue;
    best = std::move(d);
    best->snapshot_id = id;
    std::lock_guard<std::mutex> lock(tiers.mutex);
    if (const SnapshotEntry* entry = tiers.index.snapshot(id)) {
      best->snapshot_kind = entry->header.kind;
    }
  }
  return best;
}

}  // namespace qmlx
