// The Qwen3.5 vision encoder (transformers' Qwen3_5VisionModel): the pixel_values rows of one
// image (src/image/vision_preprocess.h) in, one language-model embedding per 2x2 patches out.
#pragma once

#include <span>
#include <vector>

#include "kernels/rope.h"
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

// Pieces of the encoder that the device encoder (model/vulkan/vision_forward.cpp) shares, so
// both compute the same inputs the same way:
//  - encode_image's input check (the qmlx::Error it throws);
//  - the learned position grid resized to the image's grid (kernels/grid_interpolation.h), one
//    row per patch in the patches' order: [grid.patches()][hidden_size];
//  - each patch's 2D rotary angles, from its (row, col) in its frame (kernels/vision_rope.h).
void check_image_input(const VisionConfig& c, std::span<const float> pixel_values,
                       const PatchGrid& grid);
std::vector<float> patch_position_embeddings(const VisionWeights& tower, const PatchGrid& grid);
std::vector<RopeAngles> patch_rotations(const VisionConfig& c, const PatchGrid& grid);

}  // namespace qmlx
