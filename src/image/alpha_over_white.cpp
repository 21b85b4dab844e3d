#include "image/alpha_over_white.h"

namespace qmlx::image {

void rgba_over_white(const uint8_t* rgba, size_t pixels, uint8_t* rgb) {
  for (size_t i = 0; i < pixels; ++i) {
    const uint8_t* in = rgba + i * 4;
    const uint8_t a = in[3];
    // Read all four before writing three: the in-place call writes at 3i <= 4i.
    const uint8_t r = over_white(in[0], a), g = over_white(in[1], a), b = over_white(in[2], a);
    rgb[i * 3 + 0] = r;
    rgb[i * 3 + 1] = g;
    rgb[i * 3 + 2] = b;
  }
}

}  // namespace qmlx::image
