// smart_resize: the size Qwen's image processor (Qwen2-VL / Qwen3-VL / Qwen3.5, transformers'
// image_processing_qwen2_vl.py) resizes an image to before cutting it into patches: both sides
// multiples of `factor` (patch_size * merge_size = 32 for Qwen3.5), the area within
// [min_pixels, max_pixels], the aspect ratio kept as closely as that allows.
//
// Exactly the processor's arithmetic, in IEEE doubles like Python's:
//   h = round(height / factor) * factor, w likewise (round half to even, as Python's round);
//   if h * w > max_pixels: beta = sqrt(height * width / max_pixels),
//       h = max(factor, floor(height / beta / factor) * factor), w likewise;
//   else if h * w < min_pixels: beta = sqrt(min_pixels / (height * width)),
//       h = ceil(height * beta / factor) * factor, w likewise.
// The aspect-ratio refusal (over 200) is ImageLimits' job, before decoding. Sides below
// `factor` are not refused (older transformers did; the current one and qwen-vl-utils let
// the min_pixels branch grow them).
#pragma once

#include <cstdint>

namespace qmlx::image {

struct ResizedSize {
  int height = 0;
  int width = 0;
  bool operator==(const ResizedSize&) const = default;
};

ResizedSize smart_resize(int height, int width, int factor, int64_t min_pixels, int64_t max_pixels);

}  // namespace qmlx::image
