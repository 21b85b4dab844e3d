// preprocess_for_vision: a decoded image to what Qwen's vision tower takes, as transformers'
// slow Qwen2-VL image processor (used by Qwen3-VL and Qwen3.5) makes it:
//   1. smart_resize to multiples of patch_size * merge_size within [min_pixels, max_pixels];
//   2. PIL bicubic resize to that size (uint8, resize_bicubic_like_pil);
//   3. rescale: x = float32(double(v) * rescale_factor), rescale_factor 1/255 as a double;
//   4. normalise in float32: (x - mean[c]) / std[c] (Qwen3.5: 0.5 and 0.5 on every channel);
//   5. the patch order: the single image repeated temporal_patch_size (2) times, viewed as
//      [t, c, gh/m, m, p, gw/m, m, p] and permuted to [gh/m, gw/m, m, m, c, t, p, p], so each
//      row of pixel_values is one p x p patch, channels outermost, then the temporal copy,
//      then the patch's rows and columns; and the rows go merge block by merge block (the m x m
//      patches the merger joins into one token are consecutive), blocks in raster order.
// Plus the image's identity for the cache (image_identity.h).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "image/image_identity.h"
#include "image/rgb_image.h"
#include "image/smart_resize.h"

namespace qmlx::image {

// The checkpoint's preprocessor_config.json (Qwen3.5: patch 16, temporal 2, merge 2, min
// 65,536 and max 16,777,216 pixels, mean and std 0.5); the server may lower max_pixels.
struct VisionPreprocessConfig {
  int patch_size = 16;
  int temporal_patch_size = 2;
  int merge_size = 2;
  int64_t min_pixels = 65536;
  int64_t max_pixels = 16777216;
  double rescale_factor = 1.0 / 255.0;
  std::array<float, 3> mean = {0.5f, 0.5f, 0.5f};
  std::array<float, 3> std = {0.5f, 0.5f, 0.5f};
};

// The patch grid: grid_t temporal x grid_h x grid_w patches (of patch_size pixels).
struct GridThw {
  int t = 0;
  int h = 0;
  int w = 0;
  bool operator==(const GridThw&) const = default;
};

struct VisionInput {
  std::vector<float> pixel_values;  // [num_patches][patch_dim], row-major
  int num_patches = 0;              // grid.t * grid.h * grid.w
  int patch_dim = 0;                // 3 * temporal_patch_size * patch_size^2 (1536 for Qwen3.5)
  GridThw grid;
  int merge_size = 2;   // the tower merges merge_size x merge_size patches into one token
  ResizedSize resized;  // the size smart_resize chose
  ImageIdentity identity;
};

VisionInput preprocess_for_vision(const RgbImage& image, const VisionPreprocessConfig& config);

// Steps 3 to 5 alone, on an image already resized to multiples of patch_size * merge_size.
std::vector<float> flatten_patches(const RgbImage& resized, const VisionPreprocessConfig& config);

}  // namespace qmlx::image
