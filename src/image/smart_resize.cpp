#include "image/smart_resize.h"

#include <algorithm>
#include <cmath>

namespace qmlx::image {
namespace {

// Python's round(): to nearest, ties to even. std::nearbyint does that in the default
// rounding mode, which nothing in qmlx changes.
int64_t round_half_even(double x) { return int64_t(std::nearbyint(x)); }

}  // namespace

ResizedSize smart_resize(int height, int width, int factor, int64_t min_pixels,
                         int64_t max_pixels) {
  const double h = height, w = width, f = factor;
  int64_t h_bar = round_half_even(h / f) * factor;
  int64_t w_bar = round_half_even(w / f) * factor;
  // height * width is exact in a double (both below 2^31, the product below 2^53), so this
  // division rounds once, as Python's int / int does.
  const double area = double(int64_t(height) * width);
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(area / double(max_pixels));
    h_bar = std::max<int64_t>(factor, int64_t(std::floor(h / beta / f)) * factor);
    w_bar = std::max<int64_t>(factor, int64_t(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(double(min_pixels) / area);
    h_bar = int64_t(std::ceil(h * beta / f)) * factor;
    w_bar = int64_t(std::ceil(w * beta / f)) * factor;
  }
  return {int(h_bar), int(w_bar)};
}

}  // namespace qmlx::image
