// CacheTiers' eviction: applies the policy's plan (eviction.h) to the index, the RAM tier and
// the disk, keeping the disk store under its cap.
#include "cache/cache_tiers.h"

#include <algorithm>

namespace qmlx {

uint64_t CacheTiers::disk_bytes_locked() const {
  uint64_t total = index.snapshot_bytes() + index.chunk_bytes() + quarantine_bytes;
  for (const BlobInfo& store : foreign_stores) total += store.bytes;
  return total;
}

void CacheTiers::evict_if_needed(bool force_to_low_water) {
  if (!disk) return;
  std::vector<EvictionStep> steps;
  {
    std::lock_guard<std::mutex> lock(mutex);
    const uint64_t total = disk_bytes_locked();
    const uint64_t cap = config.disk_cap_bytes();
    const uint64_t low = uint64_t(double(cap) * config.low_water_fraction);
    if ((!force_to_low_water && total <= cap) || total <= low) return;
    steps = plan_eviction_locked(total - low, {});
  }
  apply_eviction(steps);
}

uint64_t CacheTiers::make_room(uint64_t bytes, const std::vector<Hash128>& keep) {
  std::vector<EvictionStep> steps;
  {
    std::lock_guard<std::mutex> lock(mutex);
    steps = plan_eviction_locked(bytes, keep);
  }
  apply_eviction(steps);
  uint64_t freed = 0;
  for (const EvictionStep& step : steps) freed += step.bytes;
  return freed;
}

void CacheTiers::collect_orphans() {
  std::vector<EvictionStep> orphans;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!index.hybrid()) return;
    for (const auto& [h, chunk] : index.chunks()) {
      if (index.chunk_refs(h) == 0) {
        orphans.push_back({EvictionStep::Target::kChunk, {}, h, chunk.bytes, "unreferenced_chunk"});
      }
    }
  }
  apply_eviction(orphans);
}

std::vector<EvictionStep> CacheTiers::plan_eviction_locked(uint64_t bytes,
                                                           const std::vector<Hash128>& keep) {
  EvictionInputs inputs{&index, {}, foreign_stores, keep};
  if (quarantine_bytes > 0) {
    disk->blobs().list(EnvBlobStore::kQuarantineFolder, &inputs.quarantined);
  }
  return plan_eviction(inputs, config.eviction_policy, bytes);
}

void CacheTiers::apply_eviction(const std::vector<EvictionStep>& steps) {
  for (const EvictionStep& step : steps) {
    Status s;
    std::string name;
    bool on_disk = true;  // a capture published in RAM may not have reached the disk yet
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (step.target == EvictionStep::Target::kChunk) {
        if (const ChunkEntry* c = index.chunk(step.id)) on_disk = c->on_disk;
      } else if (step.target == EvictionStep::Target::kSnapshot) {
        if (const SnapshotEntry* e = index.snapshot(step.id)) on_disk = e->on_disk;
      }
      switch (step.target) {
        case EvictionStep::Target::kQuarantined:
          quarantine_bytes -= std::min(quarantine_bytes, step.bytes);
          break;
        case EvictionStep::Target::kForeignStore:
          std::erase_if(foreign_stores, [&](const BlobInfo& b) { return b.name == step.name; });
          break;
        case EvictionStep::Target::kChunk:
          index.remove_chunk(step.id);
          name = DiskStore::chunk_name(step.id);
          break;
        case EvictionStep::Target::kSnapshot:
          index.remove_snapshot(step.id);
          name = DiskStore::snapshot_name(step.id);
          break;
      }
    }
    if (memory && !name.empty()) memory->remove(name);
    switch (step.target) {
      case EvictionStep::Target::kQuarantined:
        s = disk->blobs().remove(step.name);
        break;
      case EvictionStep::Target::kForeignStore:
        s = env->remove_tree(step.name);
        break;
      case EvictionStep::Target::kChunk:
        if (on_disk) s = disk->remove_chunk(step.id);
        break;
      case EvictionStep::Target::kSnapshot:
        if (on_disk) s = disk->remove_snapshot(step.id);
        break;
    }
    // A file already gone is evicted all the same; other failures are disk faults.
    if (!s.ok() && s.code() != Status::Code::kNotFound) disk_health.fault(s, "eviction");
    metrics.count_eviction(step.reason);
  }
}

}  // namespace qmlx
