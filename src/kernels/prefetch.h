// Software prefetch of a byte range, for access patterns the hardware prefetcher does not cover
// far enough ahead.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace qmlx {

// Asks for bytes [p, p + n) to be brought into the caches (one request per 64-byte line).
inline void prefetch_bytes(const void* p, size_t n) {
  const char* bytes = static_cast<const char*>(p);
  for (size_t b = 0; b < n; b += 64) _mm_prefetch(bytes + b, _MM_HINT_T0);
}

// Decode GEMVs stream their rows once: requesting the row about kGemvPrefetchBytes ahead keeps
// more lines in flight than the out-of-order window reaches on its own (a row is ~700 uops of
// work per 2 KiB).
constexpr size_t kGemvPrefetchBytes = 4096;
inline int rows_to_prefetch_ahead(size_t row_bytes) {
  return int((kGemvPrefetchBytes + row_bytes - 1) / row_bytes);
}

}  // namespace qmlx
