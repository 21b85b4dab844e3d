// The Linear layers with a bias (the vision tower's: patch embedding, q/k/v, projections, MLP,
// merger): y[t][o] = sum_i x[t][i] * W[o][i] + bias[o]. The rows are prompt rows of matmul()
// (kernels/matmul.h): one fixed arithmetic per row, whatever the row count.
#pragma once

#include "kernels/weight_matrix.h"

namespace qmlx {

// x: [T][w.cols], bias: [w.rows], y: [T][w.rows] (overwritten).
void matmul_biased(const float* x, int T, const WeightMatrix& w, const float* bias, float* y);

}  // namespace qmlx
