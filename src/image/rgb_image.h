// RgbImage: decoded pixels as 8-bit RGB, rows top to bottom, 3 bytes per pixel, no padding.
// Every decoder ends here (alpha composited over white, palettes and grey expanded, 16-bit
// reduced), so everything after decoding sees one layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qmlx::image {

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // width * height * 3

  RgbImage() = default;
  RgbImage(int w, int h) : width(w), height(h), pixels(size_t(w) * size_t(h) * 3) {}
  uint8_t* row(int y) { return pixels.data() + size_t(y) * size_t(width) * 3; }
  const uint8_t* row(int y) const { return pixels.data() + size_t(y) * size_t(width) * 3; }
};

}  // namespace qmlx::image
