#include "cache/eviction.h"

#include <algorithm>
#include <unordered_map>

namespace qmlx {
namespace {

class Planner {
 public:
  Planner(const EvictionInputs& inputs, uint64_t goal) : inputs_(inputs), goal_(goal) {
    for (const auto& [id, entry] : inputs.index->snapshots()) {
      for (const Hash128& h : entry.chunks) ++refs_[h];
    }
    for (const Hash128& h : inputs.keep_chunks) settled_chunks_.insert({h, false});
  }

  bool done() const { return freed_ >= goal_; }
  std::vector<EvictionStep> take() { return std::move(steps_); }

  void quarantined(const std::string& reason) {
    for (const BlobInfo& blob : inputs_.quarantined) {
      if (done()) return;
      add({EvictionStep::Target::kQuarantined, blob.name, {}, blob.bytes, reason});
    }
  }

  void foreign_stores() {
    for (const BlobInfo& store : inputs_.foreign_stores) {
      if (done()) return;
      add({EvictionStep::Target::kForeignStore,
           store.name,
           {},
           store.bytes,
           "foreign_fingerprint"});
    }
  }

  // Chunks that no snapshot names, least recently used first.
  void unreferenced_chunks(const std::string& reason) {
    std::vector<std::pair<int64_t, Hash128>> order;
    for (const auto& [h, entry] : inputs_.index->chunks()) {
      if (entry.on_disk && refs_[h] == 0 && !settled_chunks_.count(h)) {
        order.emplace_back(entry.last_used_ms, h);
      }
    }
    std::sort(order.begin(), order.end());
    for (const auto& [time, h] : order) {
      if (done()) return;
      evict_chunk(h, reason);
    }
  }

  // Snapshots in the order of `key` (smallest first); each one's orphaned chunks follow it on
  // hybrid models, where a chunk without a snapshot can never be restored.
  template <typename Key>
  void snapshots(Key key, const std::string& reason) {
    std::vector<std::pair<decltype(key(std::declval<SnapshotEntry>())), Hash128>> order;
    for (const auto& [id, entry] : inputs_.index->snapshots()) {
      if (entry.on_disk && !entry.pinned) order.emplace_back(key(entry), id);
    }
    std::sort(order.begin(), order.end());
    for (const auto& [k, id] : order) {
      if (done()) return;
      const SnapshotEntry& entry = *inputs_.index->snapshot(id);
      add({EvictionStep::Target::kSnapshot, {}, id, entry.bytes, reason});
      for (const Hash128& h : entry.chunks) {
        if (--refs_[h] == 0 && inputs_.index->hybrid() && inputs_.index->has_chunk(h) &&
            inputs_.index->chunks().at(h).on_disk) {
          evict_chunk(h, "orphaned_chunk");
        }
      }
    }
  }

 private:
  void add(EvictionStep step) {
    freed_ += step.bytes;
    steps_.push_back(std::move(step));
  }
  void evict_chunk(const Hash128& h, const std::string& reason) {
    if (!settled_chunks_.insert({h, true}).second) return;
    add({EvictionStep::Target::kChunk, {}, h, inputs_.index->chunks().at(h).bytes, reason});
  }

  const EvictionInputs& inputs_;
  uint64_t goal_;
  uint64_t freed_ = 0;
  std::vector<EvictionStep> steps_;
  std::unordered_map<Hash128, int, Hash128Hasher> refs_;
  // Chunks already planned (true) or to keep (false): never planned (again).
  std::unordered_map<Hash128, bool, Hash128Hasher> settled_chunks_;
};

}  // namespace

std::vector<EvictionStep> plan_eviction(const EvictionInputs& inputs, EvictionPolicy policy,
                                        uint64_t bytes_to_free) {
  Planner plan(inputs, bytes_to_free);
  const bool hybrid = inputs.index->hybrid();
  switch (policy) {
    case EvictionPolicy::kUnmatchableFirst:
      plan.quarantined("quarantine");
      plan.foreign_stores();
      if (hybrid) plan.unreferenced_chunks("unreferenced_chunk");
      plan.snapshots(
          [](const SnapshotEntry& e) {
            return std::make_pair(snapshot_kind_value(e.header.kind), e.last_used_ms);
          },
          "low_value");
      plan.unreferenced_chunks("chunk_lru");
      break;
    case EvictionPolicy::kLru:
    case EvictionPolicy::kOldest: {
      const bool lru = policy == EvictionPolicy::kLru;
      const std::string reason = lru ? "lru" : "oldest";
      plan.quarantined("quarantine");
      plan.snapshots(
          [lru](const SnapshotEntry& e) { return lru ? e.last_used_ms : e.header.created_ms; },
          reason);
      plan.unreferenced_chunks(reason);
      plan.foreign_stores();
      break;
    }
  }
  return plan.take();
}

}  // namespace qmlx
