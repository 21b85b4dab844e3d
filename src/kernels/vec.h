// Vector primitives (AVX2/FMA) over contiguous float rows: the building blocks the norms,
// attention and gated delta rule kernels are made of. Any length n is accepted.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/scalar_type.h"

namespace qmlx::vec {

float dot(const float* a, const float* b, size_t n);
// dot(a, b) where b is stored as type t (used for K rows of an f16/bf16 cache).
float dot_typed(const float* a, const void* b, ScalarType t, size_t n);
float sum(const float* a, size_t n);
float sum_squares(const float* a, size_t n);
// y += a * x
void axpy(float* y, float a, const float* x, size_t n);
// y += a * x where x is stored as type t.
void axpy_typed(float* y, float a, const void* x, ScalarType t, size_t n);
// x *= a
void scale(float* x, float a, size_t n);
// The index of the first largest element; NaNs are passed over (0 when every element is NaN or
// n == 0). A logits row's argmax at memory speed: std::max_element's compare-and-branch took 0.7 ms
// over 248k ids.
size_t argmax(const float* a, size_t n);
// y[i] = e^((x[i] - shift) / divisor) (simd::exp, within 2 ulp), and their sum in double: the
// unnormalised softmax weights of a logits row at temperature `divisor`.
double exp_shifted(float* y, const float* x, float shift, float divisor, size_t n);
// The sum alone (a row's log-sum-exp is shift + log of it at divisor 1).
double sum_exp_shifted(const float* x, float shift, float divisor, size_t n);
// y[i] = bit i of `keep` (bit i%64 of word i/64) set ? x[i] : fill: a token bitmask applied to a
// logits row. Whole words of ones or zeros are copied or filled; mixed words blend 8 lanes at a
// time, so the cost is one pass at memory speed whatever the mask (testing each id's bit in turn
// took 150 us over 248k ids).
void select_by_bits(float* y, const float* x, const uint64_t* keep, float fill, size_t n);

}  // namespace qmlx::vec
