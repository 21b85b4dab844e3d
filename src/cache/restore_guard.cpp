#include "cache/restore_guard.h"

#include <algorithm>

#include "cache/file_format.h"

namespace qmlx {

RestoreEstimate estimate_restore(const StateLayout& layout, int chunk_tokens, int64_t position,
                                 bool from_snapshot, int chunks_in_flight) {
  RestoreEstimate e;
  e.state_bytes = uint64_t(position) * layout.kv_bytes_per_token() + layout.recurrent_bytes() +
                  uint64_t(layout.vocab_size) * sizeof(float);
  const int64_t full_chunks = position / chunk_tokens;
  const Hash128 none;
  const uint64_t chunk_file = make_chunk_header(layout, chunk_tokens, none, none).file_bytes();
  e.read_buffer_bytes = uint64_t(std::min<int64_t>(full_chunks, chunks_in_flight)) * chunk_file;
  if (from_snapshot) {
    e.read_buffer_bytes += make_snapshot_header(layout, chunk_tokens, position, true).file_bytes();
  }
  return e;
}

GuardDecision check_restore_guard(const RestoreEstimate& estimate, uint64_t available_bytes,
                                  uint64_t margin_bytes) {
  GuardDecision d;
  d.needed = estimate.total();
  d.available = available_bytes > margin_bytes ? available_bytes - margin_bytes : 0;
  d.allowed = d.needed <= d.available;
  return d;
}

}  // namespace qmlx
