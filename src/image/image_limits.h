// ImageLimits: the bounds an image must meet before any of its pixels are decoded, so a small
// file that claims a huge canvas (a decompression bomb) costs a header read, not gigabytes.
// Every decoder calls check_dimensions right after it has read the header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qmlx::image {

// 20 MiB of encoded bytes: OpenAI's per-image limit; Anthropic's is lower (5 MB), so no real
// client is refused by it, while a request cannot make us hold an unbounded blob.
inline constexpr size_t kDefaultMaxImageBytes = size_t{20} << 20;
// 3840 x 2160 (a 4K UHD screen, 8.3 Mpx) decoded pixels. Well below the checkpoint's own
// 16.7 Mpx (Qwen3.5's longest_edge = 4096 x 4096): a 4K screenshot or a phone photo (12 Mpx
// photos are 4032 x 3024: refused unless the operator raises --max-image-pixels) passes, the
// decoded RGB stays under 25 MB per image, and what the encoder sees is bounded separately by
// smart_resize's max_pixels. The server passes its --max-image-pixels here.
inline constexpr uint64_t kDefaultMaxImagePixels = uint64_t{3840} * 2160;
// Qwen's processor refuses a longer-to-shorter side ratio over 200 (smart_resize raises).
inline constexpr double kDefaultMaxAspectRatio = 200.0;

struct ImageLimits {
  size_t max_bytes = kDefaultMaxImageBytes;
  uint64_t max_pixels = kDefaultMaxImagePixels;
  double max_aspect_ratio = kDefaultMaxAspectRatio;
};

// Throws ImageError(kTooManyBytes) naming the limit and the size.
void check_byte_size(size_t bytes, const ImageLimits& limits);
// Throws ImageError naming the limit and the values when width x height is over max_pixels, the
// aspect ratio is over max_aspect_ratio, or a side is zero (kCorrupt). `what` names the thing
// measured ("PNG image", "GIF frame") for the message.
void check_dimensions(uint64_t width, uint64_t height, const ImageLimits& limits, const char* what);

}  // namespace qmlx::image
