// ImageIdentity: what an image is to the cache. Two images share K/V only if they decoded to
// the same pixels and were resized the same way (the resize decides what the encoder sees), so
// the identity is XXH3-128 over a format tag, the decoded size and RGB pixels, and the resized
// size. It is taken after decoding, so the same screenshot re-encoded (PNG vs WebP lossless,
// other compression) is the same image, and before resizing, so only the chosen size counts.
#pragma once

#include <cstdint>

#include "image/rgb_image.h"
#include "image/smart_resize.h"

namespace qmlx::image {

struct ImageIdentity {
  uint64_t low = 0;
  uint64_t high = 0;
  bool operator==(const ImageIdentity&) const = default;
};

ImageIdentity image_identity(const RgbImage& decoded, const ResizedSize& resized);

}  // namespace qmlx::image
