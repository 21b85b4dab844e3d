#include "image/image_format.h"

#include <cstring>

namespace qmlx::image {
namespace {

bool starts_with(std::span<const uint8_t> bytes, size_t offset, const char* magic, size_t n) {
  return bytes.size() >= offset + n && std::memcmp(bytes.data() + offset, magic, n) == 0;
}

}  // namespace

std::optional<ImageFormat> sniff_image_format(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, 0, "\x89PNG\r\n\x1a\n", 8)) return ImageFormat::kPng;
  // SOI then the first marker's 0xFF: every JPEG (JFIF, Exif, raw) starts so.
  if (starts_with(bytes, 0, "\xFF\xD8\xFF", 3)) return ImageFormat::kJpeg;
  // A RIFF container whose form type is WEBP; bytes 4..7 are the RIFF size.
  if (starts_with(bytes, 0, "RIFF", 4) && starts_with(bytes, 8, "WEBP", 4)) {
    return ImageFormat::kWebp;
  }
  if (starts_with(bytes, 0, "GIF87a", 6) || starts_with(bytes, 0, "GIF89a", 6)) {
    return ImageFormat::kGif;
  }
  return std::nullopt;
}

const char* image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kWebp:
      return "WebP";
    case ImageFormat::kGif:
      return "GIF";
  }
  return "image";
}

}  // namespace qmlx::image
