// decode_image: an image's encoded bytes (PNG, JPEG, WebP, or GIF's first frame, told apart by
// their magic bytes) to upright 8-bit RGB, within the caller's limits. Any refusal is an
// ImageError: a bound (naming the limit and the values), an unknown format, or data the
// decoder could not read (never a crash: the decoders have a fuzz target). See docs/images.md.
#pragma once

#include <cstdint>
#include <span>

#include "image/image_limits.h"
#include "image/rgb_image.h"

namespace qmlx::image {

RgbImage decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits = {});

}  // namespace qmlx::image
