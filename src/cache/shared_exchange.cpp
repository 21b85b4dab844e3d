#include "cache/shared_exchange.h"

#include "base/logging.h"

namespace qmlx {

void adopt_from_shared(CacheTiers& tiers, SnapshotWriter& writer, const ResumePoint& point,
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
    writer.submit(std::move(write));
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
    std::lock_guard<std::mutex> lock(tiers.mutex);
    const SnapshotEntry* entry = tiers.index.snapshot(point.id);
    if (entry == nullptr) return;
    write.header = entry->header;
    write.chunk_list = entry->chunks;
    write.sealed = tiers.memory ? tiers.memory->get(snapshot) : nullptr;
    if (!write.sealed) return;
  } else {
    const std::vector<uint8_t>& file = *write.sealed;
    if (!decode_snapshot_header(file, file.size(), &write.header).ok()) return;
    const SectionRef& list = write.header.sections[kChunkList];
    write.chunk_list =
        decode_chunk_list(std::span<const uint8_t>(file).subspan(list.offset, list.size));
  }
  writer.submit(std::move(write));
}

void publish_to_shared(CacheTiers& tiers, const PendingWrite& write, const SealedFile& snapshot) {
  if (!tiers.shared || !tiers.shared->writes() || write.from_shared) return;
  auto chunk_bytes = [&](const Hash128& h) -> SealedFile {
    for (const PendingChunk& chunk : write.chunks) {
      if (chunk.header.chain_hash == h && chunk.sealed) return chunk.sealed;
    }
    if (tiers.memory) {
      if (SharedBytes bytes = tiers.memory->get(DiskStore::chunk_name(h))) return bytes;
    }
    auto bytes = std::make_shared<std::vector<uint8_t>>();
    if (tiers.disk && tiers.disk->get_chunk(h, bytes.get()).ok()) return bytes;
    return nullptr;
  };
  Status s = tiers.shared->publish(write.header, write.chunk_list, snapshot, chunk_bytes);
  if (!s.ok()) {
    tiers.metrics.count_dropped("shared");
    log_warn("cache: checkpoint not published to the shared tier: " + s.ToString());
  }
}

}  // namespace qmlx
