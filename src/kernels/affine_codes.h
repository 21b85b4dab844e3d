// Affine-quantized rows: unpacking the bit-packed codes of one quantization group into bytes
// and dequantizing whole rows. Internal to the kernels (the matmul uses the codes directly).
#pragma once

#include <cstdint>

#include "kernels/weight_matrix.h"

namespace qmlx {

// Unpacks group g of row r into `group_size` codes. For 8-bit weights returns a pointer into
// the weight itself instead (no copy); otherwise returns `scratch`.
const uint8_t* unpack_group_codes(const WeightMatrix& w, int r, int g, uint8_t* scratch);

// Scale and bias of group g of row r.
inline void group_scale_bias(const WeightMatrix& w, int r, int g, float* scale, float* bias) {
  size_t i = size_t(r) * w.groups_per_row() + g;
  *scale = load_scalar(w.scales, w.scale_type, i);
  *bias = load_scalar(w.biases, w.scale_type, i);
}

// Groups [g0, g1) of row r as floats, (g1 - g0) * group_size values.
void dequantize_affine_groups(const WeightMatrix& w, int r, int g0, int g1, float* out);

}  // namespace qmlx
