#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/register_tile.h"
#include "kernels/simd.h"
#include "kernels/vec.h"

namespace qmlx {
namespace {

constexpr int kKeyBlock = 64;      // keys per block: K^T and V blocks of 64 KiB each at D = 256
constexpr int kQueryVectors = 64;  // query vectors (tokens x heads sharing a KV head) per task

// One KV head's row p as floats: a pointer into an f32 cache, else decoded into `buffer`.
const float* kv_row(const void* cache, KvType type, size_t row_bytes, size_t head_offset, size_t p,
                    int D, float* buffer) {
  const uint8_t* row = static_cast<const uint8_t*>(cache) + p * row_bytes + head_offset;
  return load_kv_head(row, D, type, buffer);
}

// Decode (one query row): work is split over KV heads, and the query heads sharing a KV head
// are done together, so each K and V row is loaded (and converted) once for all of them.
void attend_single_row(const AttentionShape& s, const float* q, const void* k_cache,
                       const void* v_cache, KvType kv_type, float* out) {
  const size_t head_bytes = kv_head_bytes(kv_type, s.D);
  const size_t row_bytes = size_t(s.Nkv) * head_bytes;
  const int group = s.Nh / s.Nkv;
  const size_t n = size_t(s.q_pos0 + 1);
  default_pool().parallel_for(size_t(s.Nkv), [&](size_t begin, size_t end) {
    std::vector<float> scores(group * n), buffer(s.D);
    for (size_t kv = begin; kv < end; ++kv) {
      const size_t head_offset = kv * head_bytes;
      const float* qg = q + kv * group * s.D;
      float* og = out + kv * group * s.D;
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

// Prefill: a block of query rows of one KV head against the cache, one block of keys at a time
// with an online softmax (running max and sum per query; no T x T scores). Each K block is
// converted and transposed once for all the block's query vectors, and both products (Q K^T,
// P V) run in the 6 x 16 register tile. Key blocks always start at multiples of kKeyBlock
// from position 0 and masked keys contribute exact zeros, so a query's result does not depend
// on how the prompt was cut into prefill chunks or query blocks.
class BlockAttention {
 public:
  BlockAttention(const AttentionShape& s, KvType kv_type)
      : s_(s),
        kv_type_(kv_type),
        group_(s.Nh / s.Nkv),
        padded_d_((s.D + kTileCols - 1) / kTileCols * kTileCols),
        head_bytes_(kv_head_bytes(kv_type, s.D)),
        row_bytes_(size_t(s.Nkv) * head_bytes_) {}

  // Query rows [t0, t0 + tq) of KV head kv.
  void run(const float* q, const void* k_cache, const void* v_cache, int kv, int t0, int tq,
           float* out) {
    const int M = tq * group_, D = s_.D;
    queries_.assign(size_t(M) * D, 0.f);
    for (int t = 0; t < tq; ++t)
      for (int g = 0; g < group_; ++g) {
        const float* src = q + (size_t(t0 + t) * s_.Nh + size_t(kv) * group_ + g) * D;
        float* dst = queries_.data() + size_t(t * group_ + g) * D;
        for (int d = 0; d < D; ++d) dst[d] = src[d] * s_.scale;
      }
    acc_.assign(size_t(M) * padded_d_, 0.f);
    max_.assign(M, -std::numeric_limits<float>::infinity());
    sum_.assign(M, 0.f);
    keys_t_.assign(size_t(D) * kKeyBlock, 0.f);
    values_.assign(size_t(kKeyBlock) * padded_d_, 0.f);
    scores_.resize(size_t(M) * kKeyBlock);
    row_.resize(D);

    const size_t head_offset = size_t(kv) * head_bytes_;
    const int64_t key_end = s_.q_pos0 + t0 + tq;  // one past the last query's position
    for (int64_t k0 = 0; k0 < key_end; k0 += kKeyBlock) {
      const int bk = int(std::min<int64_t>(kKeyBlock, key_end - k0));
      load_block(k_cache, v_cache, head_offset, k0, bk);
      tiled_product(queries_.data(), D, M, keys_t_.data(), kKeyBlock, D, kKeyBlock / kTileCols,
                    scores_.data(), kKeyBlock, false);
      for (int m = 0; m < M; ++m) {
        const int64_t last_visible = s_.q_pos0 + t0 + m / group_;
        softmax_step(m, int(std::min<int64_t>(bk, last_visible - k0 + 1)));
      }
      tiled_product(scores_.data(), kKeyBlock, M, values_.data(), padded_d_, bk,
                    padded_d_ / kTileCols, acc_.data(), padded_d_, true);
    }
    for (int m = 0; m < M; ++m) {
      const int t = t0 + m / group_, g = m % group_;
      float* dst = out + (size_t(t) * s_.Nh + size_t(kv) * group_ + g) * D;
      const float inv = 1.f / sum_[m];
      const float* src = acc_.data() + size_t(m) * padded_d_;
      for (int d = 0; d < D; ++d) dst[d] = src[d] * inv;
    }
  }

 private:
  // Keys [k0, k0 + bk) as keys_t_[d][j] and values_[j][d]; columns j >= bk of keys_t_ keep
  // stale or zero values, which the mask covers.
  void load_block(const void* k_cache, const void* v_cache, size_t head_offset, int64_t k0,
                  int bk) {
    const int D = s_.D;
    for (int j = 0; j < bk; ++j) {
      const float* k =
          kv_row(k_cache, kv_type_, row_bytes_, head_offset, size_t(k0 + j), D, row_.data());
      for (int d = 0; d < D; ++d) keys_t_[size_t(d) * kKeyBlock + j] = k[d];
      const float* v =
          kv_row(v_cache, kv_type_, row_bytes_, head_offset, size_t(k0 + j), D, row_.data());
      std::copy(v, v + D, values_.data() + size_t(j) * padded_d_);
    }
  }

  // Scores of query m over this block become probabilities relative to its running max; the
  // accumulated output and sum are rescaled when the max grows. Keys from `visible` on are
  // masked (exact zeros).
  void softmax_step(int m, int visible) {
    float* p = scores_.data() + size_t(m) * kKeyBlock;
    if (visible <= 0) {
      std::fill(p, p + kKeyBlock, 0.f);
      return;
    }
    const float block_max = *std::max_element(p, p + visible);
    const float new_max = std::max(max_[m], block_max);
    if (new_max > max_[m]) {
      const float alpha = std::exp(max_[m] - new_max);
      sum_[m] *= alpha;
      float* a = acc_.data() + size_t(m) * padded_d_;
      for (int d = 0; d < padded_d_; ++d) a[d] *= alpha;
      max_[m] = new_max;
    }
    std::fill(p + visible, p + kKeyBlock, -std::numeric_limits<float>::infinity());
    const __m256 shift = _mm256_set1_ps(new_max);
    __m256 total = _mm256_setzero_ps();
    for (int j = 0; j < kKeyBlock; j += 8) {
      const __m256 e = simd::exp(_mm256_sub_ps(_mm256_loadu_ps(p + j), shift));
      _mm256_storeu_ps(p + j, e);
      total = _mm256_add_ps(total, e);
    }
    sum_[m] += simd::hsum(total);
  }

  const AttentionShape& s_;
  KvType kv_type_;
  int group_, padded_d_;
  size_t head_bytes_, row_bytes_;
  std::vector<float> queries_, acc_, max_, sum_, keys_t_, values_, scores_, row_;
};

}  // namespace

void attention(const AttentionShape& s, const float* q, const void* k_cache, const void* v_cache,
               KvType kv_type, float* out) {
  if (s.T == 1) return attend_single_row(s, q, k_cache, v_cache, kv_type, out);
  const int group = s.Nh / s.Nkv;
  const int tq = std::clamp(kQueryVectors / group, 1, s.T);
  const int blocks = (s.T + tq - 1) / tq;
  // Later query blocks see more keys; pairing block i with block blocks-1-i in consecutive
  // tasks gives each thread's contiguous range of tasks an even share of the work.
  auto block_of = [&](int i) { return i % 2 == 0 ? i / 2 : blocks - 1 - i / 2; };
  default_pool().parallel_for(size_t(blocks) * s.Nkv, [&](size_t begin, size_t end) {
    BlockAttention block(s, kv_type);
    for (size_t task = begin; task < end; ++task) {
      const int b = block_of(int(task / s.Nkv)), kv = int(task % s.Nkv);
      const int t0 = b * tq;
      block.run(q, k_cache, v_cache, kv, t0, std::min(tq, s.T - t0), out);
    }
  });
}

}  // namespace qmlx
