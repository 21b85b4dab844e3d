#include "image/vision_preprocess.h"

#include "image/image_error.h"
#include "image/pil_bicubic_resize.h"

namespace qmlx::image {

std::vector<float> flatten_patches(const RgbImage& resized, const VisionPreprocessConfig& config) {
  const int p = config.patch_size, m = config.merge_size, t = config.temporal_patch_size;
  // Steps 3 and 4 per possible byte value: the float32 arithmetic is the processor's, and a
  // table makes it the same whatever the compiler does with expressions.
  float table[3][256];
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      const float rescaled = float(double(v) * config.rescale_factor);
      table[c][v] = (rescaled - config.mean[size_t(c)]) / config.std[size_t(c)];
    }
  }
  const int grid_h = resized.height / p, grid_w = resized.width / p;
  const size_t patch_dim = size_t(3) * size_t(t) * size_t(p) * size_t(p);
  std::vector<float> out(size_t(grid_h) * size_t(grid_w) * patch_dim);
  float* dst = out.data();
  for (int bh = 0; bh < grid_h / m; ++bh) {
    for (int bw = 0; bw < grid_w / m; ++bw) {
      for (int mh = 0; mh < m; ++mh) {
        for (int mw = 0; mw < m; ++mw) {
          const int y0 = (bh * m + mh) * p, x0 = (bw * m + mw) * p;
          for (int c = 0; c < 3; ++c) {
            for (int copy = 0; copy < t; ++copy) {  // the still image, repeated in time
              for (int py = 0; py < p; ++py) {
                const uint8_t* src = resized.row(y0 + py) + size_t(x0) * 3 + size_t(c);
                for (int px = 0; px < p; ++px) *dst++ = table[c][src[size_t(px) * 3]];
              }
            }
          }
        }
      }
    }
  }
  return out;
}

VisionInput preprocess_for_vision(const RgbImage& image, const VisionPreprocessConfig& config) {
  const int factor = config.patch_size * config.merge_size;
  VisionInput input;
  input.resized =
      smart_resize(image.height, image.width, factor, config.min_pixels, config.max_pixels);
  if (input.resized.height <= 0 || input.resized.width <= 0) {
    throw ImageError(ImageErrorReason::kUnsupported, "image of " + std::to_string(image.width) +
                                                         "x" + std::to_string(image.height) +
                                                         " resizes to nothing");
  }
  input.identity = image_identity(image, input.resized);
  const RgbImage resized =
      resize_bicubic_like_pil(image, input.resized.width, input.resized.height);
  input.pixel_values = flatten_patches(resized, config);
  input.grid = {1, resized.height / config.patch_size, resized.width / config.patch_size};
  input.num_patches = input.grid.t * input.grid.h * input.grid.w;
  input.merge_size = config.merge_size;
  input.patch_dim = 3 * config.temporal_patch_size * config.patch_size * config.patch_size;
  return input;
}

}  // namespace qmlx::image
