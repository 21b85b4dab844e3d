#include "kernels/activations.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/thread_pool.h"
#include "kernels/simd.h"

namespace qmlx {
namespace {

// silu(x) = x / (1 + e^-x) for 8 lanes; for x below -88 e^-x saturates and the result is a
// tiny negative number where the exact one underflows to (almost) zero.
__m256 silu8(__m256 x) {
  const __m256 e = simd::exp(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.f), e));
}

}  // namespace

void silu_mul(float* a, const float* b, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(a + i, _mm256_mul_ps(silu8(_mm256_loadu_ps(a + i)), _mm256_loadu_ps(b + i)));
  for (; i < n; ++i) a[i] = silu(a[i]) * b[i];
}

void silu_in_place(float* a, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(a + i, silu8(_mm256_loadu_ps(a + i)));
  for (; i < n; ++i) a[i] = silu(a[i]);
}

void gelu_tanh_in_place(float* a, size_t n) {
  // 0.5 x (1 + tanh(y)) = x / (1 + e^(-2y)), y = sqrt(2/pi) (x + 0.044715 x^3): silu's form, so
  // no tanh and no cancellation near y = 0; 8 lanes with simd::exp, the array split over the
  // pool (the vision tower's MLP holds patches x 4304 of them).
  constexpr float kTwoSqrt2OverPi = 2 * 0.7978845608028654f;
  const __m256 c = _mm256_set1_ps(-kTwoSqrt2OverPi), cubic = _mm256_set1_ps(0.044715f);
  const __m256 one = _mm256_set1_ps(1.f);
  auto gelu8 = [&](__m256 x) {
    const __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(cubic, x), _mm256_mul_ps(x, x), x);
    return _mm256_div_ps(x, _mm256_add_ps(one, simd::exp(_mm256_mul_ps(c, inner))));
  };
  constexpr size_t kChunk = 1 << 14;  // elements per task: a multiple of 8
  default_pool().parallel_for((n + kChunk - 1) / kChunk, [&](size_t begin, size_t end) {
    const size_t stop = std::min(n, end * kChunk);
    size_t i = begin * kChunk;
    for (; i + 8 <= stop; i += 8) _mm256_storeu_ps(a + i, gelu8(_mm256_loadu_ps(a + i)));
    if (i == stop) return;
    float tail[8] = {};
    std::copy(a + i, a + stop, tail);
    _mm256_storeu_ps(tail, gelu8(_mm256_loadu_ps(tail)));
    std::copy(tail, tail + (stop - i), a + i);
  });
}

void gelu_erf_in_place(float* a, size_t n) {
  constexpr float kInvSqrt2 = 0.7071067811865476f;
  constexpr size_t kChunk = 1 << 14;
  default_pool().parallel_for((n + kChunk - 1) / kChunk, [&](size_t begin, size_t end) {
    for (size_t i = begin * kChunk; i < std::min(n, end * kChunk); ++i)
      a[i] = 0.5f * a[i] * (1.f + std::erf(a[i] * kInvSqrt2));
  });
}

void softmax(float* x, size_t n) {
  if (n == 0) return;
  float m = *std::max_element(x, x + n);
  float s = 0.f;
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    s += x[i];
  }
  float inv = 1.f / s;
  for (size_t i = 0; i < n; ++i) x[i] *= inv;
}

void softmax_vector_exp(float* x, size_t n) {
  size_t i = 0;
  __m256 m8 = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (; i + 8 <= n; i += 8) m8 = _mm256_max_ps(m8, _mm256_loadu_ps(x + i));
  float lanes[8];
  _mm256_storeu_ps(lanes, m8);
  float m = *std::max_element(lanes, lanes + 8);
  for (; i < n; ++i) m = std::max(m, x[i]);
  const __m256 shift = _mm256_set1_ps(m);
  __m256 total = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = simd::exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), shift));
    _mm256_storeu_ps(x + i, e);
    total = _mm256_add_ps(total, e);
  }
  float sum = simd::hsum(total);
  for (; i < n; ++i) sum += x[i] = std::exp(x[i] - m);
  const __m256 inv = _mm256_set1_ps(1.f / sum);
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
  for (; i < n; ++i) x[i] *= 1.f / sum;
}

}  // namespace qmlx
