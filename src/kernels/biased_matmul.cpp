#include "kernels/biased_matmul.h"

#include <cstddef>

#include "kernels/matmul.h"

namespace qmlx {

void matmul_biased(const float* x, int T, const WeightMatrix& w, const float* bias, float* y) {
  matmul(x, T, w, y, /*generated_rows=*/0);
  for (int t = 0; t < T; ++t) {
    float* row = y + size_t(t) * w.rows;
    for (int o = 0; o < w.rows; ++o) row[o] += bias[o];
  }
}

}  // namespace qmlx
