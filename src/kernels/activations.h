// Element-wise activations and the softmax, in fp32 as every reference computes them.
#pragma once

#include <cmath>
#include <cstddef>

namespace qmlx {

inline float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }
inline float silu(float x) { return x * sigmoid(x); }
// log(1 + e^x) without overflow for large x (torch's threshold is 20).
inline float softplus(float x) { return x > 20.f ? x : std::log1p(std::exp(x)); }

// a[i] = silu(a[i]) * b[i]: the SwiGLU combination.
void silu_mul(float* a, const float* b, size_t n);
// a[i] = silu(a[i]).
void silu_in_place(float* a, size_t n);

// GELU in the two forms the vision tower uses, in place: the tanh approximation
// (torch's gelu(approximate="tanh"), "gelu_pytorch_tanh": the blocks' MLP)
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), and the exact one (nn.GELU(): the patch
// merger) 0.5 x (1 + erf(x / sqrt(2))). The two differ by up to about 5e-4, far above float
// rounding, so a checkpoint's choice must be followed.
void gelu_tanh_in_place(float* a, size_t n);
void gelu_erf_in_place(float* a, size_t n);

// In place, numerically stable (max subtracted).
void softmax(float* x, size_t n);
// The same with the 8-lane exp (simd.h: within 2 ulp of std::exp), for the long rows of
// attention scores: decode at 32k context has 32k scores per query head, and the scalar
// std::exp took a fifth of its step; in the vision tower's attention it was half the time.
void softmax_vector_exp(float* x, size_t n);

}  // namespace qmlx
