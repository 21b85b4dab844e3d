#include "kernels/activations.h"

#include <algorithm>

namespace qmlx {

void silu_mul(float* a, const float* b, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = silu(a[i]) * b[i];
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

}  // namespace qmlx
