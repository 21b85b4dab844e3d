#include "kernels/bidirectional_attention.h"

#include <algorithm>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/vec.h"

namespace qmlx {
namespace {

// Query rows per work item: enough to amortise a task, few enough to spread a small image.
constexpr int kQueryBlock = 16;

// One query row of one head: softmax(q . K^T * scale) V, with `scores` as scratch [T].
void attend_row(const BidirectionalAttentionShape& s, const float* q, const float* k,
                const float* v, float* scores, float* out) {
  for (int j = 0; j < s.T; ++j)
    scores[j] = vec::dot(q, k + size_t(j) * s.row_stride, s.D) * s.scale;
  softmax(scores, size_t(s.T));
  std::fill(out, out + s.D, 0.f);
  for (int j = 0; j < s.T; ++j) vec::axpy(out, scores[j], v + size_t(j) * s.row_stride, s.D);
}

}  // namespace

void bidirectional_attention(const BidirectionalAttentionShape& s, const float* q, const float* k,
                             const float* v, float* out) {
  const int blocks = (s.T + kQueryBlock - 1) / kQueryBlock;
  default_pool().parallel_for(size_t(blocks) * s.heads, [&](size_t begin, size_t end) {
    std::vector<float> scores(size_t(s.T));
    for (size_t item = begin; item < end; ++item) {
      const int h = int(item % size_t(s.heads)), block = int(item / size_t(s.heads));
      const size_t head = size_t(h) * s.D;
      for (int t = block * kQueryBlock; t < std::min(s.T, (block + 1) * kQueryBlock); ++t)
        attend_row(s, q + size_t(t) * s.row_stride + head, k + head, v + head, scores.data(),
                   out + (size_t(t) * s.heads + h) * s.D);
    }
  });
}

}  // namespace qmlx
