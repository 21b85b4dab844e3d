#include "server/common/image_reading.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace qmlx::server {

ImageReading image_reading(std::string vision_unavailable, image::VisionPreprocessConfig preprocess,
                           uint64_t max_image_pixels, int max_images_per_request) {
  ImageReading reading;
  reading.vision_unavailable = std::move(vision_unavailable);
  const int64_t bound = int64_t(std::min<uint64_t>(max_image_pixels, INT64_MAX));
  preprocess.max_pixels = std::max(preprocess.min_pixels, std::min(preprocess.max_pixels, bound));
  reading.preprocess = preprocess;
  reading.limits.max_pixels = max_image_pixels;
  reading.max_images = max_images_per_request;
  return reading;
}

}  // namespace qmlx::server
