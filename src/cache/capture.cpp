#include "cache/capture.h"

#include <cstring>

namespace qmlx {
namespace {

PendingChunk capture_chunk(const StateSource& source, std::span<const int32_t> tokens,
                           int64_t chunk_index, const ChunkHeader& header) {
  PendingChunk chunk{header, std::vector<uint8_t>(header.file_bytes()), nullptr};
  const int64_t begin = chunk_index * header.chunk_tokens;
  const int64_t end = begin + header.chunk_tokens;
  std::memcpy(chunk.file.data() + header.tokens_offset(), tokens.data() + begin,
              size_t(header.chunk_tokens) * 4);
  uint8_t* payload = chunk.file.data() + header.payload_offset();
  for (uint32_t a = 0; a < header.attention_layers; ++a) {
    uint8_t* k = payload + 2 * size_t(a) * header.rows_bytes();
    source.read_kv_rows(int(a), begin, end, k, k + header.rows_bytes());
  }
  return chunk;
}

void capture_snapshot_payload(const StateSource& source, std::span<const int32_t> tokens,
                              const SnapshotHeader& h, const std::vector<Hash128>& chunk_list,
                              uint8_t* file) {
  std::memcpy(file + h.sections[kTokens].offset, tokens.data(), h.sections[kTokens].size);
  std::memcpy(file + h.sections[kChunkList].offset, chunk_list.data(), h.sections[kChunkList].size);
  const int64_t tail_begin = h.full_chunks() * h.chunk_tokens;
  const size_t tail_rows_bytes = size_t(h.tail_tokens()) * h.kv_row_bytes;
  for (uint32_t a = 0; a < h.attention_layers && tail_rows_bytes > 0; ++a) {
    uint8_t* k = file + h.sections[kTailKv].offset + 2 * size_t(a) * tail_rows_bytes;
    source.read_kv_rows(int(a), tail_begin, h.position, k, k + tail_rows_bytes);
  }
  for (uint32_t r = 0; r < h.recurrent_layers; ++r) {
    uint8_t* conv = file + h.sections[kStates].offset + size_t(r) * (h.conv_bytes + h.ssm_bytes);
    source.read_recurrent(int(r), reinterpret_cast<float*>(conv),
                          reinterpret_cast<float*>(conv + h.conv_bytes));
  }
  if (h.has_logits) {
    std::memcpy(file + h.sections[kLogits].offset, source.logits().data(),
                h.sections[kLogits].size);
  }
}

}  // namespace

uint64_t PendingWrite::bytes() const {
  uint64_t total = sealed ? sealed->size() : file.size();
  for (const PendingChunk& chunk : chunks) total += chunk.bytes().size();
  return total;
}

PendingWrite capture_state(const StateSource& source, std::span<const int32_t> tokens,
                           const CaptureOptions& options,
                           const std::function<bool(const Hash128&)>& chunk_needed) {
  const StateLayout& layout = source.layout();
  const int64_t position = source.position();
  tokens = tokens.first(size_t(position));
  const bool has_logits =
      !source.logits().empty() && source.logits().size() == size_t(layout.vocab_size);

  PendingWrite write;
  write.header = make_snapshot_header(layout, options.chunk_tokens, position, has_logits);
  std::vector<Hash128> chain = chain_hashes(options.fingerprint, tokens, options.chunk_tokens);
  write.chunk_list.assign(chain.begin() + 1, chain.end());
  for (size_t i = 0; i < write.chunk_list.size(); ++i) {
    const Hash128& h = write.chunk_list[i];
    if (!chunk_needed(h)) continue;
    ChunkHeader header = make_chunk_header(layout, options.chunk_tokens, options.fingerprint, h);
    write.chunks.push_back(capture_chunk(source, tokens, int64_t(i), header));
  }

  SnapshotHeader& h = write.header;
  h.fingerprint = options.fingerprint;
  h.base = chain.back();
  const int64_t full = h.full_chunks() * options.chunk_tokens;
  h.id = full == position ? h.base : chain_next(h.base, tokens.subspan(size_t(full)));
  h.kind = options.kind;
  h.created_ms = options.now_ms;
  write.file.resize(h.file_bytes());
  capture_snapshot_payload(source, tokens, h, write.chunk_list, write.file.data());
  return write;
}

void seal_pending(PendingWrite& write) {
  for (PendingChunk& chunk : write.chunks) seal_chunk(chunk.header, chunk.file);
  seal_snapshot(write.header, write.file);
}

void seal_and_share(PendingWrite& write) {
  seal_pending(write);
  for (PendingChunk& chunk : write.chunks) {
    chunk.sealed = std::make_shared<const std::vector<uint8_t>>(std::move(chunk.file));
  }
  write.sealed = std::make_shared<const std::vector<uint8_t>>(std::move(write.file));
}

}  // namespace qmlx
