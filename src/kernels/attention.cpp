#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/prefetch.h"
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

// Decode (one query row), for any head size: work is split over KV heads, and the query heads
// sharing a KV head are done together, so each K and V row is loaded (and converted) once for
// all of them.
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

// Decode for head sizes that are a multiple of 16, specialised per row type T: the rows are
// read in place, eight values at a time converted in registers (int8 codes are scaled once per
// row: the K scale multiplies the dot product, the V scale the probability), never copied.
// C query heads of a group share each load: Q K^T keeps C dot products in registers, and P V
// a 16-wide slice of C outputs, over blocks of kValueBlock rows that stay in cache while all
// slices of the head pass over them. Decode at long context reads all K/V once per token, so
// this loop, not the conversion, is what int8 rows make cheaper: half the bytes.
constexpr int kValueBlock = 64;

// Q K^T of C query heads (qc: [C][D]) against R consecutive key rows from p on: C x R dot
// products in registers, so each k load feeds C FMAs and each q load R.
template <KvType T, int C, int R>
void score_rows(const float* qc, const uint8_t* rows, size_t row_bytes, int D, float scale,
                size_t p, size_t n, float* sc) {
  __m256 acc[C][R];
  for (int j = 0; j < C; ++j)
    for (int r = 0; r < R; ++r) acc[j][r] = _mm256_setzero_ps();
  for (int d = 0; d < D; d += 8) {
    __m256 k[R];
    for (int r = 0; r < R; ++r) k[r] = load_kv8<T>(rows + size_t(r) * row_bytes, d);
    for (int j = 0; j < C; ++j) {
      const __m256 qv = _mm256_loadu_ps(qc + size_t(j) * D + d);
      for (int r = 0; r < R; ++r) acc[j][r] = _mm256_fmadd_ps(qv, k[r], acc[j][r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const float row_scale = scale * kv_row_scale<T>(rows + size_t(r) * row_bytes, D);
    for (int j = 0; j < C; ++j) sc[size_t(j) * n + p + r] = simd::hsum(acc[j][r]) * row_scale;
  }
}

template <KvType T, int C>
void attend_single_row_in_place(const AttentionShape& s, const float* q, const void* k_cache,
                                const void* v_cache, float* out) {
  const int D = s.D, group = s.Nh / s.Nkv;
  const size_t head_bytes = kv_head_bytes(T, D), row_bytes = size_t(s.Nkv) * head_bytes;
  const size_t n = size_t(s.q_pos0 + 1);
  default_pool().parallel_for(size_t(s.Nkv), [&](size_t begin, size_t end) {
    // Kept per thread: a fresh 0.5 MB vector per call and layer (32k context) cost page faults
    // and zeroing worth half of the attention itself.
    thread_local std::vector<float> scores;
    if (scores.size() < group * n) scores.resize(group * n);
    for (size_t kv = begin; kv < end; ++kv) {
      const uint8_t* keys = static_cast<const uint8_t*>(k_cache) + kv * head_bytes;
      const uint8_t* values = static_cast<const uint8_t*>(v_cache) + kv * head_bytes;
      const float* qg = q + kv * group * D;
      float* og = out + kv * group * D;
      for (int g0 = 0; g0 < group; g0 += C) {
        const float* qc = qg + size_t(g0) * D;
        float* sc = scores.data() + size_t(g0) * n;
        constexpr int R = C == 4 ? 2 : 4;  // key rows per pass: C * R accumulators
        size_t p = 0;
        for (; p + R <= n; p += R)
          score_rows<T, C, R>(qc, keys + p * row_bytes, row_bytes, D, s.scale, p, n, sc);
        for (; p < n; ++p)
          score_rows<T, C, 1>(qc, keys + p * row_bytes, row_bytes, D, s.scale, p, n, sc);
      }
      for (int g = 0; g < group; ++g) softmax_vector_exp(scores.data() + g * n, n);
      std::fill(og, og + size_t(group) * D, 0.f);
      for (size_t p0 = 0; p0 < n; p0 += kValueBlock) {
        const size_t p_end = std::min(n, p0 + kValueBlock);
        // The block's 16-value slices visit its rows one line at a time, a pattern the hardware
        // prefetcher does not follow: the next block is requested while this one is worked on.
        for (size_t p = p_end; p < std::min(n, p_end + kValueBlock); ++p)
          prefetch_bytes(values + p * row_bytes, head_bytes);
        // int8: each row's scale joins its probabilities here, where the row is in cache.
        if constexpr (T == KvType::kInt8)
          for (size_t p = p0; p < p_end; ++p) {
            const float scale = kv_row_scale<T>(values + p * row_bytes, D);
            for (int g = 0; g < group; ++g) scores[g * n + p] *= scale;
          }
        for (int g0 = 0; g0 < group; g0 += C) {
          const float* sc = scores.data() + size_t(g0) * n;
          float* oc = og + size_t(g0) * D;
          for (int d = 0; d < D; d += 16) {
            __m256 lo[C], hi[C];
            for (int j = 0; j < C; ++j) {
              lo[j] = _mm256_loadu_ps(oc + size_t(j) * D + d);
              hi[j] = _mm256_loadu_ps(oc + size_t(j) * D + d + 8);
            }
            for (size_t p = p0; p < p_end; ++p) {
              const uint8_t* row = values + p * row_bytes;
              const __m256 v_lo = load_kv8<T>(row, d), v_hi = load_kv8<T>(row, d + 8);
              for (int j = 0; j < C; ++j) {
                const __m256 w = _mm256_broadcast_ss(sc + size_t(j) * n + p);
                lo[j] = _mm256_fmadd_ps(w, v_lo, lo[j]);
                hi[j] = _mm256_fmadd_ps(w, v_hi, hi[j]);
              }
            }
            for (int j = 0; j < C; ++j) {
              _mm256_storeu_ps(oc + size_t(j) * D + d, lo[j]);
              _mm256_storeu_ps(oc + size_t(j) * D + d + 8, hi[j]);
            }
          }
        }
      }
    }
  });
}

// The in-place decode for row type T, with as many query heads per pass as divide the group.
template <KvType T>
void attend_single_row_in_place(const AttentionShape& s, const float* q, const void* k_cache,
                                const void* v_cache, float* out) {
  const int group = s.Nh / s.Nkv;
  if (group % 4 == 0) return attend_single_row_in_place<T, 4>(s, q, k_cache, v_cache, out);
  if (group % 2 == 0) return attend_single_row_in_place<T, 2>(s, q, k_cache, v_cache, out);
  attend_single_row_in_place<T, 1>(s, q, k_cache, v_cache, out);
}

void decode(const AttentionShape& s, const float* q, const void* k_cache, const void* v_cache,
            KvType kv_type, float* out) {
  if (s.D % 16 != 0) return attend_single_row(s, q, k_cache, v_cache, kv_type, out);
  switch (kv_type) {
    case KvType::kF32:
      return attend_single_row_in_place<KvType::kF32>(s, q, k_cache, v_cache, out);
    case KvType::kF16:
      return attend_single_row_in_place<KvType::kF16>(s, q, k_cache, v_cache, out);
    case KvType::kBF16:
      return attend_single_row_in_place<KvType::kBF16>(s, q, k_cache, v_cache, out);
    case KvType::kInt8:
      return attend_single_row_in_place<KvType::kInt8>(s, q, k_cache, v_cache, out);
  }
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
  if (s.generated) {
    // One row at a time, each seeing the rows up to its own position.
    const size_t row = size_t(s.Nh) * s.D;
    for (int t = 0; t < s.T; ++t) {
      AttentionShape one = s;
      one.T = 1;
      one.q_pos0 = s.q_pos0 + t;
      decode(one, q + t * row, k_cache, v_cache, kv_type, out + t * row);
    }
    return;
  }
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
