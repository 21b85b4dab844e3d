#include "kernels/vec.h"

#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "kernels/simd.h"

namespace qmlx::vec {
namespace {

using simd::hsum;

inline __m256 load8(const void* p, ScalarType t, size_t i) {
  switch (t) {
    case ScalarType::kF16:
      return _mm256_cvtph_ps(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i)));
    case ScalarType::kBF16: {
      __m128i h =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i));
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    case ScalarType::kF32:
    default:
      return _mm256_loadu_ps(static_cast<const float*>(p) + i);
  }
}

}  // namespace

float dot(const float* a, const float* b, size_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8)
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  float s = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

float dot_typed(const float* a, const void* b, ScalarType t, size_t n) {
  if (t == ScalarType::kF32) return dot(a, static_cast<const float*>(b), n);
  __m256 acc = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), load8(b, t, i), acc);
  float s = hsum(acc);
  for (; i < n; ++i) s += a[i] * load_scalar(b, t, i);
  return s;
}

float sum(const float* a, size_t n) {
  __m256 acc = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(a + i));
  float s = hsum(acc);
  for (; i < n; ++i) s += a[i];
  return s;
}

float sum_squares(const float* a, size_t n) { return dot(a, a, n); }

void axpy(float* y, float a, const float* x, size_t n) {
  __m256 va = _mm256_set1_ps(a);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

void axpy_typed(float* y, float a, const void* x, ScalarType t, size_t n) {
  if (t == ScalarType::kF32) return axpy(y, a, static_cast<const float*>(x), n);
  __m256 va = _mm256_set1_ps(a);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, load8(x, t, i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * load_scalar(x, t, i);
}

void scale(float* x, float a, size_t n) {
  __m256 va = _mm256_set1_ps(a);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(va, _mm256_loadu_ps(x + i)));
  for (; i < n; ++i) x[i] *= a;
}

size_t argmax(const float* a, size_t n) {
  // The maximum first (vector max passes NaN over: it answers its second operand when either is
  // NaN), then the first element equal to it.
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  size_t i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(a + i), m);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float best = lanes[0];
  for (float v : lanes) best = v > best ? v : best;
  for (; i < n; ++i) best = a[i] > best ? a[i] : best;
  const __m256 target = _mm256_set1_ps(best);
  for (i = 0; i + 8 <= n; i += 8) {
    const int hits = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(a + i), target, _CMP_EQ_OQ));
    if (hits) return i + size_t(__builtin_ctz(unsigned(hits)));
  }
  for (; i < n; ++i)
    if (a[i] == best) return i;
  return 0;
}

namespace {

// exp_shifted's loop; y == nullptr only sums.
double exp_shifted_into(float* y, const float* x, float shift, float divisor, size_t n) {
  const __m256 vshift = _mm256_set1_ps(shift), vdivisor = _mm256_set1_ps(divisor);
  auto weights = [&](__m256 v) {
    return simd::exp(_mm256_div_ps(_mm256_sub_ps(v, vshift), vdivisor));
  };
  __m256d acc = _mm256_setzero_pd();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = weights(_mm256_loadu_ps(x + i));
    if (y) _mm256_storeu_ps(y + i, e);
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, acc);
  double total = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  if (i < n) {
    alignas(32) float in[8], out[8];
    std::fill(in, in + 8, shift);
    std::copy(x + i, x + n, in);
    _mm256_store_ps(out, weights(_mm256_load_ps(in)));
    for (size_t k = 0; i + k < n; ++k) {
      if (y) y[i + k] = out[k];
      total += out[k];
    }
  }
  return total;
}

}  // namespace

double exp_shifted(float* y, const float* x, float shift, float divisor, size_t n) {
  return exp_shifted_into(y, x, shift, divisor, n);
}

double sum_exp_shifted(const float* x, float shift, float divisor, size_t n) {
  return exp_shifted_into(nullptr, x, shift, divisor, n);
}

void select_by_bits(float* y, const float* x, const uint64_t* keep, float fill, size_t n) {
  const __m256 vfill = _mm256_set1_ps(fill);
  // Lane j of a group of 8 tests bit j of the group's byte.
  const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const uint64_t word = keep[i / 64];
    if (word == ~uint64_t{0}) {
      for (size_t j = 0; j < 64; j += 8) _mm256_storeu_ps(y + i + j, _mm256_loadu_ps(x + i + j));
    } else if (word == 0) {
      for (size_t j = 0; j < 64; j += 8) _mm256_storeu_ps(y + i + j, vfill);
    } else {
      for (size_t j = 0; j < 64; j += 8) {
        const __m256i byte = _mm256_set1_epi32(int((word >> j) & 0xff));
        const __m256 take =
            _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(byte, lane_bit), lane_bit));
        _mm256_storeu_ps(y + i + j, _mm256_blendv_ps(vfill, _mm256_loadu_ps(x + i + j), take));
      }
    }
  }
  for (; i < n; ++i) y[i] = (keep[i / 64] >> (i % 64)) & 1 ? x[i] : fill;
}

}  // namespace qmlx::vec
