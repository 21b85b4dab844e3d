// The Qwen3.5 vision encoder (transformers' Qwen3_5VisionModel): the pixel_values rows of one
// image (src/image/vision_preprocess.h) in, one language-model embedding per 2x2 patches out.
#pragma once

#include <span>
#include <vector>

#include "model/vision_weights.h"

namespace qmlx {

// An image's patch grid: t frames (1 for a still image) of h x w patches, h and w multiples of
// the merge size. Its rows come merge block by merge block (the 2x2 patches the merger joins
// are consecutive, blocks in raster order), frame after frame.
struct PatchGrid {
  int t = 1, h = 0, w = 0;
  int patches() const { return t * h * w; }
};

// pixel_values: [grid.patches()][config.patch_dim()]. Returns
// [grid.patches() / merge_unit][out_hidden_size]. Throws qmlx::Error when the grid does not
// fit the tower (sides not multiples of the merge size) or the rows do not fit the grid.
std::vector<float> encode_image(const VisionWeights& tower, std::span<const float> pixel_values,
                                const PatchGrid& grid);

}  // namespace qmlx
