#include "server/common/image_reading.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace qmlx::server {

ImageReading image_reading(std::string vision_unavailable, image::VisionPreprocessConfig preprocess,
                           uint64_t max_image_pixels, int max_images_per_request,
                           int64_t image_max_tokens) {
  ImageReading reading;
  reading.vision_unavailable = std::move(vision_unavailable);
  int64_t bound = int64_t(std::min<uint64_t>(max_image_pixels, INT64_MAX));
  // One token per merge block of patches: (patch x merge)^2 pixels each.
  const int64_t block = int64_t(preprocess.patch_size) * preprocess.merge_size;
  if (image_max_tokens > 0 && image_max_tokens <= INT64_MAX / (block * block)) {
    bound = std::min(bound, image_max_tokens * block * block);
  }
  preprocess.max_pixels = std::max(preprocess.min_pixels, std::min(preprocess.max_pixels, bound));
  reading.preprocess = preprocess;
  reading.limits.max_pixels = max_image_pixels;
  reading.max_images = max_images_per_request;
  return reading;
}

}  // namespace qmlx::server
