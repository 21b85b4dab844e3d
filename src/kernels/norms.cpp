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

void layer_norm(const float* x, const float* w, const float* b, size_t n, float eps, float* out) {
  // Two passes (mean, then the squared deviations) rather than E[x^2] - E[x]^2, which loses
  // the variance to cancellation when the mean is large against the spread.
  const float mean = vec::sum(x, n) / float(n);
  float sum_sq = 0.f;
  for (size_t i = 0; i < n; ++i) sum_sq += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.f / std::sqrt(sum_sq / float(n) + eps);
  for (size_t i = 0; i < n; ++i) out[i] = (x[i] - mean) * inv * w[i] + b[i];
}

void l2_norm_scaled(float* x, size_t n, float eps, float scale) {
  vec::scale(x, scale / std::sqrt(vec::sum_squares(x, n) + eps), n);
}

}  // namespace qmlx
