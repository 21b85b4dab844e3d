#include "kernels/rope.h"

#include <cmath>

namespace qmlx {

RopeAngles rope_angles(int64_t pos, int rot_dim, double theta) {
  int half = rot_dim / 2;
  RopeAngles a;
  a.cos.resize(half);
  a.sin.resize(half);
  for (int i = 0; i < half; ++i) {
    double inv_freq = std::pow(theta, -2.0 * i / rot_dim);
    double angle = double(pos) * inv_freq;
    a.cos[i] = float(std::cos(angle));
    a.sin[i] = float(std::sin(angle));
  }
  return a;
}

void apply_rope(float* x, int heads, int head_dim, int rot_dim, const RopeAngles& a) {
  int half = rot_dim / 2;
  for (int h = 0; h < heads; ++h) {
    float* v = x + size_t(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      float lo = v[i], hi = v[i + half];
      v[i] = lo * a.cos[i] - hi * a.sin[i];
      v[i + half] = hi * a.cos[i] + lo * a.sin[i];
    }
  }
}

}  // namespace qmlx
