// Bilinear interpolation of a learned square grid of embeddings to an h x w grid, as the
// Qwen3-VL / Qwen3.5 vision tower resizes its position embeddings to an image's patch grid
// (transformers' fast_pos_embed_interpolate). Corners are aligned: output row i samples the
// table at y_i = i * (side - 1) / (h - 1) (torch.linspace(0, side - 1, h), in float32, filled
// from both ends as torch's CPU linspace does), columns likewise. With y0 = int(y_i),
// y1 = min(y0 + 1, side - 1), dy = y_i - y0 (and x0, x1, dx), the embedding is
//   (1-dy)(1-dx) E[y0][x0] + (1-dy) dx E[y0][x1] + dy (1-dx) E[y1][x0] + dy dx E[y1][x1],
// the four weights products in float32 and the terms added in that order.
#pragma once

#include "kernels/weight_matrix.h"

namespace qmlx {

// table: [side * side][dim] (row-major grid, row y at y * side); out: [h * w][dim] in raster
// order (output row i, column j at i * w + j).
void interpolate_grid(const WeightMatrix& table, int side, int h, int w, float* out);

// torch.linspace(0, end, n) in float32: position i of n evenly spaced points.
float linspace_point(float end, int n, int i);

}  // namespace qmlx
