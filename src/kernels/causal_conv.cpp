#include "kernels/causal_conv.h"

#include <cstring>
#include <vector>

#include "kernels/activations.h"
#include "kernels/vec.h"

namespace qmlx {

void causal_conv1d_silu(const float* x, size_t x_stride, int T, int C, int K, const float* w,
                        float* state, float* out) {
  // Input row s (s < 0 reads the state).
  auto input_row = [&](int s) {
    return s >= 0 ? x + size_t(s) * x_stride : state + size_t(K - 1 + s) * C;
  };
  for (int t = 0; t < T; ++t) {
    float* o = out + size_t(t) * C;
    std::memset(o, 0, sizeof(float) * C);
    for (int j = 0; j < K; ++j) {
      const float* in = input_row(t - (K - 1) + j);
      const float* wj = w + size_t(j) * C;
      for (int c = 0; c < C; ++c) o[c] += wj[c] * in[c];
    }
    silu_in_place(o, C);
  }
  // New state: the last K-1 rows of [state; x].
  std::vector<float> next(size_t(K - 1) * C);
  for (int r = 0; r < K - 1; ++r)
    std::memcpy(next.data() + size_t(r) * C, input_row(T - (K - 1) + r), sizeof(float) * C);
  std::memcpy(state, next.data(), next.size() * sizeof(float));
}

}  // namespace qmlx
