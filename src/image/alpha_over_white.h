// Alpha composited over an opaque white background: what a transparent screenshot or icon
// looks like on a page, and what Qwen's own tooling does (qwen-vl-utils pastes RGBA over
// white). Dropping alpha instead would show whatever colour the encoder left under transparent
// pixels, often black. Exact rounding, c' = round((c*a + 255*(255-a)) / 255), which equals
// PIL's Image.alpha_composite(white, im) on all 65,536 (c, a) pairs (checked by the tests).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qmlx::image {

inline uint8_t over_white(uint8_t c, uint8_t a) {
  return uint8_t((unsigned(c) * a + 255u * (255u - a) + 127u) / 255u);
}

// `pixels` RGBA pixels to RGB; `rgb` may alias `rgba` (it writes behind what it reads).
void rgba_over_white(const uint8_t* rgba, size_t pixels, uint8_t* rgb);

}  // namespace qmlx::image
