// Capture: the synchronous half of a checkpoint, run on the request thread. It copies out of
// a live Session only what the store lacks (the K/V of chunks not yet stored or queued, the
// tail rows, the recurrent state, the logits) straight into the final file buffers, so the
// request pays one memcpy of new bytes and the background writer does everything else
// (checksums, I/O). The files are sealed by the writer with seal_pending().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "cache/file_format.h"
#include "engine/session_state.h"

namespace qmlx {

// Bytes shared, once sealed, by the RAM tier and the writer (no second copy).
using SealedFile = std::shared_ptr<const std::vector<uint8_t>>;

struct PendingChunk {
  ChunkHeader header;
  std::vector<uint8_t> file;  // built in place; moved into `sealed` when published early
  SealedFile sealed;

  const std::vector<uint8_t>& bytes() const { return sealed ? *sealed : file; }
};

struct PendingWrite {
  SnapshotHeader header;             // id, base, kind, position, created_ms, shapes
  std::vector<uint8_t> file;         // the snapshot file, built in place
  SealedFile sealed;                 // the same once sealed and published to the RAM tier
  std::vector<Hash128> chunk_list;   // every full chunk the snapshot names
  std::vector<PendingChunk> chunks;  // the named chunks this write must store itself
  // Read from the shared tier and kept locally: the writer persists it but does not publish it.
  bool from_shared = false;
  // Chunks only, no snapshot (an attention-only model's chunk boundary read from the shared
  // tier): the writer stores and indexes the chunks.
  bool chunks_only = false;

  // Sealed and already restorable from the RAM tier: the writer only persists it.
  bool published() const { return sealed != nullptr; }
  uint64_t bytes() const;
};

// Seals the write and moves its files into shared buffers (see SealedFile).
void seal_and_share(PendingWrite& write);

struct CaptureOptions {
  Hash128 fingerprint;
  int chunk_tokens = 256;
  SnapshotKind kind = SnapshotKind::kInterval;
  int64_t now_ms = 0;
};

// Captures `source` at its position; tokens[0, position) are the tokens it has consumed.
// chunk_needed(h) tells whether chunk h must be copied (it is neither stored nor queued).
PendingWrite capture_state(const StateSource& source, std::span<const int32_t> tokens,
                           const CaptureOptions& options,
                           const std::function<bool(const Hash128&)>& chunk_needed);

// Computes checksums and writes the headers of every file of the write.
void seal_pending(PendingWrite& write);

}  // namespace qmlx
