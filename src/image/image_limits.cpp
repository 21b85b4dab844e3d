#include "image/image_limits.h"

#include <algorithm>
#include <string>

#include "image/image_error.h"

namespace qmlx::image {

void check_byte_size(size_t bytes, const ImageLimits& limits) {
  if (bytes > limits.max_bytes) {
    throw ImageError(ImageErrorReason::kTooManyBytes,
                     "image is " + std::to_string(bytes) + " bytes, over the limit of " +
                         std::to_string(limits.max_bytes) + " bytes");
  }
}

void check_dimensions(uint64_t width, uint64_t height, const ImageLimits& limits,
                      const char* what) {
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  if (width == 0 || height == 0) {
    throw ImageError(ImageErrorReason::kCorrupt, std::string(what) + " has an empty size " + size);
  }
  // Both sides fit 32 bits in every format we read, so the product cannot overflow 64 bits.
  if (width * height > limits.max_pixels) {
    throw ImageError(ImageErrorReason::kTooManyPixels,
                     std::string(what) + " is " + size + " = " + std::to_string(width * height) +
                         " pixels, over the limit of " + std::to_string(limits.max_pixels) +
                         " pixels (--max-image-pixels)");
  }
  const double ratio = double(std::max(width, height)) / double(std::min(width, height));
  if (ratio > limits.max_aspect_ratio) {
    throw ImageError(ImageErrorReason::kAspectRatio,
                     std::string(what) + " is " + size + ", an aspect ratio of " +
                         std::to_string(ratio) + ", over the limit of " +
                         std::to_string(limits.max_aspect_ratio));
  }
}

}  // namespace qmlx::image
