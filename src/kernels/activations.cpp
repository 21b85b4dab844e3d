#include "kernels/activations.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (size_t i = 0; i < n; ++i) {
    const float x = a[i];
    a[i] = 0.5f * x * (1.f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
  }
}

void gelu_erf_in_place(float* a, size_t n) {
  constexpr float kInvSqrt2 = 0.7071067811865476f;
  for (size_t i = 0; i < n; ++i) a[i] = 0.5f * a[i] * (1.f + std::erf(a[i] * kInvSqrt2));
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
