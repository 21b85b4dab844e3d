// Prefill GEMM for any stored weight format: y[t][o] = sum_k x[t][k] * W[o][k] for T > 1.
// Weights are dequantized 16 rows at a time into a k-major panel (panel[k][16]) once per
// matmul, and a 6-token x 16-output register tile (12 YMM accumulators) sweeps the panel 256
// columns at a time (16 KiB, in L1) for every token: each k step is 2 panel loads and 6
// broadcasts for 12 FMAs, so the kernel runs near the FMA peak instead of the load ports. The
// activations stream from L2/L3 once per panel.
#pragma once

#include "kernels/weight_matrix.h"

namespace qmlx {

// Output rows [begin, end) of y ([T][w.rows]) for x ([T][w.cols]).
void packed_gemm_rows(const float* x, int T, const WeightMatrix& w, float* y, int begin, int end);

}  // namespace qmlx
