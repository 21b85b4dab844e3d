// Matmul of fp32 activations by a stored weight matrix: y[t][o] = sum_i x[t][i] * W[o][i].
// Decode (T = 1) streams each weight byte once with fused dequantize-and-dot (memory-bandwidth
// bound); prefill (T > 1) dequantizes a small tile of rows once and reuses it for all T rows
// (kernels/packed_gemm.h), or for up to kFewTokens tokens (an MoE expert's share of a chunk)
// multiplies rows dequantized into L1 without a transposed panel (kernels/few_token_gemm.h).
// Work is split over output rows on default_pool().
#pragma once

#include "kernels/weight_matrix.h"

namespace qmlx {

// x: [T][w.cols], y: [T][w.rows] (overwritten).
void matmul(const float* x, int T, const WeightMatrix& w, float* y);

// The same on one thread (callers that already parallelise over experts or heads).
void matmul_serial(const float* x, int T, const WeightMatrix& w, float* y);

}  // namespace qmlx
