// The two on-disk file formats of the store, self-describing and checksummed so that any
// file can be verified without the model (`qmlx cache verify`), and so that a truncated,
// flipped or foreign file is always detected before a byte of it reaches a Session.
//
// Chunk file "chunks/ab/<chain hash>.kv":
//   header (kChunkHeaderBytes) | tokens of the chunk (int32) | for each attention layer:
//   K rows then V rows of the chunk, in the session's KV dtype.
// Snapshot file "snapshots/<prefix hash>.snap":
//   header (kSnapshotHeaderBytes) | token blob (int32 x position) | chunk list (Hash128 per
//   full chunk) | tail K/V (per attention layer: K rows then V rows of position % B) |
//   recurrent states (per recurrent layer: conv then SSM, float32) | logits (float32).
// Each header carries its own checksum and one checksum per section. Files are built in
// place: the capture copies state straight into the final buffer and the writer seals it.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "cache/hash.h"
#include "cache/snapshot_kind.h"
#include "engine/session_state.h"

namespace qmlx {

inline constexpr size_t kChunkHeaderBytes = 128;
inline constexpr size_t kSnapshotHeaderBytes = 256;

struct ChunkHeader {
  Hash128 fingerprint;
  Hash128 chain_hash;
  uint32_t chunk_tokens = 0;
  uint32_t attention_layers = 0;
  uint64_t kv_row_bytes = 0;
  uint64_t tokens_checksum = 0;
  uint64_t payload_checksum = 0;

  size_t tokens_offset() const { return kChunkHeaderBytes; }
  size_t payload_offset() const { return kChunkHeaderBytes + size_t(chunk_tokens) * 4; }
  // Bytes of one layer's K (or V) rows for the chunk.
  size_t rows_bytes() const { return size_t(chunk_tokens) * kv_row_bytes; }
  size_t payload_bytes() const { return 2 * size_t(attention_layers) * rows_bytes(); }
  size_t file_bytes() const { return payload_offset() + payload_bytes(); }
};

enum SnapshotSection { kTokens = 0, kChunkList, kTailKv, kStates, kLogits, kSectionCount };

struct SectionRef {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t checksum = 0;
};

struct SnapshotHeader {
  Hash128 fingerprint;
  Hash128 id;    // prefix hash of the token blob
  Hash128 base;  // chain hash of the full chunks (h of position / chunk_tokens)
  SnapshotKind kind = SnapshotKind::kInterval;
  bool has_logits = false;
  int64_t position = 0;
  uint32_t chunk_tokens = 0;
  uint32_t attention_layers = 0;
  uint64_t kv_row_bytes = 0;
  uint32_t recurrent_layers = 0;
  uint64_t conv_bytes = 0;
  uint64_t ssm_bytes = 0;
  uint32_t logits_count = 0;
  int64_t created_ms = 0;
  std::array<SectionRef, kSectionCount> sections{};

  int64_t full_chunks() const { return position / chunk_tokens; }
  int64_t tail_tokens() const { return position % chunk_tokens; }
  uint64_t file_bytes() const;
  // Lays out the sections from the shape fields (checksums left zero).
  void place_sections();
};

// A header prepared for a chunk of `layout` under `fingerprint`.
ChunkHeader make_chunk_header(const StateLayout& layout, int chunk_tokens,
                              const Hash128& fingerprint, const Hash128& chain_hash);
// Computes the checksums of a chunk file built in place and writes its header.
void seal_chunk(ChunkHeader header, std::span<uint8_t> file);
// Decodes and checks the header (magic, version, checksum, shape vs file size).
Status decode_chunk_header(std::span<const uint8_t> file_prefix, uint64_t file_size,
                           ChunkHeader* out);
// Checks a whole chunk file: header, checksums, and that its name matches.
Status verify_chunk(std::span<const uint8_t> file, const Hash128& expected_chain_hash,
                    ChunkHeader* out);

// A header for a snapshot of `layout` at `position` (sections placed, checksums zero).
SnapshotHeader make_snapshot_header(const StateLayout& layout, int chunk_tokens, int64_t position,
                                    bool has_logits);
void seal_snapshot(SnapshotHeader header, std::span<uint8_t> file);
Status decode_snapshot_header(std::span<const uint8_t> header_bytes, uint64_t file_size,
                              SnapshotHeader* out);
// Checks every section checksum of a whole snapshot file whose header was decoded.
Status verify_snapshot_sections(const SnapshotHeader& header, std::span<const uint8_t> file);
// The chunk list section decoded.
std::vector<Hash128> decode_chunk_list(std::span<const uint8_t> section);

// Whether the stored shapes are those of `layout` (the same model, the same KV dtype).
bool chunk_matches_layout(const ChunkHeader& header, const StateLayout& layout, int chunk_tokens);
bool snapshot_matches_layout(const SnapshotHeader& header, const StateLayout& layout,
                             int chunk_tokens);

}  // namespace qmlx
