// Decode GEMV (T = 1) for the GGUF block formats of the llama.cpp comparison: Q8_0, Q4_K and
// Q6_K. Like llama.cpp the codes are multiplied as integers against quantized activations,
// but the activations are int16 per 32 columns (kernels/int16_activations.h) rather than int8,
// to stay within the engine's tolerance. Scales are applied per sub-block in float.
#pragma once

#include "kernels/int16_activations.h"
#include "kernels/weight_matrix.h"

namespace qmlx {

// True for the GGUF types with a fused kernel here (others decode a row, then dot).
bool gguf_gemv_supported(GgufType t);

// The activations every supported type uses (int16 per 32 columns, column order).
Int16Activations prepare_gguf_gemv_input(const float* x, int cols);

// y[r] for rows [begin, end) of w (a GGUF matrix of a supported type).
void gguf_gemv_rows(const Int16Activations& in, const WeightMatrix& w, int begin, int end,
                    float* y);

// The same for B activation rows at once (generated rows of several sequences): row b's outputs
// at y + b * ldy. Each weight row is read once for all of them (Q8_0 codes widened once, 4 rows
// at a time in registers; K-quant rows taken again from L1), and each row's result is
// bit-identical to the call above with that row alone.
void gguf_gemv_rows(const Int16Activations* in, int B, const WeightMatrix& w, int begin, int end,
                    float* y, size_t ldy);

}  // namespace qmlx
