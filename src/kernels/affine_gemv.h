// Decode GEMV (T = 1) for MLX affine weights: y[r] = sum_g scale[r][g] * (q[r] . x)_g +
// bias[r][g] * sum_g(x), with x rounded once per matmul to int16 per quantization group
// (kernels/int16_activations.h) so the codes are multiplied as integers. 4- and 8-bit rows are
// decoded in registers; the other widths are unpacked to bytes one group at a time.
#pragma once

#include <cstddef>

#include "kernels/int16_activations.h"
#include "kernels/weight_matrix.h"

namespace qmlx {

// The activations for matrices stored like w (bits, group size, tiled or not).
Int16Activations prepare_affine_gemv_input(const float* x, const WeightMatrix& w);
// Whether prepare_affine_gemv_input gives the same activations for a and b, so one prepared row
// serves both.
bool same_affine_gemv_input(const WeightMatrix& a, const WeightMatrix& b);

// y[r] for rows [begin, end) of w (affine, stored as the input was made for). Tiled matrices
// (kernels/affine_tiles.h) take the tile kernel, where lane i of each multiply-add is row i.
void affine_gemv_rows(const Int16Activations& in, const WeightMatrix& w, int begin, int end,
                      float* y);

// The same for B activation rows at once (generated rows of several sequences, drafts being
// verified): row b's outputs at y + b * ldy. Each weight row is read and widened once for all B
// rows (2 at a time in registers with AVX2, 4 with AVX-512), and each row's result is
// bit-identical to the call above with that row alone.
void affine_gemv_rows(const Int16Activations* in, int B, const WeightMatrix& w, int begin, int end,
                      float* y, size_t ldy);

// The integer-dot instructions of the kernels above: AVX-512 VNNI (vpdpwssd, 32 codes per
// instruction) where the CPU has it, else AVX2 (vpmaddwd + vpaddd, 16). The integer sums are
// exact and the float steps after them the same code, so both give bit-identical results: a
// checkpoint taken on one machine continues exactly on another. QMLX_GEMV_ISA=avx2 forces AVX2.
enum class GemvIsa { kAvx2, kAvx512Vnni };
GemvIsa gemv_isa();
const char* gemv_isa_name(GemvIsa isa);
// With the instruction set chosen by the caller (tests and benchmarks compare the two).
void affine_gemv_rows(const Int16Activations* in, int B, const WeightMatrix& w, int begin, int end,
                      float* y, size_t ldy, GemvIsa isa);

}  // namespace qmlx
