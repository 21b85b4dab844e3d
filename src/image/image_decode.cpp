#include "image/image_decode.h"

#include <utility>

#include "image/exif_orientation.h"
#include "image/format_decoders.h"
#include "image/image_error.h"
#include "image/image_format.h"

namespace qmlx::image {

RgbImage decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  check_byte_size(bytes.size(), limits);
  const std::optional<ImageFormat> format = sniff_image_format(bytes);
  if (!format) {
    throw ImageError(ImageErrorReason::kUnsupported,
                     "not a PNG, JPEG, WebP or GIF image (unknown magic bytes)");
  }
  DecodedFrame frame;
  switch (*format) {
    case ImageFormat::kPng:
      frame = decode_png(bytes, limits);
      break;
    case ImageFormat::kJpeg:
      frame = decode_jpeg(bytes, limits);
      break;
    case ImageFormat::kWebp:
      frame = decode_webp(bytes, limits);
      break;
    case ImageFormat::kGif:
      frame = decode_gif(bytes, limits);
      break;
  }
  return apply_exif_orientation(std::move(frame.image), frame.exif_orientation);
}

}  // namespace qmlx::image
