// Int16Activations: one activation row rounded to int16 per group of columns, x ~= step[g] *
// codes[i], for the decode GEMV kernels (affine_gemv, gguf_gemv). Their inner loops multiply
// the weight codes by these integers with vpmaddwd: two instructions per 16 weights instead of
// a byte-to-float conversion and an FMA per 8. 16 bits keep the product within ~2^-16 of the
// fp32 one, inside the engine's 1e-4 logits tolerance, which int8 activations (llama.cpp's
// choice) would not be.
#pragma once

#include <cstdint>
#include <vector>

namespace qmlx {

struct Int16Activations {
  int group_size = 0;
  // Packed-nibble order: each 32-column chunk is stored even columns first, then odd columns,
  // matching 4-bit codes packed low nibble first (MLX affine 4-bit). Otherwise column order.
  bool nibble_order = false;
  std::vector<int16_t> codes;
  std::vector<float> steps;  // per group
  // Per group, step * sum(codes): the group sum of the rounded x, so that terms added per
  // group (affine biases, K-quant minimums) use the same x as the codes and the result is
  // exactly W . x^ rounded once.
  std::vector<float> sums;
  // Column order only, filled by the GGUF GEMV's input: the integer sum of each 16 codes, so
  // that Q6_K's code offset (-32) is applied once per 16-value sub-block instead of per code.
  std::vector<int32_t> sums16;
};

// cols must be a multiple of group_size (and group_size of 32 with nibble_order).
Int16Activations quantize_int16_activations(const float* x, int cols, int group_size,
                                            bool nibble_order);

}  // namespace qmlx
