// EXIF orientation: the Orientation tag (0x0112) read from an EXIF block, and the transform
// that shows the pixels upright.
//
// Applied, as browsers do (CSS image-orientation: from-image is their default) and as
// transformers' own load_image does (ImageOps.exif_transpose before convert("RGB")): a phone
// photo stored sideways with Orientation 6 is what the user saw upright, and the model should
// see it the same way. A processor handed a PIL image directly (Image.open alone) would not
// rotate it; that path is not how an API image arrives. Screenshots (PNG) carry no EXIF, so
// the common case is untouched.
#pragma once

#include <cstdint>
#include <span>

#include "image/rgb_image.h"

namespace qmlx::image {

// The orientation in a TIFF-structured EXIF block (optionally preceded by "Exif\0\0", as JPEG's
// APP1 and some WebP EXIF chunks have it); 1 when the block is malformed, has no tag, or the
// value is outside 1..8. Reads only inside `exif`.
int exif_orientation(std::span<const uint8_t> exif);

// `image` turned upright for `orientation` (2..8 flip and/or rotate; 5..8 swap width and
// height); 1 or anything else returns it unchanged.
RgbImage apply_exif_orientation(RgbImage image, int orientation);

}  // namespace qmlx::image
