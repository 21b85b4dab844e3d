// The four decoders behind decode_image (image_decode.h), one file each, each over a Debian
// library. Each one reads the header, calls check_dimensions before it decodes a pixel, turns
// every library error into ImageError(kCorrupt) without crashing or leaking, and returns RGB8
// with alpha composited over white plus the EXIF orientation it found (1 when none).
#pragma once

#include <cstdint>
#include <span>

#include "image/image_limits.h"
#include "image/rgb_image.h"

namespace qmlx::image {

struct DecodedFrame {
  RgbImage image;
  int exif_orientation = 1;  // the EXIF Orientation tag, 1..8; 1 = as stored
};

DecodedFrame decode_png(std::span<const uint8_t> bytes, const ImageLimits& limits);
DecodedFrame decode_jpeg(std::span<const uint8_t> bytes, const ImageLimits& limits);
DecodedFrame decode_webp(std::span<const uint8_t> bytes, const ImageLimits& limits);
// The first frame only; the rest of an animation is never read.
DecodedFrame decode_gif(std::span<const uint8_t> bytes, const ImageLimits& limits);

}  // namespace qmlx::image
