// Matmul of fp32 activations by a stored weight matrix: y[t][o] = sum_i x[t][i] * W[o][i].
//
// Each row is computed with one of two fixed arithmetics, chosen by the caller for the row and
// never by how many rows share the call, so a row's result is bit-identical alone, in any batch
// and however a prompt was cut into pieces (the batch- and split-invariance of issue 18):
//  - prompt rows (prefill): the weights are dequantized to fp32 into a transposed panel and each
//    output is one FMA chain over the columns in order (kernels/packed_gemm.h), for any count;
//  - generated rows (decode steps, drafts being verified): the activation row is rounded to
//    int16 per group and multiplied with fused dequantize-and-dot, streaming each weight byte
//    once (kernels/affine_gemv.h, gguf_gemv.h; memory-bandwidth bound).
// Work is split over output rows on default_pool(); a split never changes a row's arithmetic.
#pragma once

#include <span>

#include "kernels/weight_matrix.h"

namespace qmlx {

// generated_rows: the LAST generated_rows of the T rows are generated rows, the rest prompt rows.
// x: [T][w.cols], y: [T][w.rows] (overwritten).
void matmul(const float* x, int T, const WeightMatrix& w, float* y, int generated_rows);

// One input times several matrices with its columns (the projections of a layer that read the
// same rows): exactly a matmul() per matrix, with the generated rows prepared once when the
// matrices take them alike, and one split over all their rows, so the small ones (Gated
// DeltaNet's b and a: one 16-row chunk each) do not leave a core waiting alone.
struct MatmulOutput {
  const WeightMatrix* w;
  float* y;  // [T][w->rows]
};
void matmul_many(const float* x, int T, std::span<const MatmulOutput> outputs,
                 int generated_rows);

// The same on one thread (callers that already parallelise over experts or heads).
void matmul_serial(const float* x, int T, const WeightMatrix& w, float* y, int generated_rows);

}  // namespace qmlx
