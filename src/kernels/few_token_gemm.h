// Prefill GEMM for a few tokens: y[t][o] = sum_k x[t][k] * W[o][k] for 2 <= T <= kFewTokens,
// the share of a prompt chunk one MoE expert sees (512 tokens x 8 of 256 experts: ~16 each).
//
// packed_gemm_rows dequantizes 16 rows into a transposed panel and reuses it for every token;
// with 16 tokens the panel (dequantize, 8 x 8 transposes, 128 KiB written and read back through
// L2 for cols = 2048) is a large share of the work. Here four rows are dequantized 256 or 512
// columns at a time into an L1 buffer, untransposed, and a dot-product tile multiplies them with
// the same columns of 3 tokens: each 8-column step is 3 activation loads and 4 weight loads for
// 12 FMAs into 8-lane partial sums, reduced once per output at the end. Columns are the outer
// loop, so the activations' slice stays in L1 across rows; the next rows' codes are prefetched
// (a pass reads a short piece of each row, a stride the hardware prefetcher does not follow).
#pragma once

#include "kernels/weight_matrix.h"

namespace qmlx {

// NOT on the matmul's path since row kinds (kernels/matmul.h): its lane-wise partial sums are
// another arithmetic than the panel GEMM's, so a prompt row's bits would depend on how many rows
// an MoE expert got. Kept for `qmlx_kernel_bench 2 experts`, which measures what that costs.
// Up to this many tokens the matmul used few_token_gemm_rows. `qmlx_kernel_bench 2 experts`
// (both kernels interleaved in one run, 2 threads, 8-bit, the 35B-A3B expert shapes): this
// kernel is 1.33-1.57x the panel's speed at T = 4, 1.17-1.42x at T = 8, 0.84-1.04x at 16, and
// 0.78-0.92x at 32.
constexpr int kFewTokens = 12;

// Output rows [begin, end) of y ([T][w.rows]) for x ([T][w.cols]); any weight format, any T.
void few_token_gemm_rows(const float* x, int T, const WeightMatrix& w, float* y, int begin,
                         int end);

}  // namespace qmlx
