#include "kernels/attention.h"

#include <algorithm>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/vec.h"

namespace qmlx {

void attention(const AttentionShape& s, const float* q, const void* k_cache, const void* v_cache,
               ScalarType kv_type, float* out) {
  const size_t row_elems = size_t(s.Nkv) * s.D;
  const size_t elem = scalar_size(kv_type);
  const int group = s.Nh / s.Nkv;
  default_pool().parallel_for(size_t(s.T) * s.Nh, [&](size_t begin, size_t end) {
    std::vector<float> scores;
    for (size_t task = begin; task < end; ++task) {
      const int t = int(task / s.Nh), h = int(task % s.Nh);
      const size_t n = size_t(s.q_pos0 + t + 1);
      const size_t head_offset = size_t(h / group) * s.D * elem;
      const float* qh = q + (size_t(t) * s.Nh + h) * s.D;
      scores.resize(n);
      for (size_t p = 0; p < n; ++p) {
        const uint8_t* k = static_cast<const uint8_t*>(k_cache) + p * row_elems * elem;
        scores[p] = s.scale * vec::dot_typed(qh, k + head_offset, kv_type, s.D);
      }
      softmax(scores.data(), n);
      float* o = out + (size_t(t) * s.Nh + h) * s.D;
      std::fill(o, o + s.D, 0.f);
      for (size_t p = 0; p < n; ++p) {
        const uint8_t* v = static_cast<const uint8_t*>(v_cache) + p * row_elems * elem;
        vec::axpy_typed(o, scores[p], v + head_offset, kv_type, s.D);
      }
    }
  });
}

}  // namespace qmlx
