// ImageFormat: which decoder an image goes to, told by its magic bytes alone (never by a media
// type or a file name a client sent: those lie, and a wrong decoder would only fail later).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace qmlx::image {

enum class ImageFormat { kPng, kJpeg, kWebp, kGif };

// The format whose signature `bytes` starts with, nullopt when none matches.
std::optional<ImageFormat> sniff_image_format(std::span<const uint8_t> bytes);

// "PNG", "JPEG", "WebP", "GIF": for messages.
const char* image_format_name(ImageFormat format);

}  // namespace qmlx::image
