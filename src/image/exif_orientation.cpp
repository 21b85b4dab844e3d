#include "image/exif_orientation.h"

#include <cstring>
#include <utility>

namespace qmlx::image {
namespace {

constexpr uint16_t kOrientationTag = 0x0112;
constexpr uint16_t kTiffShort = 3;

// A bounds-checked reader of the TIFF block's 16- and 32-bit fields in its byte order.
class TiffReader {
 public:
  TiffReader(std::span<const uint8_t> tiff, bool little_endian)
      : tiff_(tiff), little_(little_endian) {}
  bool u16(size_t at, uint16_t* out) const {
    if (at > tiff_.size() || tiff_.size() - at < 2) return false;
    const uint8_t* p = tiff_.data() + at;
    *out = little_ ? uint16_t(p[0] | p[1] << 8) : uint16_t(p[0] << 8 | p[1]);
    return true;
  }
  bool u32(size_t at, uint32_t* out) const {
    uint16_t a, b;
    if (!u16(at, &a) || !u16(at + 2, &b)) return false;
    *out = little_ ? (uint32_t(b) << 16 | a) : (uint32_t(a) << 16 | b);
    return true;
  }

 private:
  std::span<const uint8_t> tiff_;
  bool little_;
};

}  // namespace

int exif_orientation(std::span<const uint8_t> exif) {
  if (exif.size() >= 6 && std::memcmp(exif.data(), "Exif\0\0", 6) == 0) exif = exif.subspan(6);
  if (exif.size() < 8) return 1;
  bool little;
  if (std::memcmp(exif.data(), "II*\0", 4) == 0) {
    little = true;
  } else if (std::memcmp(exif.data(), "MM\0*", 4) == 0) {
    little = false;
  } else {
    return 1;
  }
  const TiffReader tiff(exif, little);
  uint32_t ifd0;
  uint16_t entries;
  if (!tiff.u32(4, &ifd0) || !tiff.u16(ifd0, &entries)) return 1;
  // IFD0 only: the tag lives there (IFD1 describes the thumbnail).
  for (uint32_t i = 0; i < entries; ++i) {
    const size_t entry = size_t(ifd0) + 2 + size_t(i) * 12;
    uint16_t tag, type, value;
    uint32_t count;
    if (!tiff.u16(entry, &tag) || !tiff.u16(entry + 2, &type) || !tiff.u32(entry + 4, &count) ||
        !tiff.u16(entry + 8, &value)) {
      return 1;
    }
    if (tag != kOrientationTag) continue;
    if (type != kTiffShort || count != 1 || value < 1 || value > 8) return 1;
    return value;
  }
  return 1;
}

RgbImage apply_exif_orientation(RgbImage image, int orientation) {
  if (orientation < 2 || orientation > 8) return image;
  const int w = image.width, h = image.height;
  const bool swaps = orientation >= 5;
  RgbImage out(swaps ? h : w, swaps ? w : h);
  for (int y = 0; y < out.height; ++y) {
    uint8_t* dst = out.row(y);
    for (int x = 0; x < out.width; ++x) {
      // (sx, sy): the stored pixel that shows at (x, y) once upright.
      int sx = x, sy = y;
      switch (orientation) {
        case 2:
          sx = w - 1 - x;
          break;  // mirrored left-right
        case 3:
          sx = w - 1 - x;
          sy = h - 1 - y;
          break;  // turned 180
        case 4:
          sy = h - 1 - y;
          break;  // mirrored top-bottom
        case 5:
          sx = y;
          sy = x;
          break;  // transposed
        case 6:
          sx = y;
          sy = h - 1 - x;
          break;  // shown turned 90 clockwise
        case 7:
          sx = w - 1 - y;
          sy = h - 1 - x;
          break;  // transversed
        case 8:
          sx = w - 1 - y;
          sy = x;
          break;  // shown turned 90 anticlockwise
      }
      std::memcpy(dst + size_t(x) * 3, image.row(sy) + size_t(sx) * 3, 3);
    }
  }
  return out;
}

}  // namespace qmlx::image
