#include "kernels/attention.h"

#include <algorithm>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/vec.h"

namespace qmlx {
namespace {

// One KV head's row p as floats: a pointer into an f32 cache, else converted into `buffer`.
const float* kv_row(const void* cache, ScalarType type, size_t row_bytes, size_t head_offset,
                    size_t p, int D, float* buffer) {
  const uint8_t* row = static_cast<const uint8_t*>(cache) + p * row_bytes + head_offset;
  if (type == ScalarType::kF32) return reinterpret_cast<const float*>(row);
  convert_to_float(row, type, D, buffer);
  return buffer;
}

}  // namespace

// Work is split over (query row, KV head): the query heads sharing a KV head are done
// together, so each K and V row is loaded (and converted) once for all of them instead of once
// per query head.
void attention(const AttentionShape& s, const float* q, const void* k_cache, const void* v_cache,
               ScalarType kv_type, float* out) {
  const size_t elem = scalar_size(kv_type);
  const size_t row_bytes = size_t(s.Nkv) * s.D * elem;
  const int group = s.Nh / s.Nkv;
  default_pool().parallel_for(size_t(s.T) * s.Nkv, [&](size_t begin, size_t end) {
    std::vector<float> scores, buffer(s.D);
    for (size_t task = begin; task < end; ++task) {
      const int t = int(task / s.Nkv), kv = int(task % s.Nkv);
      const size_t n = size_t(s.q_pos0 + t + 1);
      const size_t head_offset = size_t(kv) * s.D * elem;
      // Query heads kv * group .. kv * group + group - 1 are contiguous in q and out.
      const float* qg = q + (size_t(t) * s.Nh + size_t(kv) * group) * s.D;
      float* og = out + (size_t(t) * s.Nh + size_t(kv) * group) * s.D;
      scores.resize(group * n);
      for (size_t p = 0; p < n; ++p) {
        const float* k = kv_row(k_cache, kv_type, row_bytes, head_offset, p, s.D, buffer.data());
        for (int g = 0; g < group; ++g)
          scores[g * n + p] = s.scale * vec::dot(qg + size_t(g) * s.D, k, s.D);
      }
      for (int g = 0; g < group; ++g) softmax(scores.data() + g * n, n);
      std::fill(og, og + size_t(group) * s.D, 0.f);
      for (size_t p = 0; p < n; ++p) {
        const float* v = kv_row(v_cache, kv_type, row_bytes, head_offset, p, s.D, buffer.data());
        for (int g = 0; g < group; ++g) vec::axpy(og + size_t(g) * s.D, scores[g * n + p], v, s.D);
      }
    }
  });
}

}  // namespace qmlx
