#include "kernels/bidirectional_attention.h"

#include <algorithm>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/matmul.h"

namespace qmlx {
namespace {

// Query rows per work item: a GEMM tile's worth of rows against every key, small enough that
// the [rows][T] scores stay in cache and a small image still spreads over the cores.
constexpr int kQueryBlock = 48;

// One head's rows gathered out of the strided q/k/v layout, so that both products are plain
// matmuls on the packed GEMM (kernels/matmul.h, prompt rows): scores = Q K^T is Q times the
// [T][D] matrix K, and P V is P times the [D][T] matrix V^T.
struct HeadRows {
  std::vector<float> q, k, v_t;  // [T][D], [T][D], [D][T]
};

HeadRows gather_head(const BidirectionalAttentionShape& s, int h, const float* q, const float* k,
                     const float* v) {
  HeadRows r;
  const size_t T = size_t(s.T), D = size_t(s.D), head = size_t(h) * D;
  r.q.resize(T * D);
  r.k.resize(T * D);
  r.v_t.resize(D * T);
  for (size_t t = 0; t < T; ++t) {
    const size_t at = t * s.row_stride + head;
    std::copy(q + at, q + at + D, &r.q[t * D]);
    std::copy(k + at, k + at + D, &r.k[t * D]);
    for (size_t d = 0; d < D; ++d) r.v_t[d * T + t] = v[at + d];
  }
  return r;
}

WeightMatrix f32_view(const std::vector<float>& values, int rows, int cols) {
  WeightMatrix m;
  m.format = WeightFormat::kF32;
  m.rows = rows;
  m.cols = cols;
  m.data = reinterpret_cast<const uint8_t*>(values.data());
  return m;
}

}  // namespace

void bidirectional_attention(const BidirectionalAttentionShape& s, const float* q, const float* k,
                             const float* v, float* out) {
  std::vector<HeadRows> heads(size_t(s.heads));
  default_pool().parallel_for(size_t(s.heads), [&](size_t begin, size_t end) {
    for (size_t h = begin; h < end; ++h) heads[h] = gather_head(s, int(h), q, k, v);
  });
  const int blocks = (s.T + kQueryBlock - 1) / kQueryBlock;
  default_pool().parallel_for(size_t(blocks) * s.heads, [&](size_t begin, size_t end) {
    std::vector<float> scores(size_t(kQueryBlock) * s.T), head_out(size_t(kQueryBlock) * s.D);
    for (size_t item = begin; item < end; ++item) {
      const int h = int(item % size_t(s.heads)), t0 = int(item / size_t(s.heads)) * kQueryBlock;
      const int rows = std::min(kQueryBlock, s.T - t0);
      const HeadRows& r = heads[size_t(h)];
      matmul_serial(&r.q[size_t(t0) * s.D], rows, f32_view(r.k, s.T, s.D), scores.data(), 0);
      for (int i = 0; i < rows; ++i) {
        float* row = &scores[size_t(i) * s.T];
        for (int j = 0; j < s.T; ++j) row[j] *= s.scale;
        softmax_vector_exp(row, size_t(s.T));
      }
      matmul_serial(scores.data(), rows, f32_view(r.v_t, s.D, s.T), head_out.data(), 0);
      for (int i = 0; i < rows; ++i)
        std::copy(&head_out[size_t(i) * s.D], &head_out[size_t(i + 1) * s.D],
                  out + (size_t(t0 + i) * s.heads + h) * s.D);
    }
  });
}

}  // namespace qmlx
