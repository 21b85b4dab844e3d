#include "kernels/norms.h"

#include <cmath>

#include "kernels/activations.h"
#include "kernels/vec.h"

namespace qmlx {

void rms_norm(const float* x, const float* w, size_t n, float eps, float* out) {
  float inv = 1.f / std::sqrt(vec::sum_squares(x, n) / float(n) + eps);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] * inv * w[i];
}

void rms_norm_gated(const float* x, const float* z, const float* w, size_t n, float eps,
                    float* out) {
  float inv = 1.f / std::sqrt(vec::sum_squares(x, n) / float(n) + eps);
  for (size_t i = 0; i < n; ++i) out[i] = w[i] * (x[i] * inv) * silu(z[i]);
}

void l2_norm_scaled(float* x, size_t n, float eps, float scale) {
  vec::scale(x, scale / std::sqrt(vec::sum_squares(x, n) + eps), n);
}

}  // namespace qmlx
