#include "kernels/vision_rope.h"

#include <cmath>

namespace qmlx {

RopeAngles vision_rope_angles(int64_t row, int64_t col, int head_dim, double theta) {
  const int quarter = head_dim / 4;
  RopeAngles a;
  a.cos.resize(2 * quarter);
  a.sin.resize(2 * quarter);
  for (int i = 0; i < quarter; ++i) {
    const double inv_freq = std::pow(theta, -4.0 * i / head_dim);
    for (int axis = 0; axis < 2; ++axis) {
      const double angle = double(axis == 0 ? row : col) * inv_freq;
      a.cos[axis * quarter + i] = float(std::cos(angle));
      a.sin[axis * quarter + i] = float(std::sin(angle));
    }
  }
  return a;
}

}  // namespace qmlx
